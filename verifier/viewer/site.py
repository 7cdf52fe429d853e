"""`build_site`: a results JSONL turned into a static site (index + one page per rollout + images).

The site opens from disk (``DIR/index.html``): no server, no network, CSS/JS inline, screenshots
as files under ``DIR/img`` (see `images`). One rollout whose page cannot be rendered gets an error
page with its raw record, escaped; it never stops the rest of the site.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..records import ResultWriter, ScoreRecord, summarize
from ..rubrics import RubricSource
from . import svg
from .images import ImageStore
from .pages import index_row, pretty, rollout_view
from .render import write_page
from .trajectories import TrajectoryFinder

log = logging.getLogger(__name__)


@dataclass
class SiteStats:
    out: Path
    rollouts: int = 0
    pages: int = 0
    images: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    links: dict[str, str] = field(default_factory=dict)
    """Record id -> page path relative to the site root (for reports linking here)."""


def slug(rid: str) -> str:
    """A safe, unique, readable file name for a record id."""
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", rid).strip("-.")[-60:] or "rollout"
    return f"{tail}-{hashlib.sha1(rid.encode()).hexdigest()[:8]}"


def record_dict(rec: ScoreRecord) -> dict[str, Any]:
    """A record as plain JSON data; its result is kept as written (never re-validated)."""
    return rec.model_dump(exclude={"result"}) | {"result": rec.result_dict()}


def build_site(
    results: str | Path, out: str | Path, *, trajectories: Sequence[str | Path] = (), title: str | None = None
) -> SiteStats:
    t0 = time.perf_counter()
    results, out = Path(results), Path(out)
    if not results.is_file():
        raise FileNotFoundError(f"{results}: no such results file")
    objs = ResultWriter(results).records()  # the latest record per id
    records = [record_dict(r) for r in objs]
    out.mkdir(parents=True, exist_ok=True)
    stats = SiteStats(out=out, rollouts=len(records))
    store = ImageStore(out)
    finder = TrajectoryFinder([Path(p) for p in trajectories], bases=[results.parent])
    rows = []
    shared = comparable_notes(records)
    for rec in records:
        rel = f"r/{slug(str(rec.get('id')))}.html"
        stats.links[str(rec.get("id"))] = rel
        rows.append(index_row(rec, rel))
        _rollout_page(rec, out / rel, finder, store, stats, shared.get(str(rec.get("id")), []))
    scored = [r for r in rows if r["status"] == "scored"]
    summary = summarize(objs)
    n_success = sum(1 for r in scored if r["outcome"])
    charts = [
        svg.histogram(
            [r["process"] for r in scored if r["process"] is not None],
            "process score",
            bins=10,
            lo=0.0,
            hi=1.0,
            xlabel="process score",
        ),
        svg.bars(
            [
                ("success", n_success, "#2e9e5b"),
                ("failure", len(scored) - n_success, "#d64545"),
                ("unscored", len(rows) - len(scored), "#999"),
            ],
            "outcome",
            total=len(rows) or 1,
        ),
        svg.histogram([r["calls"] for r in scored], "judge calls per rollout", bins=8, xlabel="calls"),
        svg.histogram(
            [r["tokens"] for r in scored], "tokens per rollout", bins=8, xlabel="prompt + completion tokens"
        ),
    ]
    write_page(
        out / "index.html",
        "index.html.j2",
        title=title or f"Results: {results.name}",
        rows=rows,
        summary=summary,
        charts=charts,
        source=results.name,
        degraded_any=any(r["degraded"] for r in rows),
    )
    stats.pages += 1
    stats.images = store.writes
    stats.seconds = time.perf_counter() - t0
    return stats


def comparable_notes(records: Sequence[dict]) -> dict[str, list[str]]:
    """Per record id, what its page says about its rubric (issue 36 §5): where it came from, which
    other results share its task *and* rubric (comparable scores), and which scored the same task
    against another rubric (not comparable)."""
    groups: dict[str, dict[str, list[str]]] = {}
    for rec in records:
        res = rec.get("result") or {}
        src = res.get("rubric_source") or {}
        if res.get("task_id") and src.get("rubric_sha256"):
            groups.setdefault(res["task_id"], {}).setdefault(src["rubric_sha256"], []).append(str(rec.get("id")))
    out: dict[str, list[str]] = {}
    for rec in records:
        res = rec.get("result") or {}
        src = res.get("rubric_source") or {}
        if not src.get("rubric_sha256"):
            continue
        rid, by_rubric = str(rec.get("id")), groups.get(str(res.get("task_id")), {})
        same = [x for x in by_rubric.get(src["rubric_sha256"], []) if x != rid]
        other = [x for h, ids in by_rubric.items() if h != src["rubric_sha256"] for x in ids]
        notes = [f"rubric: {RubricSource.model_validate(src).label()}, sha256 {src['rubric_sha256'][:12]}"]
        if same:
            notes.append(f"same task and rubric as {len(same)} other result(s) ({', '.join(same[:5])}"
                         f"{' ...' if len(same) > 5 else ''}): their scores are comparable")
        if other:
            notes.append(f"the same task was scored against another rubric in {len(other)} result(s) "
                         f"({', '.join(other[:5])}): not comparable score for score")
        out[rid] = notes
    return out


def _rollout_page(
    rec: dict, path: Path, finder: TrajectoryFinder, store: ImageStore, stats: SiteStats,
    rubric_notes: Sequence[str] = (),
) -> None:
    notes: list[str] = list(rubric_notes)
    try:
        traj, why = finder.find(rec)
        if why:
            notes.append(why)
        images, problems = store.add_screenshots(traj) if traj is not None else ({}, [])
        notes += problems
        view = rollout_view(rec, traj, images, prefix="../", notes=notes)
        write_page(path, "rollout.html.j2", r=view, title=f"{view['id']}")
    except Exception as exc:  # one bad record must not lose the site
        log.exception("cannot render %s", rec.get("id"))
        stats.errors.append(f"{rec.get('id')}: {type(exc).__name__}: {exc}")
        write_page(
            path,
            "error.html.j2",
            title=str(rec.get("id")),
            error=f"{type(exc).__name__}: {exc}",
            raw=pretty(rec),
        )
    stats.pages += 1
