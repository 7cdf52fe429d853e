"""Find the trajectory behind a results record, so its pages can show screenshots and steps.

A `score` record names its trajectory by path: ``id`` is the path (relative to where `score` ran)
plus ``#k`` inside a multi-record file, and ``source`` is the file it was read from (``file:line``
for JSONL). The viewer tries those paths against the current folder, the results file's folder and
each ``--trajectories`` root; failing that it matches the result's ``task_id`` against the
trajectories found under the roots (only when exactly one has that id: GRPO groups share task ids).
A trajectory that cannot be found or loaded is not an error: its page says so and shows the rest.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class TrajectoryFinder:
    def __init__(self, roots: Sequence[Path] = (), bases: Sequence[Path] = ()) -> None:
        self.roots = [Path(r) for r in roots]
        self.bases = [Path.cwd(), *[Path(b) for b in bases], *self.roots, *[r.parent for r in self.roots]]
        self._by_task: dict[str, list[Any]] | None = None

    def find(self, record: dict) -> tuple[Any, str | None]:
        """(trajectory or None, a note saying why there is none)."""
        rid = str(record.get("id") or "")
        k = 0
        m = re.search(r"#(\d+)$", rid)
        if m:
            k, rid = int(m.group(1)), rid[: m.start()]
        source = re.sub(r":\d+$", "", str(record.get("source") or ""))
        result: dict[str, Any] = record["result"] if isinstance(record.get("result"), dict) else {}
        line_source = bool(re.search(r":\d+$", str(record.get("source") or "")))
        tried = []
        for cand in dict.fromkeys(c for c in (rid, source, str(result.get("trajectory_id") or "")) if c):
            for base in self.bases:
                p = base / cand
                if p.exists():
                    try:
                        return self._load(p, 0 if line_source and cand == source else k), None
                    except Exception as exc:  # noqa: BLE001 - an unreadable trajectory still gets a page
                        tried.append(f"{p}: {type(exc).__name__}: {exc}")
        task_id = str(result.get("task_id") or "")
        if task_id and self.roots:
            matches = self._index().get(task_id, [])
            if len(matches) == 1:
                return matches[0], None
            if len(matches) > 1:
                return None, f"{len(matches)} trajectories have task id {task_id!r}; cannot tell which"
        if tried:
            return None, "trajectory could not be loaded: " + "; ".join(tried)[:500]
        return None, "trajectory not found (pass --trajectories PATH to show screenshots and steps)"

    @staticmethod
    def _load(path: Path, k: int) -> Any:
        from ..loaders import load_trajectories

        for i, traj in enumerate(load_trajectories(path)):
            if i == k:
                return traj
        raise IndexError(f"record #{k} not in {path}")

    def _index(self) -> dict[str, list[Any]]:
        """task id -> trajectories under the roots (each root: a trajectory or a folder of them)."""
        if self._by_task is None:
            from ..loaders import detect_format, load_trajectories

            self._by_task = {}
            for root in self.roots:
                try:
                    detect_format(root)
                    paths = [root]
                except Exception:  # noqa: BLE001 - a folder of trajectories
                    paths = sorted(root.iterdir()) if root.is_dir() else []
                for p in paths:
                    try:
                        for traj in load_trajectories(p):
                            self._by_task.setdefault(traj.task.id, []).append(traj)
                    except Exception as exc:  # noqa: BLE001 - skip what is not a trajectory
                        log.debug("skipping %s: %s", p, exc)
        return self._by_task
