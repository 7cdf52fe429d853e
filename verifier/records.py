"""Durable per-rollout score records: the on-disk contract of `score`, `score-dataset` and `bench`.

Why a hand-rolled append-only JSONL log instead of writing parquet directly: scoring a dataset
against a remote judge takes hours and can be killed at any moment. Every finished record is
appended, flushed and fsync'ed before the next one is reported, so a restart can skip exactly the
ids already scored (`done_ids()`) and redo only the rest. Parquet is produced once at the end from
the log (`export_parquet`).

Failures are not zeros: a rollout the judge could not score is written as ``status="unscored"``
with a ``reason``; it is retried on resume and reported separately by `summarize`.
"""
from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

Status = Literal["scored", "unscored"]

#: Result fields copied into flat parquet columns (the full result is kept as JSON too).
FLAT_FIELDS = ("task_id", "process_score", "process_success", "outcome_success", "outcome_reasoning")


class ScoreRecord(BaseModel):
    """One rollout's outcome. ``result`` is a `VerificationResult` (or its JSON dict) when scored."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    id: str = Field(min_length=1)
    status: Status
    reason: str | None = None  # "<ErrorType>: message" when unscored
    source: str | None = None  # where the rollout came from (file, dataset row, ...)
    result: Any = None
    scored_at: float = Field(default_factory=time.time)
    duration_s: float | None = None

    @classmethod
    def unscored(cls, id: str, error: BaseException | str, **kw: Any) -> ScoreRecord:
        """Build an unscored record; an exception becomes ``"<TypeName>: <message>"``."""
        reason = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        return cls(id=id, status="unscored", reason=reason[:2000], **kw)

    def result_dict(self) -> dict[str, Any] | None:
        """The result as plain JSON data, whatever form it was given in."""
        r = self.result
        if r is None or isinstance(r, dict):
            return r
        if hasattr(r, "model_dump"):
            return r.model_dump(mode="json")
        raise TypeError(f"unsupported result type {type(r).__name__}")

    def to_json_line(self) -> str:
        data = self.model_dump(exclude={"result"})
        data["result"] = self.result_dict()
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def result_field(result: Any, name: str) -> Any:
    """Read a field from a result given as a dict or a model; ``diagnosis.first_failure_step`` too."""
    if result is None:
        return None
    cur = result
    for part in name.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else getattr(cur, part, None)
        if cur is None:
            return None
    return cur


class ResultWriter:
    """Append-only JSONL log of `ScoreRecord`s, durable per record, safe to reopen after a crash."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh = None
        self._repaired = False

    # ---- writing ------------------------------------------------------------------------------
    def _open(self):
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open across writes
        return self._fh

    def _repair_tail(self) -> None:
        """Drop a torn last line (a crash mid-write) so new records start on a clean line."""
        if self._repaired or not self.path.exists():
            self._repaired = True
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                try:  # complete record that only lacks its newline: keep it
                    json.loads(data[cut:])
                    fh.write(b"\n")
                except ValueError:
                    log.warning("%s: dropping a truncated last line (%d bytes) left by an interrupted run",
                                self.path, len(data) - cut)
                    fh.truncate(cut)
        self._repaired = True

    def write(self, record: ScoreRecord) -> None:
        """Append one record and make it durable (flush + fsync) before returning."""
        fh = self._open()
        fh.write(record.to_json_line())
        fh.flush()
        os.fsync(fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading ------------------------------------------------------------------------------
    def iter_lines(self) -> Iterable[dict[str, Any]]:
        """Every parsed line in file order; a torn last line is skipped with a warning."""
        if not self.path.exists():
            return
        lines = [(n, line) for n, line in enumerate(self.path.read_text(encoding="utf-8").split("\n"), 1)
                 if line.strip()]
        for pos, (n, line) in enumerate(lines):
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                if pos == len(lines) - 1:
                    log.warning("%s:%d: skipping a truncated last line (interrupted run)", self.path, n)
                    continue
                raise ValueError(f"{self.path}:{n}: corrupt record in the middle of the log: {exc}") from exc

    def records(self) -> list[ScoreRecord]:
        """The latest record per id (a later scored line supersedes an earlier unscored one)."""
        latest: dict[str, ScoreRecord] = {}
        for data in self.iter_lines():
            rec = ScoreRecord.model_validate(data)
            latest.pop(rec.id, None)  # keep insertion order = order of the latest write
            latest[rec.id] = rec
        return list(latest.values())

    def done_ids(self) -> set[str]:
        """Ids whose latest record is scored; unscored ones are retried on resume."""
        return {r.id for r in self.records() if r.status == "scored"}

    # ---- export -------------------------------------------------------------------------------
    def export_parquet(self, out: str | os.PathLike[str]) -> Path:
        """Write the latest record per id to parquet: flat score columns plus the full result JSON."""
        import pyarrow as pa  # lazy: only offline scoring needs it
        import pyarrow.parquet as pq

        rows = []
        for rec in self.records():
            res = rec.result_dict()
            row = {"id": rec.id, "status": rec.status, "reason": rec.reason, "source": rec.source,
                   "scored_at": rec.scored_at, "duration_s": rec.duration_s}
            for name in FLAT_FIELDS:
                row[name] = result_field(res, name)
            row["first_failure_step"] = result_field(res, "diagnosis.first_failure_step")
            row["result_json"] = json.dumps(res, ensure_ascii=False) if res is not None else None
            rows.append(row)
        schema = pa.schema([("id", pa.string()), ("status", pa.string()), ("reason", pa.string()),
                            ("source", pa.string()), ("scored_at", pa.float64()),
                            ("duration_s", pa.float64()), ("task_id", pa.string()),
                            ("process_score", pa.float64()), ("process_success", pa.bool_()),
                            ("outcome_success", pa.bool_()), ("outcome_reasoning", pa.string()),
                            ("first_failure_step", pa.int64()), ("result_json", pa.string())])
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), out)
        return out

    def export_jsonl(self, out: str | os.PathLike[str]) -> Path:
        """Write the latest record per id (no superseded lines) atomically to ``out``."""
        out = Path(out)
        tmp = out.with_name(out.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(rec.to_json_line() for rec in self.records())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
        return out


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(records: Iterable[ScoreRecord]) -> dict[str, Any]:
    """Means and success rates over scored records; unscored ones are counted, never averaged in."""
    recs = list(records)
    scored = [r for r in recs if r.status == "scored"]
    unscored = [r for r in recs if r.status != "scored"]

    def values(name: str) -> list[Any]:
        return [v for v in (result_field(r.result, name) for r in scored) if v is not None]

    reasons = Counter((r.reason or "unknown").split(":", 1)[0] for r in unscored)
    return {
        "total": len(recs),
        "scored": len(scored),
        "unscored": len(unscored),
        "unscored_reasons": dict(reasons.most_common()),
        "process_score_mean": _mean([float(v) for v in values("process_score")]),
        "process_success_rate": _mean([float(bool(v)) for v in values("process_success")]),
        "outcome_success_rate": _mean([float(bool(v)) for v in values("outcome_success")]),
        "duration_s_mean": _mean([r.duration_s for r in scored if r.duration_s is not None]),
    }


def format_summary(summary: dict[str, Any]) -> str:
    """A short human-readable block for the end of a CLI run."""
    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.1f}%"

    lines = [f"rollouts: {summary['total']}  scored: {summary['scored']}  unscored: {summary['unscored']}"]
    if summary["process_score_mean"] is not None:
        lines.append(f"process score mean: {summary['process_score_mean']:.3f}  "
                     f"process success: {pct(summary['process_success_rate'])}  "
                     f"outcome success: {pct(summary['outcome_success_rate'])}")
    elif summary["scored"]:  # verdict-only verifiers (baselines) have no process score
        lines.append(f"outcome success: {pct(summary['outcome_success_rate'])}  (no process score)")
    for reason, n in summary["unscored_reasons"].items():
        lines.append(f"  unscored ({reason}): {n}")
    return "\n".join(lines)
