"""The agent formats through the CLI: `inspect` counts, --task-file / --instruction, `score` end to
end with the scripted judge, the viewer and `bench --env-agreement` on what `score` wrote."""
from __future__ import annotations

import json
import shutil

import pytest

from cua_verifier.cli import main, score_cmd
from verifier.testing import ScriptedJudge

BU = "trajectories/browser-use-jakkaj-bfcl"
BG = "trajectories/browsergym-workarena-all-menu-4"
OSW = "trajectories/osworld-sec-eval-execute-binary"
OSW_RUN = OSW + "/sec_eval_results/execute_binary/20250226@161539-failed"
BU_TASK = "Find official leaderboards ranking AI agents by tool/function calling; report the top 10 with scores."
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]


def inspect_json(capsys, *argv: str) -> tuple[int, list[dict], str]:
    rc = main(["inspect", *argv, "--json"])
    out = capsys.readouterr()
    return rc, [json.loads(x) for x in out.out.splitlines() if x.strip()], out.err


def test_inspect_counts_of_the_real_samples(shared_data, capsys):
    """The counts ../shared/data/README.md gives for each sample."""
    rc, [bu], _ = inspect_json(capsys, str(shared_data / BU), "--instruction", BU_TASK)
    assert rc == 0 and bu["source_format"] == "browser-use"
    assert len(bu["screenshots"]) == 6 and bu["distinct_screenshots"] == 4  # items 2/3, 4/5 identical
    assert {(s["width"], s["height"]) for s in bu["screenshots"]} == {(2400, 1778)}
    assert sum(1 for s in bu["steps"] if s["error"]) == 1 and bu["steps"][-1]["action"] == "done"
    assert bu["agent_claim"]["success"] is True and bu["env_score"] is None

    rc, [bg], _ = inspect_json(capsys, str(shared_data / BG))  # the folder holding the experiment folder
    assert rc == 0 and bg["source_format"] == "browsergym"
    assert len(bg["steps"]) == 3 and len(bg["screenshots"]) == 4  # summary_info n_steps 3; steps 0..3
    assert {(s["width"], s["height"]) for s in bg["screenshots"]} == {(2564, 1426)}
    assert bg["env_score"] == {"score": 1.0, "success": True, "source": "BrowserGym summary_info.cum_reward"}

    rc, [osw], _ = inspect_json(capsys, str(shared_data / OSW_RUN), "--task-file",
                                str(shared_data / OSW / "sec_eval" / "execute_binary.json"))
    assert rc == 0 and osw["source_format"] == "osworld"
    assert len(osw["steps"]) == 11 and len(osw["screenshots"]) == 11  # 11 rows, 7 turns
    assert {(s["width"], s["height"]) for s in osw["screenshots"]} == {(1024, 768)}
    assert osw["steps"][-1]["action"] == "done" and osw["env_score"]["score"] == 1.0

    assert main(["inspect", str(shared_data / OSW_RUN), "--task-file", str(shared_data / OSW / "sec_eval")]) == 0
    text = capsys.readouterr().out
    assert "Agent claim  success  (the agent's own word; OSWorld DONE action)" in text
    assert "Env score    1 (success by the environment's checker; OSWorld result.txt; not the verifier's" in text


