"""`cua-verifier experiment run` and `experiment report` end to end, in process, on a few
calibration cases, with a scripted judge whose outcome answer depends on the outcome prompt
(issue 37 tests): the better arm is accepted, a wording change that does nothing is inconclusive,
an arm that raises false positives is rejected, unchanged stages are shared and repeats are not."""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from experiment_helpers import write_overlay

from cua_verifier.cli import experiment_cmd, main
from verifier.calibrate import load_suite
from verifier.testing import ScriptedJudge

SUITE = Path(__file__).resolve().parents[2] / "examples" / "calibration"
RULES = ["O2", "O16", "R8", "U7"]
TRUTHFUL, NOOP = "RULE-TRUTH: judge every run by what it delivered.", "RULE-NOOP: a sentence that changes nothing."


def truth_by_task() -> dict[str, bool]:
    cases = load_suite(SUITE, only=RULES)
    out = {c.load().task.instruction: c.expected.outcome for c in cases}
    assert len(out) == len(cases)  # each case is told apart by its task
    return out


def prompt_judge() -> ScriptedJudge:
    """Says success to everything, unless the outcome prompt carries RULE-TRUTH: then the truth."""
    truth = truth_by_task()

    def outcome(messages, output_model):
        text = ScriptedJudge.text(type("R", (), {"messages": messages})())
        verdict = next(v for task, v in truth.items() if task in text) if "RULE-TRUTH" in text else True
        return {"primary_intent": "x", "reasoning": "scripted", "success": verdict}

    return ScriptedJudge({"outcome": outcome})


@pytest.fixture
def judges(monkeypatch):
    made: list[ScriptedJudge] = []

    def factory(args, demo):
        assert demo is None

        def judge_for(arm):
            made.append(prompt_judge())
            return made[-1]
        return judge_for

    monkeypatch.setattr(experiment_cmd, "_judge_factory", factory)
    return made


def arms_calls(out: Path, arm: str) -> int:
    """The judge calls an arm's results say it made, over all its repeats (shared ones included)."""
    return sum(json.loads(line)["result"]["usage"]["calls"] for f in (out / "arms" / arm).glob("r*.jsonl")
               for line in f.read_text().splitlines())


