"""ResultWriter durability and resume semantics, and summarize()."""
from __future__ import annotations

import json
import logging

import pytest

from verifier.records import ResultWriter, ScoreRecord, format_summary, summarize


def _scored(i: str, p: float = 0.5, outcome: bool = True) -> ScoreRecord:
    return ScoreRecord(id=i, status="scored", source="test",
                       result={"task_id": "t", "process_score": p, "process_success": p >= 0.8,
                               "outcome_success": outcome, "outcome_reasoning": "because",
                               "diagnosis": {"first_failure_step": 3}}, duration_s=1.0)


def test_write_and_done_ids_only_scored(tmp_path):
    w = ResultWriter(tmp_path / "r.jsonl")
    w.write(_scored("a"))
    w.write(ScoreRecord.unscored("b", RuntimeError("judge down")))
    w.close()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["reason"] == "RuntimeError: judge down"
    assert ResultWriter(tmp_path / "r.jsonl").done_ids() == {"a"}


def test_later_scored_record_supersedes_unscored(tmp_path):
    with ResultWriter(tmp_path / "r.jsonl") as w:
        w.write(ScoreRecord.unscored("b", "JudgeUnavailableError: timeout"))
        w.write(_scored("b", 0.9))
    recs = ResultWriter(tmp_path / "r.jsonl").records()
    assert [(r.id, r.status) for r in recs] == [("b", "scored")]


def test_truncated_last_line_is_skipped_then_repaired(tmp_path, caplog):
    path = tmp_path / "r.jsonl"
    with ResultWriter(path) as w:
        w.write(_scored("a"))
    full = _scored("b").to_json_line()
    with open(path, "a") as fh:
        fh.write(full[: len(full) // 2])  # crash mid-write
    with caplog.at_level(logging.WARNING):
        assert ResultWriter(path).done_ids() == {"a"}
    assert "truncated" in caplog.text
    with ResultWriter(path) as w:  # reopening for append drops the torn tail first
        w.write(_scored("c"))
    assert ResultWriter(path).done_ids() == {"a", "c"}
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_scored("a").to_json_line().rstrip("\n"))
    with ResultWriter(path) as w:
        w.write(_scored("b"))
    assert ResultWriter(path).done_ids() == {"a", "b"}


def test_corrupt_middle_lines_are_skipped_and_reported(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_scored("a").to_json_line() + "{garbage\n" + '{"id": "x"}\n' + "[1]\n"
                    + _scored("b").to_json_line())
    w = ResultWriter(path)
    assert [r.id for r in w.records()] == ["a", "b"]
    assert w.bad_lines == [2, 3, 4]
    assert "skipped 3 corrupt line(s) (line 2, 3, 4)" in w.bad_lines_message()


def test_export_parquet_flat_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    with ResultWriter(tmp_path / "r.jsonl") as w:
        w.write(_scored("a", 0.25, outcome=False))
        w.write(ScoreRecord.unscored("b", ValueError("bad")))
        out = w.export_parquet(tmp_path / "r.parquet")
    table = pq.read_table(out).to_pylist()
    assert [r["id"] for r in table] == ["a", "b"]
    assert table[0]["process_score"] == 0.25 and table[0]["outcome_success"] is False
    assert table[0]["first_failure_step"] == 3
    assert json.loads(table[0]["result_json"])["outcome_reasoning"] == "because"
    assert table[1]["status"] == "unscored" and table[1]["result_json"] is None


def test_export_jsonl_compacts(tmp_path):
    with ResultWriter(tmp_path / "log.jsonl") as w:
        w.write(ScoreRecord.unscored("a", "x"))
        w.write(_scored("a"))
        w.export_jsonl(tmp_path / "out.jsonl")
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 1


def test_summarize_excludes_unscored_from_means():
    recs = [_scored("a", 1.0, True), _scored("b", 0.5, False),
            ScoreRecord.unscored("c", "JudgeUnavailableError: refused"),
            ScoreRecord.unscored("d", "JudgeUnavailableError: timeout"),
            ScoreRecord.unscored("e", "TrajectoryError: no steps")]
    s = summarize(recs)
    assert s["total"] == 5 and s["scored"] == 2 and s["unscored"] == 3
    assert s["process_score_mean"] == pytest.approx(0.75)
    assert s["process_success_rate"] == pytest.approx(0.5)
    assert s["outcome_success_rate"] == pytest.approx(0.5)
    assert s["unscored_reasons"] == {"JudgeUnavailableError": 2, "TrajectoryError": 1}
    assert "unscored (JudgeUnavailableError): 2" in format_summary(s)
