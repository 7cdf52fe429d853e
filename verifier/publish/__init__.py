"""Publishing a scored dataset: input columns kept beside the results, a dataset card, the hub.

`score-dataset` calls `add_publish_args` for its options and `publish_if_asked` once scoring is
done (local loop or Ray: both leave the same durable log). `undecoded_images` is how every
`datasets` source is read, so screenshots reach the verifier as their stored bytes (it lives in
`verifier.sources.images`, re-exported here).
"""
from __future__ import annotations

import argparse
import importlib.util
from typing import Any

from ..sources.images import image_columns, undecoded_images

__all__ = ["add_publish_args", "check_publish_args", "image_columns", "publish_if_asked", "undecoded_images"]


def _with_datasets(value: str) -> str:
    """Checked when the flag is parsed, so a missing extra fails before hours of scoring, not after."""
    missing = [m for m in ("datasets", "huggingface_hub", "yaml") if importlib.util.find_spec(m) is None]
    if missing:
        raise argparse.ArgumentTypeError(f"publishing needs {', '.join(missing)}: "
                                         "pip install 'cua-verifier[publish]'")
    return value


def add_publish_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--publish-dir", metavar="DIR", type=_with_datasets,
                   help="also write the scored dataset here: the source's columns (images as stored) "
                        "beside uv_* result columns, as data/<split>-*.parquet plus a README.md card")
    p.add_argument("--push-to-hub", metavar="REPO", type=_with_datasets,
                   help="publish the scored dataset as split --split of hub dataset REPO with "
                        "`Dataset.push_to_hub` (token from $HF_TOKEN or `huggingface-cli login`; not with --shard)")
    p.add_argument("--private", action="store_true", help="--push-to-hub: create the repo private")
    p.add_argument("--license", metavar="ID", help="the card's license (a hub license id, e.g. cc-by-4.0); "
                                                    "default: the source's own, else `unknown`")


def check_publish_args(args: argparse.Namespace) -> None:
    """Publishing options that cannot work together, refused before any scoring (a PublishError)."""
    if getattr(args, "push_to_hub", None):
        from .dataset import check_publish_args as check

        check(args)


def publish_if_asked(args: argparse.Namespace, settings: Any) -> dict[str, Any] | None:
    """After scoring: build, write and push the scored dataset when --publish-dir/--push-to-hub ask."""
    if not (getattr(args, "publish_dir", None) or getattr(args, "push_to_hub", None)):
        return None
    from pathlib import Path

    from ..records import ResultWriter
    from ..sources.rows import log_path_for
    from .dataset import publish

    records = ResultWriter(log_path_for(Path(args.out))).records()
    return publish(args, settings, records)
