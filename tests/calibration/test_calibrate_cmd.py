"""`cua-verifier calibrate` in process, with the scripted judge standing in for the HTTP one."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import cua_verifier.cli.calibrate_cmd as cmd
from cua_verifier.cli import main
from verifier.calibrate import CalibrationReport
from verifier.testing import ScriptedJudge

SUITE = Path(__file__).resolve().parents[2] / "examples" / "calibration"


@pytest.fixture
def scripted(monkeypatch):
    judges = []

    def fake(args, demo):
        assert demo is None  # a judge URL was given: no demo server
        args.judge_model = args.model
        judges.append(ScriptedJudge())
        return judges[-1]

    monkeypatch.setattr(cmd, "_judge", fake)
    return judges


def test_calibrate_prints_rules_and_rates_and_writes_json(scripted, tmp_path, capsys):
    out = tmp_path / "report.json"
    rc = main(["calibrate", "--suite", str(SUITE), "--only", "o3", "R3", "--out", str(out),
               "--judge-url", "http://127.0.0.1:9/v1", "--model", "judge-x", "--no-progress", "--concurrency", "2"])
    printed = capsys.readouterr().out
    assert rc == 0
    rep = CalibrationReport.model_validate_json(out.read_text())
    assert [r.rule for r in rep.rules] == ["O3", "R3"] and rep.selected_rules == ["O3", "R3"]
    assert [v.case for v in rep.cases] == ["o3-constraint-never-shown", "o3-searched-not-satisfied",
                                           "r3-found-not-added"]
    assert rep.judge_model == "judge-x" and not rep.demo_judge
    assert (rep.outcome.fp, rep.outcome.tn, rep.outcome.fpr) == (3, 0, 1.0)  # every expected failure passed
    assert rep.outcome.fnr is None and "false-negative rate n/a" in printed
    assert printed.splitlines()[1].startswith("O3") and "F -> T" in printed
    assert scripted[0].closed  # the judge client is closed after the run
    assert json.loads(out.read_text())["outcome"]["fp"] == 3


def test_unavailable_real_trajectory_exits_3(scripted, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUA_SHARED_DIR", str(tmp_path / "no-shared"))
    rc = main(["calibrate", "--suite", str(SUITE), "--only", "X2", "--judge-url", "http://127.0.0.1:9/v1",
               "--model", "m", "--no-progress"])
    assert rc == 3
    assert "unavailable: x2-om2w-discogs-submission-overview: trajectory not found" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--only", "Q7"], ["--suite", "/nonexistent-suite"], ["--concurrency", "0"]])
def test_usage_errors_exit_2(scripted, argv, capsys):
    rc = main(["calibrate", "--judge-url", "http://127.0.0.1:9/v1", "--model", "m", *argv])
    assert rc == 2 and capsys.readouterr().err.startswith("error:")
    assert scripted == []  # nothing was started


def test_no_judge_configured_starts_and_stops_the_demo_judge(monkeypatch, tmp_path, capsys):
    import serving.demo
    import verifier.judge

    events, configs = [], []

    class FakeDemo:
        base_url, model, api_key_env, log_path = "http://127.0.0.1:1/v1", "tiny-demo", "CUA_DEMO_X", "log"

        def stop(self):
            events.append("stopped")

    monkeypatch.setattr(serving.demo, "start_demo_judge", lambda: events.append("started") or FakeDemo())
    monkeypatch.setattr(verifier.judge, "make_judge", lambda c: configs.append(c) or ScriptedJudge())
    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    monkeypatch.delenv("CUA_VERIFIER_CONFIG", raising=False)
    out = tmp_path / "r.json"
    rc = main(["calibrate", "--suite", str(SUITE), "--only", "U3", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0 and events == ["started", "stopped"]
    assert configs[0].base_urls == [FakeDemo.base_url] and configs[0].api_key_env == "CUA_DEMO_X"
    assert configs[0].image_max_side == 224 and configs[0].sampling.max_tokens == 8192
    assert captured.err.count(serving.demo.DEMO_WARNING) == 2  # before and after the run
    rep = CalibrationReport.model_validate_json(out.read_text())
    assert rep.demo_judge and rep.judge_model == "tiny-demo" and "meaningless" in captured.out


def test_no_demo_flag_refuses(monkeypatch, capsys):
    monkeypatch.delenv("CUA_JUDGE_URL", raising=False)
    monkeypatch.delenv("CUA_VERIFIER_CONFIG", raising=False)
    rc = main(["calibrate", "--suite", str(SUITE), "--only", "U3", "--no-demo"])
    assert rc == 2 and "error:" in capsys.readouterr().err


def test_calibrate_html_report_in_the_viewer_style(scripted, tmp_path, capsys):
    html_out = tmp_path / "calibration.html"
    rc = main(["calibrate", "--suite", str(SUITE), "--only", "O3", "--html", str(html_out),
               "--judge-url", "http://127.0.0.1:9/v1", "--model", "judge-x", "--no-progress"])
    assert rc == 0 and f"HTML report written to {html_out}" in capsys.readouterr().out
    page = html_out.read_text()
    assert "<style>" in page and "http://" not in page.split("<body", 1)[1].replace("http://127.0.0.1:9", "")
    assert "o3-searched-not-satisfied" in page and "O3" in page and "fpr" in page
