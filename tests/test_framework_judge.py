"""browser-use's own judge verdict (`ActionResult.judgement`, issue 35 §5): kept beside the agent's
claim, never shown to the verifier's judge, and compared in `bench --env-agreement`."""
from __future__ import annotations

import json

import pytest
from test_agent_loaders import bu_item, png

from cua_verifier.cli import main, score_cmd
from verifier.loaders import load_trajectory
from verifier.testing import ScriptedJudge

REASON = "The agent never opened the checkout page; zebra-marker-7781"
REASONING = "Looking at the final screenshot, quokka-marker-4410"


def history(tmp_path, name: str, verdict: bool, *, captcha: bool = False):
    run = tmp_path / name
    run.mkdir()
    (run / "shot.png").write_bytes(png())
    judgement = {"reasoning": REASONING, "verdict": verdict, "failure_reason": "" if verdict else REASON,
                 "impossible_task": False, "reached_captcha": captcha}
    item = bu_item([{"done": {"text": "Bought it", "success": True}}],
                   [{"is_done": True, "success": True, "extracted_content": "Bought it", "judgement": judgement}],
                   {"url": "https://shop/", "screenshot_path": "shot.png"})
    (run / "AgentHistory.json").write_text(json.dumps({"history": [item]}))
    return run


def test_judgement_is_kept_beside_the_claim(tmp_path):
    t = load_trajectory(history(tmp_path, "a", False, captcha=True), instruction="Buy a lamp")
    fj = t.framework_judgement()
    assert (fj.verdict, fj.failure_reason, fj.impossible_task, fj.reached_captcha) == (False, REASON, False, True)
    assert fj.reasoning == REASONING and fj.source == "browser-use result.judgement"
    assert t.agent_claim().success is True  # the agent's own claim is still its own
    assert set(t.other_verdicts()) == {"agent_claim", "framework_judge"}
    ok = load_trajectory(history(tmp_path, "b", True), instruction="Buy a lamp").framework_judgement()
    assert ok.verdict is True and ok.failure_reason is None  # an empty reason is no reason


def test_judge_never_sees_it_and_bench_compares_it(tmp_path, monkeypatch, capsys):
    judges: list[ScriptedJudge] = []

    def build(args):
        judges.append(ScriptedJudge({"outcome": {"primary_intent": "buy", "reasoning": "s", "success": True}}))
        return judges[-1]

    monkeypatch.setattr(score_cmd, "build_judge", build)
    out = tmp_path / "results.jsonl"
    runs = [history(tmp_path, "fails", False), history(tmp_path, "agrees", True)]
    for run in runs:
        assert main(["score", str(run), "--out", str(out), "--instruction", "Buy a lamp", "--judge-url",
                     "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]) == 0
    seen = "\n".join(ScriptedJudge.text(r) for j in judges for r in j.requests)
    assert judges and all(j.requests for j in judges) and "Bought it" in seen  # the judge did see the run
    for secret in ("zebra-marker-7781", "quokka-marker-4410", "framework_judge", "reached_captcha"):
        assert secret not in seen
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["other_verdicts"]["framework_judge"]["verdict"] for r in recs] == [False, True]
    assert "zebra-marker-7781" not in json.dumps([r["result"] for r in recs])

    pytest.importorskip("sklearn")
    capsys.readouterr()
    assert main(["bench", "--env-agreement", str(out), "--n-boot", "20", "--out", str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    assert "with the agent framework's own judge verdict 2" in text
    report = json.loads((tmp_path / "b" / "env_agreement.json").read_text())
    differ = [r["id"] for r in recs
              if r["result"]["outcome_success"] != r["other_verdicts"]["framework_judge"]["verdict"]]
    assert [d["id"] for d in report["framework_disagreements"]] == differ
    assert f"disagreements (verifier outcome vs framework judge): {len(differ)}" in text
    assert report["verifier_vs_framework_judge"]["n"] == 2


def test_env_agreement_lists_the_framework_judges_reasons(tmp_path, capsys):
    """Known table: the verifier against the framework's judge (and that judge against the environment)."""
    pytest.importorskip("sklearn")
    from verifier.records import ResultWriter, ScoreRecord

    def rec(i: int, verifier: bool, verdict: bool, env: bool | None = None) -> ScoreRecord:
        others = {"framework_judge": {"verdict": verdict, "failure_reason": None if verdict else f"{REASON} {i}",
                                      "reached_captcha": i == 1, "source": "browser-use result.judgement"}}
        if env is not None:
            others["env_score"] = {"score": float(env), "success": env, "source": "t"}
        return ScoreRecord(id=f"r{i}", status="scored", other_verdicts=others,
                           result={"outcome_success": verifier, "process_success": verifier})

    out = tmp_path / "results.jsonl"
    writer = ResultWriter(out)
    for r in [rec(0, True, True, True), rec(1, True, False, False), rec(2, False, False), rec(3, False, True)]:
        writer.write(r)
    writer.close()
    assert main(["bench", "--env-agreement", str(out), "--n-boot", "20", "--out", str(tmp_path / "b")]) == 0
    text = capsys.readouterr().out
    report = json.loads((tmp_path / "b" / "env_agreement.json").read_text())
    agr = report["verifier_vs_framework_judge"]
    assert (agr["tp"], agr["fp"], agr["fn"], agr["tn"]) == (1, 1, 1, 1)
    assert [d["id"] for d in report["framework_disagreements"]] == ["r1", "r3"]
    assert (report["framework_judge"]["tp"], report["framework_judge"]["tn"]) == (1, 1)  # vs the environment
    line = next(x for x in text.splitlines() if x.strip().startswith("r1:") and "framework judge" in x)
    assert "framework judge failure" in line and f"{REASON} 1" in line and "reached a captcha" in line
    assert any(x.startswith("framework's judge") for x in text.splitlines())


def test_inspect_shows_it_as_the_frameworks_own(tmp_path, capsys):
    run = history(tmp_path, "a", False)
    assert main(["inspect", str(run), "--instruction", "Buy a lamp", "--json"]) == 0
    info = json.loads(capsys.readouterr().out.splitlines()[0])
    assert info["framework_judge"]["verdict"] is False and info["framework_judge"]["failure_reason"] == REASON
    assert main(["inspect", str(run), "--instruction", "Buy a lamp"]) == 0
    assert "framework's own LLM judge" in capsys.readouterr().out


def test_parquet_export_keeps_the_verdict_beside_the_claim(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from verifier.records import ResultWriter, ScoreRecord

    t = load_trajectory(history(tmp_path, "a", False), instruction="Buy a lamp")
    with ResultWriter(tmp_path / "r.jsonl") as w:
        w.write(ScoreRecord(id="a", status="scored", result={"outcome_success": True},
                            other_verdicts=t.other_verdicts()))
        w.write(ScoreRecord.unscored("b", "x"))
        out = w.export_parquet(tmp_path / "r.parquet")
    rows = pq.read_table(out).to_pylist()
    assert (rows[0]["framework_verdict"], rows[0]["framework_failure_reason"], rows[0]["agent_claim"]) == (
        False, REASON, True)
    assert rows[1]["framework_verdict"] is None
