"""Where the trajectories to score come from, and the resumable loop that scores them.

One package below the command line, Ray (`verifier.distributed`) and publishing
(`verifier.publish`), so each of them reads a source the same way without importing another:
- `items`: an item is (id, description, thunk -> Trajectory); trajectories on disk as items, and
  the scoring loop (`score_items`, `score_one`) that turns any failure into an unscored record;
- `rows`: local data files and hub datasets as items (`load_rows`, `iter_rows`), which sources the
  loaders read instead (`is_run_source`), the row ids (`ID_COLUMNS`) and the durable log beside an
  output file (`log_path_for`);
- `images`: image columns read as their stored bytes (`undecoded_images`).
"""
from __future__ import annotations

from .images import image_columns, undecoded_images
from .items import Item, Unscored, display_path, failing, iter_native_file, iter_path, score_items, score_one
from .rows import (
           DATA_SUFFIXES,
           ID_COLUMNS,
           is_run_source,
           iter_folder,
           iter_rows,
           load_rows,
           log_path_for,
           row_to_trajectory,
)

__all__ = ["DATA_SUFFIXES", "ID_COLUMNS", "Item", "Unscored", "display_path", "failing", "image_columns",
           "is_run_source", "iter_folder", "iter_native_file", "iter_path", "iter_rows", "load_rows", "log_path_for",
           "row_to_trajectory", "score_items", "score_one", "undecoded_images"]