def test_missing_instruction_is_one_line_naming_both_options(shared_data, capsys):
    for path in (shared_data / BU, shared_data / OSW_RUN):
        assert main(["inspect", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "--task-file PATH" in err and "--instruction TEXT" in err


def test_instruction_is_for_one_run_only(shared_data, tmp_path, capsys):
    for name in ("a", "b"):
        shutil.copytree(shared_data / BU, tmp_path / name)
    assert main(["inspect", str(tmp_path), "--instruction", "x"]) == 2
    assert "--instruction TEXT is for a single run, but 2 were found" in capsys.readouterr().err
    tasks = tmp_path / "tasks.tsv"
    tasks.write_text("id\ttask_summary\na\tTask A\nb\tTask B\n")
    rc, infos, _ = inspect_json(capsys, str(tmp_path), "--task-file", str(tasks))
    assert rc == 0 and [i["task"]["instruction"] for i in infos] == ["Task A", "Task B"]


def test_score_all_three_then_view_and_env_agreement(shared_data, tmp_path, monkeypatch, capsys):
    """`score` each real sample with the scripted judge; the records keep the agent's claim and
    the environment's score beside (not in) the verifier's result; the viewer shows both; bench
    compares the verifier with the environment and lists the run they disagree on."""
    judges: list[ScriptedJudge] = []

    def judge_for(outcome: bool):
        script = {"outcome": {"primary_intent": "x", "reasoning": "scripted", "success": outcome}}
        return lambda args: judges.append(ScriptedJudge(script)) or judges[-1]

    out = tmp_path / "results.jsonl"
    runs = [(shared_data / BU, ["--instruction", BU_TASK], True),
            (shared_data / BG, [], True),
            (shared_data / OSW_RUN, ["--task-file", str(shared_data / OSW / "sec_eval")], False)]
    for path, flags, outcome in runs:
        monkeypatch.setattr(score_cmd, "build_judge", judge_for(outcome))
        assert main(["score", str(path), "--out", str(out), *flags, *JUDGE]) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["status"] for r in recs] == ["scored"] * 3
    assert all(j.requests for j in judges)
    bu, bg, osw = recs
    assert bu["other_verdicts"] == {"agent_claim": {"success": True, "source": "browser-use result.is_done/success"}}
    assert bg["other_verdicts"]["env_score"]["score"] == 1.0 and osw["other_verdicts"]["env_score"]["success"] is True
    assert "env_score" not in json.dumps(osw["result"]) and "agent_claim" not in json.dumps(osw["result"])
    assert bu["result"]["task"] == BU_TASK
    assert osw["result"]["task"].startswith("Please give me a summary of news trends")

    from verifier.viewer import build_site

    stats = build_site(out, tmp_path / "site")
    page = (tmp_path / "site" / stats.links[osw["id"]]).read_text()
    assert "environment score" in page and "OSWorld result.txt" in page and "agent's own claim" in page

    pytest.importorskip("sklearn")
    assert main(["bench", "--env-agreement", str(out), "--n-boot", "50", "--out", str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    assert "with an environment score 2" in text
    assert "disagreements (verifier outcome vs environment): 1" in text and osw["id"] in text
    report = json.loads((tmp_path / "b" / "env_agreement.json").read_text())
    assert (report["outcome"]["tp"], report["outcome"]["fn"]) == (1, 1)
    assert report["outcome"]["fnr"]["value"] == 0.5


def test_env_agreement_metrics(tmp_path):
    """kappa / FPR / FNR against the environment on a known table (the bench metrics' own code)."""
    pytest.importorskip("sklearn")
    from verifier.bench.env_agreement import env_agreement
    from verifier.records import ScoreRecord

    def rec(i: int, verifier: bool, env: bool) -> ScoreRecord:
        return ScoreRecord(id=f"r{i}", status="scored", result={"outcome_success": verifier, "process_success": verifier},
                           other_verdicts={"env_score": {"score": float(env), "success": env, "source": "t"}})

    table = [(True, True)] * 6 + [(True, False)] * 2 + [(False, True)] * 1 + [(False, False)] * 11
    records = [rec(i, v, e) for i, (v, e) in enumerate(table)]
    records += [ScoreRecord(id="u", status="unscored", reason="x",
                            other_verdicts={"env_score": {"score": 1.0, "success": True, "source": "t"}}),
                ScoreRecord(id="plain", status="scored", result={"outcome_success": True})]
    report = env_agreement(records, n_boot=200)
    o = report.outcome
    assert (o.tp, o.fp, o.fn, o.tn) == (6, 2, 1, 11) and (report.n_records, report.n_with_env) == (22, 21)
    assert o.fpr.value == pytest.approx(2 / 13) and o.fnr.value == pytest.approx(1 / 7)
    po = (6 + 11) / 20
    pe = (8 / 20) * (7 / 20) + (12 / 20) * (13 / 20)
    assert o.kappa.value == pytest.approx((po - pe) / (1 - pe))
    assert o.kappa.lo <= o.kappa.value <= o.kappa.hi
    assert [r.id for r in report.disagreements] == ["r6", "r7", "r8"]
