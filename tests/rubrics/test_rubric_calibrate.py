"""`cua-verifier calibrate --rubrics`: cases without their own rubric are scored against the file,
and the report says which rubrics were used (issue 36 §3, §5)."""
from __future__ import annotations

import json
from pathlib import Path

import cua_verifier.cli.calibrate_cmd as cmd
from cua_verifier.cli import main
from verifier.calibrate import CalibrationReport, load_suite
from verifier.testing import ScriptedJudge

SUITE = Path(__file__).resolve().parents[2] / "examples" / "calibration"
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge-x", "--no-progress"]


def test_calibrate_uses_the_file_and_reports_it(monkeypatch, tmp_path, capsys):
    judges: list[ScriptedJudge] = []

    def fake(args, demo):
        args.judge_model = args.model
        judges.append(ScriptedJudge())
        return judges[-1]

    monkeypatch.setattr(cmd, "_judge", fake)
    monkeypatch.setattr("cua_verifier.cli.score_cmd.build_judge", lambda args: ScriptedJudge(model="writer"))
    cases = [c for c in load_suite(SUITE, only=["o3"]) if c.provided_rubric is None and not c.unavailable]
    assert cases, "the o3 cases write their own rubric"
    case_dirs = sorted({str(SUITE / c.name) for c in cases})
    rubrics = tmp_path / "rubrics.jsonl"
    assert main(["rubrics", *case_dirs, "--out", str(rubrics), "--no-progress", *JUDGE]) == 0
    out = tmp_path / "report.json"
    assert main(["calibrate", "--suite", str(SUITE), "--only", "o3", "--out", str(out), *JUDGE,
                 "--rubrics", str(rubrics), "--rubrics-only"]) in (0, 3)
    assert judges[-1].requests_for("rubric") == []
    rep = CalibrationReport.model_validate_json(out.read_text())
    assert rep.rubrics.startswith("rubrics: file ") and str(rubrics) in rep.rubrics
    assert rep.rubrics in capsys.readouterr().out
    assert all(v.status == "scored" for v in rep.cases), [v.error for v in rep.cases]
    assert json.loads(rubrics.read_text().splitlines()[0])["provenance"]["model"] == "writer"