def write_spec(tmp_path: Path, baseline: dict, arms: list[dict], repeats: int = 2) -> Path:
    write_overlay(tmp_path / "truthful", "outcome.system.j2", TRUTHFUL)
    write_overlay(tmp_path / "noop", "outcome.system.j2", NOOP)
    spec = {"name": "t", "repeats": repeats, "labelled": {"calibration": {"suite": str(SUITE), "only": RULES}},
            "judge": {"base_urls": ["http://127.0.0.1:9/v1"], "model": "scripted"},
            "baseline": baseline, "arms": arms}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def test_the_loop_accepts_the_better_arm_and_calls_the_noop_arm_inconclusive(tmp_path, judges, capsys):
    spec = write_spec(tmp_path, {"name": "base"}, [{"name": "truthful", "prompts": "truthful"},
                                                   {"name": "noop", "prompts": "noop"}])
    out = tmp_path / "out"
    rc = main(["experiment", "run", str(spec), "--out", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0 and len(judges) == 1  # one judge config: one client for the three arms
    judge, n, R = judges[0], 7, 2
    stages = Counter(judge.stages())
    assert stages["rubric"] == n * R  # shared by the three arms, never by the two repeats
    assert stages["outcome"] == 3 * stages["rubric"]  # the changed stage: once per arm
    report = json.loads((out / "report.json").read_text())
    assert report["calls_saved"] > 0 and f"saved by sharing unchanged stages between arms: {report['calls_saved']}" in printed
    assert report["calls_saved"] == sum(a["cost"]["calls_shared"] for a in report["arms"])
    sent = sum(a["cost"]["calls_sent"] for a in report["arms"])
    assert sent == len(judge.requests)
    # every arm alone would have sent what the baseline sent: the rest was shared
    assert sent + report["calls_saved"] == 3 * arms_calls(out, "base")
    arms = {a["name"]: a for a in report["arms"]}
    assert arms["truthful"]["decision"]["verdict"] == "accept"
    assert arms["noop"]["decision"]["verdict"] == "inconclusive"
    assert arms["truthful"]["targets"]["outcome"]["metrics"]["fpr"]["value"] == 0.0
    assert arms["base"]["targets"]["outcome"]["metrics"]["fpr"]["value"] == 1.0
    flipped = {f["id"]: f for f in arms["truthful"]["flips"]["outcome"]}
    expected_fails = {c.name for c in load_suite(SUITE, only=RULES) if not c.expected.outcome}
    assert set(flipped) == expected_fails and all(f["effect"] == "fixed" for f in flipped.values())
    assert not arms["noop"]["flips"]["outcome"]
    html = (out / "report.html").read_text()
    for rid in flipped:  # each flip links the item's page in the baseline and in the arm
        for arm in ("base", "truthful"):
            page = report["pages"][arm][rid][0]
            assert (out / page).is_file() and page in html
    assert "ACCEPT" in printed and "INCONCLUSIVE" in printed
    # the arms' costs: the same pipeline, so the same calls per verification on their own
    assert arms["truthful"]["cost"]["calls"] == arms["base"]["cost"]["calls"] > 0
    rc = main(["experiment", "report", str(out), "--no-pages"])  # recomputed from DIR alone: the same
    again = json.loads((out / "report.json").read_text())
    assert rc == 0 and again["arms"][1]["decision"] == report["arms"][1]["decision"]


def test_an_arm_that_raises_false_positives_is_rejected(tmp_path, judges):
    spec = write_spec(tmp_path, {"name": "truthful", "prompts": "truthful"}, [{"name": "packaged"}])
    out = tmp_path / "out"
    assert main(["experiment", "run", str(spec), "--out", str(out), "--no-report"]) == 0
    assert main(["experiment", "report", str(out), "--no-pages"]) == 0
    arm = json.loads((out / "report.json").read_text())["arms"][1]
    assert arm["decision"]["verdict"] == "reject" and "FPR rose" in arm["decision"]["reason"]
    assert {f["effect"] for f in arm["flips"]["outcome"]} == {"broke"}


@pytest.mark.parametrize("arms,needle", [
    ([{"name": "x", "prompts": "missing-folder"}], "not a folder"),
    ([{"name": "x", "config": {"votes": 1}}], "identical"),
    ([{"name": "x", "config": {"no_such_setting": 1}}], "invalid config"),
])
def test_bad_input_is_refused_before_any_judge_call(tmp_path, judges, capsys, arms, needle):
    spec = write_spec(tmp_path, {"name": "base"}, arms)
    assert main(["experiment", "run", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert needle in capsys.readouterr().err and not judges


def test_a_base_install_without_the_bench_extra_is_told_which_extra_to_install(tmp_path, judges, capsys,
                                                                               monkeypatch):
    """The statistics need numpy (the bench extra): without it both commands say so in one line
    (exit 2) before any work, instead of an ImportError traceback."""
    spec = write_spec(tmp_path, {"name": "base"}, [{"name": "truthful", "prompts": "truthful"}])
    monkeypatch.setitem(sys.modules, "numpy", None)  # as if not installed
    for argv in (["experiment", "run", str(spec), "--out", str(tmp_path / "out")],
                 ["experiment", "report", str(tmp_path / "out")]):
        assert main(argv) == 2
        assert "cua-verifier[bench]" in capsys.readouterr().err
    assert not judges and not (tmp_path / "out").exists()


def test_fixed_rubrics_score_every_arm_against_the_same_rubric(tmp_path, judges, capsys):
    rubric = {"criteria": [{"id": "c1", "name": "Answer", "description": "Full: the answer is given.", "max_points": 5}]}
    lines = [json.dumps({"task_id": c.load().task.id, "rubric": rubric}) for c in load_suite(SUITE, only=RULES)]
    rubrics = tmp_path / "rubrics.jsonl"
    rubrics.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    spec = write_spec(tmp_path, {"name": "base"}, [{"name": "truthful", "prompts": "truthful"}], repeats=1)
    assert main(["experiment", "run", str(spec), "--out", str(tmp_path / "o1"), "--fixed-rubrics", str(rubrics)]) == 2
    assert "no rubric for 1 task" in capsys.readouterr().err and not judges  # a task without a rubric: refused before any call
    rubrics.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["experiment", "run", str(spec), "--out", str(tmp_path / "o2"), "--fixed-rubrics", str(rubrics),
                 "--no-report"]) == 0
    assert not judges[0].requests_for("rubric")
    for arm in ("base", "truthful"):
        for line in (tmp_path / "o2" / "arms" / arm / "r0.jsonl").read_text().splitlines():
            crit = json.loads(line)["result"]["criteria"]
            assert [c["name"] for c in crit] == ["Answer"]


def test_completed_experiments_join_the_ledger_and_the_accepted_path_is_plotted(tmp_path, judges, capsys):
    runs = tmp_path / "runs"
    first = write_spec(tmp_path, {"name": "packaged"}, [{"name": "truthful", "prompts": "truthful"}])
    assert main(["experiment", "run", str(first), "--out", str(runs / "e1"), "--no-report"]) == 0
    second = write_spec(tmp_path, {"name": "truthful", "prompts": "truthful"}, [{"name": "packaged"}])
    assert main(["experiment", "run", str(second), "--out", str(runs / "e2"), "--no-report"]) == 0
    assert main(["experiment", "run", str(second), "--out", str(runs / "e2"), "--no-report"]) == 0  # nothing new
    ledger = runs / "ledger.jsonl"
    lines = [json.loads(x) for x in ledger.read_text().splitlines()]
    assert [ln["folder"] for ln in lines] == ["e1", "e2"]
    assert [a["decision"] for a in lines[0]["arms"]] == [None, "accept"]
    assert [a["decision"] for a in lines[1]["arms"]] == [None, "reject"]
    capsys.readouterr()
    assert main(["experiment", "report", "--ledger", str(ledger)]) == 0
    printed = capsys.readouterr().out
    assert "kappa 0.000  FPR 1.000" in printed and "kappa 1.000  FPR 0.000" in printed
    html = ledger.with_suffix(".html").read_text()
    assert "<polyline" in html and "Accepted iterations" in html


def test_an_unreachable_judge_is_exit_2_before_anything_is_scored(tmp_path, capsys):
    spec = write_spec(tmp_path, {"name": "base"}, [{"name": "truthful", "prompts": "truthful"}])
    out = tmp_path / "out"
    assert main(["experiment", "run", str(spec), "--out", str(out)]) == 2  # the spec's judge: port 9, closed
    assert "unreachable" in capsys.readouterr().err and not (out / "arms").exists()
