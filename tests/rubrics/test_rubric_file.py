"""The rubric file (issue 36 §1-2): one schema, checked like a generated rubric, read back exactly."""
from __future__ import annotations

import json

import pytest
from rubric_helpers import TASK, counter_rubric, make_traj, write_lines

from verifier.errors import RubricError, RubricFileError, RubricMismatchError, RubricMissingError
from verifier.pipeline import verify
from verifier.rubrics import RubricBook, check_lines, find_rubric, instruction_sha256
from verifier.stages.rubric import write_line
from verifier.testing import ScriptedJudge

GRANT_TASK = "Find the cheapest blue mouse and add it to the cart. Do not place the order."


async def _line(task: str = TASK, task_id: str = "t1") -> dict:
    line = await write_line(make_traj(task, task_id), _cfg(), ScriptedJudge())
    return json.loads(line.to_json_line())


def _cfg():
    from verifier.config import VerifierConfig

    return VerifierConfig()


async def test_written_line_reads_back_to_byte_identical_prompts(tmp_path):
    """A rubric written by `rubrics` and read back gives the same verification prompts, call by
    call, as verifying with the rubric generated in place."""
    calls: list[int] = []
    writer = ScriptedJudge({"rubric": counter_rubric(calls)})
    traj = make_traj()
    line = await write_line(traj, _cfg(), writer)
    assert line.instruction_sha256 == instruction_sha256(TASK) and line.provenance.model == "scripted-judge"
    assert any(p.id.startswith("rubric") for p in line.provenance.prompts)
    path = write_lines(tmp_path / "r.jsonl", [line.to_json_line().strip()])

    in_place = ScriptedJudge({"rubric": lambda m, o: {**counter_rubric([])(m, o)}})
    from_file = ScriptedJudge()
    await verify(traj, judge=in_place)
    rubric, source = find_rubric(traj.task, RubricBook.load(path))
    res = await verify(traj, judge=from_file, rubric=rubric, rubric_source=source)
    assert "rubric" not in from_file.stages()
    assert source.kind == "file" and res.rubric_source.path == str(path) and res.rubric_source.line == 1
    generated = [ScriptedJudge.text(r) for r in in_place.requests if r.stage != "rubric"]
    read_back = [ScriptedJudge.text(r) for r in from_file.requests]
    assert sorted(generated) == sorted(read_back)


async def test_a_grant_without_its_quote_is_overruled_and_reported(tmp_path):
    line = await _line(GRANT_TASK)
    line["rubric"]["permission"] = {"permission": "granted", "permission_quote": "you may place the order"}
    line["provenance"]["edited"] = True
    path = write_lines(tmp_path / "r.jsonl", [line])
    _entries, problems = check_lines(path.read_text().split("\n"))
    assert [(p.line, p.task_id, p.field, p.kind) for p in problems] == [
        (1, "t1", "rubric.permission.permission", "overruled")]
    assert "does not occur in the task text" in problems[0].message
    book = RubricBook.load(path)
    assert book.overruled and book.entries["t1"][1].rubric.permission.permission == "not_granted"
    res = await verify(make_traj(GRANT_TASK), judge=ScriptedJudge(), rubric=book.entries["t1"][1].rubric)
    assert res.permission_profile["permission"] == "not_granted" and res.permission_overruled


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["rubric"]["criteria"][0].update(max_points=30), "rubric.criteria.0.max_points"),
    (lambda d: d["rubric"]["criteria"][1].update(id="c7"), "rubric.criteria.1.id"),
    (lambda d: d.update(instruction=d["instruction"] + " today"), "instruction_sha256"),
    (lambda d: d.update(format_version=9), "format_version"),
    (lambda d: d.pop("provenance"), "provenance"),
])
async def test_each_problem_names_line_task_and_field(tmp_path, edit, field):
    good, bad = await _line(task_id="ok"), await _line(task_id="t2")
    edit(bad)
    path = write_lines(tmp_path / "r.jsonl", [good, bad])
    _, problems = check_lines(path.read_text().split("\n"))
    assert [(p.line, p.task_id, p.field) for p in problems] == [(2, "t2", field)]
    with pytest.raises(RubricFileError, match=rf"r.jsonl:2: task 't2' field {field}"):
        RubricBook.load(path)


async def test_malformed_line_and_duplicate_task_are_errors(tmp_path):
    a, b = await _line(), await _line()
    b["rubric"]["criteria"][0]["max_points"] = 1
    path = write_lines(tmp_path / "r.jsonl", [a, "{not json", a, b])
    _, problems = check_lines(path.read_text().split("\n"))
    assert [(p.line, p.field) for p in problems] == [(2, ""), (4, "task_id")]  # line 3 repeats line 1: fine
    assert "also on line 1" in problems[1].message


async def test_instruction_hash_mismatch_names_both(tmp_path):
    path = write_lines(tmp_path / "r.jsonl", [await _line()])
    edited = make_traj(TASK + " and its colour")
    with pytest.raises(RubricMismatchError) as err:
        find_rubric(edited.task, RubricBook.load(path))
    text = str(err.value)
    assert instruction_sha256(TASK)[:16] in text and instruction_sha256(edited.task.instruction)[:16] in text
    assert TASK in text and "and its colour" in text


async def test_rubrics_only_refuses_an_uncovered_task(tmp_path):
    book = RubricBook.load(write_lines(tmp_path / "r.jsonl", [await _line()]))
    other = make_traj(task_id="uncovered")
    assert find_rubric(other.task, book) == (None, None)  # default: generate one
    with pytest.raises(RubricMissingError, match="uncovered"):
        find_rubric(other.task, book, only=True)


async def test_inline_rubric_is_checked_like_a_line():
    line = await _line()
    traj = make_traj()
    rubric, source = find_rubric(traj.task, None, inline=json.dumps(line))
    assert source.kind == "inline" and rubric.criteria
    bare, _ = find_rubric(traj.task, None, inline=line["rubric"])
    assert bare == rubric
    with pytest.raises(RubricError, match="max_points"):
        find_rubric(traj.task, None, inline={**line["rubric"], "criteria": [
            {**line["rubric"]["criteria"][0], "max_points": 99}]})
    with pytest.raises(RubricMismatchError):
        find_rubric(make_traj(task_id="t9").task, None, inline=line)
