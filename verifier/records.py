"""Durable per-rollout score records: the on-disk contract of `score`, `score-dataset` and `bench`.

Why a hand-rolled append-only JSONL log instead of writing parquet directly: scoring a dataset
against a remote judge takes hours and can be killed at any moment. Every finished record is
appended, flushed and fsync'ed before the next one is reported, so a restart can skip exactly the
ids already scored (`done_ids()`) and redo only the rest. Parquet is produced once at the end from
the log (`export_parquet`).

Failures are not zeros: a rollout the judge could not score is written as ``status="unscored"``
with a ``reason``; it is retried on resume and reported separately by `summarize`.

One writer per log: the writer takes an exclusive `flock` on the log when it opens it for a run
(`done_ids()` or the first `write()`), so a second run on the same `--out` fails fast with
`ResultsInUseError` instead of scoring (and writing) every record a second time. A corrupt line
(a disk fault, a hand edit) is skipped and reported (`bad_lines`); its record is scored again.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError

if TYPE_CHECKING:
    from typing import Self

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
    #: The run's other judgements, copied from `Trajectory.other_verdicts()` (`agent_claim`,
    #: `env_score`, `framework_judge`): kept beside the verifier's result for comparison, never part of it.
    other_verdicts: dict[str, Any] | None = None

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


def degraded_stages(result: Any, stages: Collection[str]) -> list[str]:
    """The stages of `result.degraded` that are listed in `stages` (sorted, unique).

    The one policy for results that fell back (`RewardSettings.none_if_degraded` names the
    stages): non-empty means the TRL reward is None and offline scoring records `unscored`
    (retried on a rerun), because the number was never checked (e.g. every rescoring run failed,
    so the process score is the agent's own action-only claim)."""
    found = {str(result_field(d, "stage")) for d in (result_field(result, "degraded") or [])}
    return sorted(found & set(stages))


def degraded_reason(result: Any, stages: list[str]) -> str:
    """The unscored reason for a result `degraded_stages` rejected (stage: why, per stage)."""
    why = {str(result_field(d, "stage")): str(result_field(d, "reason") or "")
           for d in (result_field(result, "degraded") or [])}
    return "DegradedResult: " + "; ".join(f"{s} fell back ({why.get(s, '')[:300]})" for s in stages)


class ResultsInUseError(ConfigError):
    """Another run holds the results log (two runs on one `--out` would score everything twice)."""


class ResultWriter:
    """Append-only JSONL log of `ScoreRecord`s, durable per record, safe to reopen after a crash."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fh: Any = None
        self._repaired = False
        self.bad_lines: list[int] = []  # line numbers of corrupt records skipped by the last read

    # ---- writing ------------------------------------------------------------------------------
    def _open(self) -> Any:
        """Open the log for appending under an exclusive lock (fails fast if another run holds it)."""
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held open across writes
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.close()
                raise ResultsInUseError(f"{self.path} is in use by another scoring run: wait for it to "
                                        "finish, or pass a different --out") from None
            self._fh = fh
            self._repair_tail()
        return self._fh

    def check_free(self) -> None:
        """Raise ResultsInUseError now if another run holds the log (a cheap early check, e.g.
        before starting a demo judge); the lock itself is taken by `done_ids()` / `write()`."""
        if self._fh is not None or not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ResultsInUseError(f"{self.path} is in use by another scoring run: wait for it to "
                                        "finish, or pass a different --out") from None
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading ------------------------------------------------------------------------------
    def iter_lines(self) -> Iterable[dict[str, Any]]:
        """Every parsed line in file order (see `_numbered_lines` for what is skipped)."""
        return (data for _, data in self._numbered_lines())

    def _numbered_lines(self) -> Iterable[tuple[int, dict[str, Any]]]:
        """(line number, object) per line. A torn last line (interrupted run) is skipped with a
        warning; a corrupt line elsewhere is skipped and its number added to `bad_lines`."""
        self.bad_lines = []
        if not self.path.exists():
            return
        text = self.path.read_text(encoding="utf-8", errors="replace")
        lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
        for pos, (n, line) in enumerate(lines):
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                if pos == len(lines) - 1:
                    log.warning("%s:%d: skipping a truncated last line (interrupted run)", self.path, n)
                else:
                    self.bad_lines.append(n)
                continue
            if isinstance(data, dict):
                yield n, data
            else:
                self.bad_lines.append(n)

    def records(self) -> list[ScoreRecord]:
        """The latest record per id (a later scored line supersedes an earlier unscored one).

        Lines that are not valid records are skipped and listed in `bad_lines` (and logged)."""
        latest: dict[str, ScoreRecord] = {}
        invalid: list[int] = []
        for n, data in self._numbered_lines():
            try:
                rec = ScoreRecord.model_validate(data)
            except ValidationError:
                invalid.append(n)
                continue
            latest.pop(rec.id, None)  # keep insertion order = order of the latest write
            latest[rec.id] = rec
        self.bad_lines = sorted(self.bad_lines + invalid)
        if self.bad_lines:
            log.info("%s", self.bad_lines_message())  # callers report it (score_items prints it)
        return list(latest.values())

    def bad_lines_message(self) -> str | None:
        """One line naming the corrupt lines skipped by the last read, or None."""
        if not self.bad_lines:
            return None
        shown = ", ".join(map(str, self.bad_lines[:20])) + (" ..." if len(self.bad_lines) > 20 else "")
        return (f"{self.path}: skipped {len(self.bad_lines)} corrupt line(s) (line {shown}); "
                "their rollouts are scored again")

    def done_ids(self) -> set[str]:
        """Ids whose latest record is scored; unscored ones are retried on resume.

        This is where a run starts resuming, so it takes the log's lock first (`ResultsInUseError`
        when another run holds it): the ids read stay true until this writer is closed."""
        self._open()
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
            others = rec.other_verdicts or {}
            row["env_score"] = (others.get("env_score") or {}).get("score")
            row["env_success"] = (others.get("env_score") or {}).get("success")
            row["agent_claim"] = (others.get("agent_claim") or {}).get("success")
            judged = others.get("framework_judge") or {}  # browser-use's own judge (other_verdicts)
            row["framework_verdict"], row["framework_failure_reason"] = judged.get("verdict"), judged.get("failure_reason")
            rows.append(row)
        schema = pa.schema([("id", pa.string()), ("status", pa.string()), ("reason", pa.string()),
                            ("source", pa.string()), ("scored_at", pa.float64()),
                            ("duration_s", pa.float64()), ("task_id", pa.string()),
                            ("process_score", pa.float64()), ("process_success", pa.bool_()),
                            ("outcome_success", pa.bool_()), ("outcome_reasoning", pa.string()),
                            ("first_failure_step", pa.int64()), ("result_json", pa.string()),
                            ("env_score", pa.float64()), ("env_success", pa.bool_()), ("agent_claim", pa.bool_()),
                            ("framework_verdict", pa.bool_()), ("framework_failure_reason", pa.string())])
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
