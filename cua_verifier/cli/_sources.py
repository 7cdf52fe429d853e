"""Sources and the resumable scoring loop of `score` and `score-dataset`, which live in
`verifier.sources.items` (the Ray backend scores through the same loop); re-exported for the
commands here."""
from __future__ import annotations

from verifier.sources.items import (
    Item,
    Unscored,
    display_path,
    failing,
    iter_native_file,
    iter_path,
    score_items,
    score_one,
)

__all__ = ["Item", "Unscored", "display_path", "failing", "iter_native_file", "iter_path", "score_items",
           "score_one"]
