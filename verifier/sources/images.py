"""Image columns read as their stored bytes: `datasets.Image(decode=False)`, at any nesting depth.

Why: a `datasets.Image` column decodes every screenshot to a PIL image when a row is read. The
verifier then had to re-encode it to send it to the judge (and to hash it for the stage cache),
paying a decode and an encode per screenshot and changing the bytes, so the content hash no longer
matched the original file. Cast to `decode=False`, a row holds `{"bytes": ..., "path": ...}`, which
the loaders take as they are. The cast only changes how rows are *read*: the Arrow storage of an
image column is the same struct either way, so no pixel is touched.
"""
from __future__ import annotations

import dataclasses
from typing import Any


def _undecoded(feature: Any) -> Any:
    """`feature` with every `Image` inside it set to `decode=False` (same object if none is)."""
    import datasets

    if isinstance(feature, datasets.Image):
        return dataclasses.replace(feature, decode=False) if feature.decode else feature
    if isinstance(feature, dict):  # Features, or a struct of named sub-features
        items = {k: _undecoded(v) for k, v in feature.items()}
        changed = any(items[k] is not v for k, v in feature.items())
        return type(feature)(items) if changed else feature
    if isinstance(feature, datasets.LargeList):
        inner = _undecoded(feature.feature)
        return feature if inner is feature.feature else datasets.LargeList(inner)
    if isinstance(feature, datasets.List):
        inner = _undecoded(feature.feature)
        return feature if inner is feature.feature else datasets.List(inner, length=feature.length)
    return feature


def image_columns(ds: Any) -> list[str]:
    """Columns of `ds` that hold a (possibly nested) decoding `datasets.Image` feature."""
    features = getattr(ds, "features", None) or {}
    return [name for name, f in features.items() if _undecoded(f) is not f]


def undecoded_images(ds: Any) -> Any:
    """`ds` (a Dataset or IterableDataset) with its image columns cast to `decode=False`.

    A top-level `Image` column takes `datasets`' metadata-only path of `cast_column`; a nested one
    (a list of screenshots) goes through an Arrow-level cast, which copies the column without
    decoding it. An IterableDataset is cast lazily, row by row.
    """
    for name in image_columns(ds):
        ds = ds.cast_column(name, _undecoded(ds.features[name]))
    return ds
