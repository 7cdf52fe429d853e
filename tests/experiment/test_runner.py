"""`run_experiment` (issue 37 §2-3) with the scripted judge: each arm scored R times on the same
items, unchanged calls shared between arms, never between repeats, resumable and exactly once."""
from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
from pipeline_helpers import make_traj

from verifier import prompts
from verifier.errors import JudgeUnavailableError
from verifier.experiment import (
    ExperimentSpec,
    ExperimentSpecError,
    Item,
    ItemLabel,
    resolve_arms,
    run_experiment,
)
from verifier.experiment.runner import ExperimentMeta, log_path, prepare_folder
from verifier.records import ResultsInUseError, ResultWriter
from verifier.testing import ScriptedJudge

RULE = "EXPERIMENT RULE: a run with no deliverable fails."


def items(n: int = 3) -> list[Item]:
    return [Item(label=ItemLabel(id=f"i{k}", task_id=f"t{k}", outcome=bool(k % 2), process=bool(k % 2)),
                 load=lambda k=k: make_traj(2, task=f"Find the price of item {k}", task_id=f"t{k}"))
            for k in range(n)]


def spec(tmp_path, arms: list[dict], baseline: dict | None = None, repeats: int = 2) -> ExperimentSpec:
    return ExperimentSpec.model_validate({"labelled": {"calibration": {}}, "repeats": repeats,
                                          "baseline": baseline or {"name": "base"}, "arms": arms,
                                          "folder": tmp_path})


def run(tmp_path, sp: ExperimentSpec, judge, its: list[Item] | None = None, **kw):
    arms = resolve_arms(sp)
    its = its if its is not None else items()
    out = tmp_path / "out"
    prepare_folder(out, ExperimentMeta(name=sp.name, repeats=sp.repeats, arms=arms), its)
    line = asyncio.run(run_experiment(out, arms, its, sp.repeats, judge_for=lambda arm: judge, **kw))
    return out, line


def test_arms_share_unchanged_stages_and_repeats_share_nothing(tmp_path, overlay_factory):
    folder = overlay_factory("outcome.system.j2", RULE)
    sp = spec(tmp_path, [{"name": "strict", "prompts": str(folder)}])
    alone = ScriptedJudge()  # the baseline by itself: what one arm costs
    base = resolve_arms(sp)[:1]
    prepare_folder(tmp_path / "alone", ExperimentMeta(name="x", repeats=2, arms=base), items())
    asyncio.run(run_experiment(tmp_path / "alone", base, items(), 2, judge_for=lambda arm: alone))
    judge = ScriptedJudge()
    out, line = run(tmp_path, sp, judge)
    one, two = Counter(alone.stages()), Counter(judge.stages())
    n, R = 3, 2
    assert one["rubric"] == two["rubric"] == n * R  # once per item per repeat: arms share, repeats do not
    for stage in ("rubric", "relevance", "evidence", "action_scoring", "rescoring"):
        assert two[stage] == one[stage] > 0, stage  # upstream of outcome: asked once for both arms
    assert two["outcome"] == 2 * one["outcome"]  # the changed stage is asked by each arm
    assert sum(RULE in judge.text(r) for r in judge.requests_for("outcome")) == one["outcome"]
    assert sum(a.calls_sent for a in line.arms.values()) == len(judge.requests)
    assert line.calls_saved == 2 * len(alone.requests) - len(judge.requests) > 0
    for arm in ("base", "strict"):  # every arm's results are complete and count its stand-alone cost
        for r in range(R):
            recs = ResultWriter(log_path(out, arm, r)).records()
            assert [x.status for x in recs] == ["scored"] * n
            assert sum(x.result_dict()["usage"]["calls"] for x in recs) == len(alone.requests) // R


def test_repeats_get_their_own_seeds_where_calls_are_seeded(tmp_path):
    judge = ScriptedJudge()
    run(tmp_path, spec(tmp_path, [{"name": "three", "config": {"top_k": 2}}],
                       baseline={"name": "base", "config": {"votes": 3}}), judge, its=items(1))
    seeds = Counter((r.sampling.seed if r.sampling else None) for r in judge.requests_for("outcome"))
    voted = {s for s in seeds if s is not None}
    assert len(voted) == 6  # 3 votes x 2 repeats, all distinct: a seeded judge draws anew each repeat


def test_a_rerun_scores_only_what_is_left_and_a_second_run_is_refused(tmp_path, overlay_factory):
    folder = overlay_factory("outcome.system.j2", RULE)
    sp = spec(tmp_path, [{"name": "strict", "prompts": str(folder)}])

    def flaky_outcome(messages, output_model):
        if "item 1" in ScriptedJudge.text(type("R", (), {"messages": messages})()):
            raise JudgeUnavailableError("down", stage="outcome")
        return {"primary_intent": "x", "reasoning": "y", "success": True}

    judge = ScriptedJudge({"outcome": flaky_outcome})
    out, first = run(tmp_path, sp, judge)
    assert first.arms["base"].scored == 4 and first.arms["base"].unscored == 2
    judge2 = ScriptedJudge()
    _, second = run(tmp_path, sp, judge2)
    assert second.arms["base"].skipped == 4 and second.arms["base"].scored == 2
    assert Counter(judge2.stages())["rubric"] == 2  # item 1 in each repeat, once for both arms
    holder = ResultWriter(log_path(out, "strict", 1))
    holder.done_ids()  # another run holds one log
    with pytest.raises(ResultsInUseError):
        run(tmp_path, sp, ScriptedJudge())
    holder.close()
    lines = (out / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["arms"]["strict"]["scored"] == 2


def test_identical_arms_and_changed_arms_are_refused(tmp_path, overlay_factory):
    with pytest.raises(ExperimentSpecError, match="identical"):
        resolve_arms(spec(tmp_path, [{"name": "same", "config": {"votes": 1}}]))
    folder = overlay_factory("outcome.system.j2", RULE)
    sp = spec(tmp_path, [{"name": "strict", "prompts": str(folder)}])
    run(tmp_path, sp, ScriptedJudge())
    (folder / "outcome.system.j2").write_text((folder / "outcome.system.j2").read_text() + "\nmore", encoding="utf-8")
    prompts.clear_caches()  # a new process: templates are read once per process
    with pytest.raises(ExperimentSpecError, match="other content"):
        run(tmp_path, sp, ScriptedJudge())


def test_a_bad_overlay_or_config_is_refused_before_any_call(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "outcome.system.j2").write_text("{# id: outcome version: 9 #}\n{% if %}", encoding="utf-8")
    with pytest.raises(ExperimentSpecError, match="arm strict"):
        resolve_arms(spec(tmp_path, [{"name": "strict", "prompts": "bad"}]))
    with pytest.raises(ExperimentSpecError, match="not a folder"):
        resolve_arms(spec(tmp_path, [{"name": "strict", "prompts": "missing"}]))
    with pytest.raises(ExperimentSpecError, match="invalid config"):
        resolve_arms(spec(tmp_path, [{"name": "v", "config": {"votes": "many"}}]))


def test_fixed_rubric_lines_of_the_rubric_file_format_load_too(tmp_path):
    """A rubric file written in the issue-36 format is read by its own loader (`RubricBook`: the
    same checks as `score --rubrics`); plain {task_id, rubric} lines still load."""
    from verifier.experiment import load_fixed_rubrics
    from verifier.rubrics.format import RubricLine, RubricProvenance, instruction_sha256
    from verifier.schemas import Rubric

    rubric = Rubric.model_validate({"stated_subgoals": ["answer"], "self_audit": "ok", "criteria": [
        {"id": "c1", "name": "Answer", "description": "Full: given.", "max_points": 5}]})
    line = RubricLine(task_id="t1", instruction="Find it", instruction_sha256=instruction_sha256("Find it"),
                      rubric=rubric, provenance=RubricProvenance(model="judge", written_at="2026-12-06T00:00:00Z"))
    path = tmp_path / "rubrics.jsonl"
    path.write_text(line.to_json_line() + "\n", encoding="utf-8")
    assert [c.name for c in load_fixed_rubrics(path)["t1"].criteria] == ["Answer"]
    broken = json.loads(line.to_json_line())
    broken["rubric"]["criteria"][0]["max_points"] = 999
    path.write_text(json.dumps(broken) + "\n", encoding="utf-8")
    with pytest.raises(ExperimentSpecError, match="rubric file"):  # the file's own checks ran
        load_fixed_rubrics(path)
    plain = {"task_id": "t1", "rubric": rubric.model_dump(mode="json")}
    path.write_text(json.dumps(plain) + "\n" + json.dumps(plain) + "\n", encoding="utf-8")
    with pytest.raises(ExperimentSpecError, match="given twice"):
        load_fixed_rubrics(path)


def test_a_judge_that_flips_coins_makes_a_noop_arm_inconclusive(tmp_path, overlay_factory):
    """Both arms judged by a judge that answers some items by a seeded coin (a fresh flip for every
    call): the no-op wording change is neither accepted nor rejected, and the report shows the noise."""
    import hashlib
    import re

    from verifier.experiment.report import build_report

    n, noisy = 24, 8
    truth = {f"Find the price of item {k}": bool(k % 2) for k in range(n)}
    calls: Counter = Counter()

    def outcome(messages, output_model):
        text = ScriptedJudge.text(type("R", (), {"messages": messages})())
        task = next(t for t in truth if re.search(re.escape(t) + r"\b", text))
        k = int(task.rsplit(" ", 1)[1])
        if k >= noisy:
            return {"primary_intent": "x", "reasoning": "sure", "success": truth[task]}
        key = (task, "NOOP" in text)
        calls[key] += 1
        coin = hashlib.sha256(repr((key, calls[key])).encode()).digest()[0] % 2 == 0
        return {"primary_intent": "x", "reasoning": "coin", "success": coin}

    its = [Item(label=ItemLabel(id=f"i{k}", task_id=f"t{k}", outcome=bool(k % 2)),
                load=lambda k=k: make_traj(1, task=f"Find the price of item {k}", task_id=f"t{k}")) for k in range(n)]
    folder = overlay_factory("outcome.system.j2", "NOOP: this sentence changes nothing.")
    out, _ = run(tmp_path, spec(tmp_path, [{"name": "noop", "prompts": str(folder)}], repeats=3),
                 ScriptedJudge({"outcome": outcome}), its=its, concurrency=8)
    rep = build_report(out, n_boot=500)
    base, noop = rep.arms
    assert base.targets["outcome"].unstable > 0 and base.targets["outcome"].spread["kappa"].range > 0
    assert noop.decision.verdict == "inconclusive" and "includes 0" in noop.decision.reason, noop.decision.reason


def test_a_fixed_rubric_written_for_another_instruction_refuses_the_item_naming_both():
    """With a rubric file, an item whose instruction is not the one its rubric was written for is
    refused when it is loaded (RubricMismatchError: unscored, as under `score --rubrics`)."""
    from verifier.errors import RubricMismatchError
    from verifier.experiment.items import _hash_checked
    from verifier.rubrics.format import RubricLine, RubricProvenance, instruction_sha256
    from verifier.schemas import Rubric
    from verifier.trajectory import Task, Trajectory

    rubric = Rubric.model_validate({"stated_subgoals": ["answer"], "self_audit": "ok", "criteria": [
        {"id": "c1", "name": "Answer", "description": "Full: given.", "max_points": 5}]})
    line = RubricLine(task_id="t1", instruction="Find the opening hours", rubric=rubric,
                      instruction_sha256=instruction_sha256("Find the opening hours"),
                      provenance=RubricProvenance(model="judge", written_at="2026-12-06T00:00:00Z"))
    same = Trajectory(task=Task(id="t1", instruction="Find the opening hours"))
    assert _hash_checked(lambda: same, line, "fixed rubrics f")() is same
    edited = Trajectory(task=Task(id="t1", instruction="Find the closing hours"))
    with pytest.raises(RubricMismatchError, match="closing hours") as info:
        _hash_checked(lambda: edited, line, "fixed rubrics f")()
    assert "opening hours" in str(info.value)
