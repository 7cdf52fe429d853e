"""Prompt overlays (issue 37 §1): a folder whose templates replace the packaged ones of the same
name, in effect per context, recorded by hash, and checked before any judge call."""
from __future__ import annotations

import asyncio
import hashlib

import pytest
from pipeline_helpers import make_traj

from cua_verifier.cli import main
from verifier.overlay import PromptOverlayError, check_overlay
from verifier.pipeline import verify
from verifier.prompts import prompt_info, prompt_overlay, render
from verifier.rendering import infos, system_prompt
from verifier.testing import ScriptedJudge

RULE = "EXPERIMENT RULE: a run with no deliverable fails."


def test_an_overlay_template_replaces_the_packaged_one_only_inside_the_block(overlay_factory):
    folder = overlay_factory("outcome.system.j2", RULE)
    packaged = render("outcome.system.j2")
    with prompt_overlay(folder):
        mine = render("outcome.system.j2")
        untouched = render("evidence.system.j2")
    assert RULE in mine.text and RULE not in packaged.text
    assert mine.info.sha256 == hashlib.sha256((folder / "outcome.system.j2").read_bytes()).hexdigest()
    assert mine.info.sha256 != packaged.info.sha256 and mine.info.version == "99"
    assert untouched == render("evidence.system.j2")  # the rest stay packaged
    assert render("outcome.system.j2") == packaged  # and the overlay ends with the block


def test_an_overlay_principle_block_reaches_the_system_prompt_and_its_own_hash(overlay_factory):
    folder = overlay_factory("principles/leniency.j2", RULE)
    base_infos = {i.id: i.sha256 for i in infos("system.j2")}
    with prompt_overlay(folder):
        assert RULE in system_prompt(None).text
        over = {i.id: i.sha256 for i in infos("system.j2")}
        block = prompt_info("principles/leniency.j2")
    assert RULE not in system_prompt(None).text
    changed = {k for k in base_infos if base_infos[k] != over[k]}
    assert changed == {block.id}  # only the replaced block's hash moves; system.j2's own text did not


def test_two_overlays_verify_side_by_side_in_one_loop(overlay_factory):
    """The overlay is a context variable: concurrent verifications keep their own wording, and each
    result records the hash of the outcome prompt it was judged with."""
    a, b = overlay_factory("outcome.system.j2", "RULE A", "a"), overlay_factory("outcome.system.j2", "RULE B", "b")
    judge = ScriptedJudge()

    async def one(folder):
        with prompt_overlay(folder):
            return await verify(make_traj(2), judge=judge)

    async def both():
        return await asyncio.gather(one(a), one(b), one(None))

    ra, rb, rn = asyncio.run(both())
    texts = [judge.text(r) for r in judge.requests_for("outcome")]
    assert sum("RULE A" in t for t in texts) == sum("RULE B" in t for t in texts) > 0
    assert not any("RULE A" in t and "RULE B" in t for t in texts)
    hashes = [{p.id: p.sha256 for p in r.prompts}["outcome"] for r in (ra, rb, rn)]
    assert len(set(hashes)) == 3 and hashes[2] == prompt_info("outcome.system.j2").sha256


@pytest.mark.parametrize("name,text,needle", [
    ("outcom.system.j2", "{# id: outcome version: 9 #}\nx", "no template of that name"),
    ("outcome.system.j2", "no header here", "header"),
    ("outcome.system.j2", "{# id: outcome version: 9 #}\n{% if %}", "line"),
    ("principles/leniency.j2", "{# id: principles.leniency version: 9 #}\n{{ undefined_thing }}", "does not render"),
])
def test_a_bad_overlay_is_refused_naming_the_problem(tmp_path, name, text, needle):
    path = tmp_path / "o" / name
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PromptOverlayError, match=needle):
        check_overlay(tmp_path / "o")


def test_an_empty_or_missing_overlay_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(PromptOverlayError, match="replace nothing"):
        check_overlay(tmp_path / "empty")
    with pytest.raises(PromptOverlayError, match="not a folder"):
        check_overlay(tmp_path / "absent")


def test_a_good_overlay_lists_what_it_replaces(overlay_factory):
    folder = overlay_factory("outcome.system.j2", RULE)
    assert list(check_overlay(folder)) == ["outcome.system.j2"]


def test_calibrate_refuses_a_bad_overlay_before_any_call(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "nope.j2").write_text("{# id: nope version: 1 #}\n", encoding="utf-8")
    rc = main(["calibrate", "--prompts", str(tmp_path / "o"), "--judge-url", "http://127.0.0.1:9/v1",
               "--model", "m", "--no-progress"])
    assert rc == 2 and "nope.j2" in capsys.readouterr().err


def test_score_uses_the_overlay(tmp_path, overlay_factory, monkeypatch):
    """`score --prompts DIR`: the outcome request carries the overlay's rule and the record its hash."""
    import json

    from cua_verifier.cli import score_cmd

    judge = ScriptedJudge()
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judge)
    traj_file = tmp_path / "t.json"
    traj_file.write_text(make_traj(2).model_dump_json(), encoding="utf-8")
    folder = overlay_factory("outcome.system.j2", RULE)
    out = tmp_path / "r.jsonl"
    rc = main(["score", str(traj_file), "--out", str(out), "--prompts", str(folder), "--judge-url",
               "http://127.0.0.1:9/v1", "--model", "m", "--no-progress"])
    assert rc == 0
    assert all(RULE in judge.text(r) for r in judge.requests_for("outcome"))
    rec = json.loads(out.read_text().splitlines()[0])
    outcome = next(p for p in rec["result"]["prompts"] if p["id"] == "outcome")
    assert outcome["sha256"] == hashlib.sha256((folder / "outcome.system.j2").read_bytes()).hexdigest()


def test_score_dataset_on_ray_refuses_an_overlay_it_cannot_ship(tmp_path, overlay_factory, capsys):
    folder = overlay_factory("outcome.system.j2", RULE)
    rc = main(["score-dataset", str(tmp_path / "rows.jsonl"), "--out", str(tmp_path / "o.jsonl"), "--ray", "auto",
               "--prompts", str(folder)])
    assert rc == 2 and "Ray actors" in capsys.readouterr().err


def test_bench_refuses_a_bad_overlay_before_any_call(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "outcome.system.j2").write_text("no header", encoding="utf-8")
    rc = main(["bench", "--split", "internal", "--data-dir", str(tmp_path), "--prompts", str(tmp_path / "o"),
               "--out", str(tmp_path / "b")])
    assert rc == 2 and "header" in capsys.readouterr().err


def test_an_overlay_given_to_one_command_ends_with_it(tmp_path, overlay_factory, monkeypatch):
    """main() run twice in one process: the second command renders the packaged prompts."""
    from cua_verifier.cli import score_cmd
    from verifier.prompts import current_overlay

    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    traj_file = tmp_path / "t.json"
    traj_file.write_text(make_traj(2).model_dump_json(), encoding="utf-8")
    folder = overlay_factory("outcome.system.j2", RULE)
    assert main(["score", str(traj_file), "--out", str(tmp_path / "r.jsonl"), "--prompts", str(folder),
                 "--judge-url", "http://127.0.0.1:9/v1", "--model", "m", "--no-progress"]) == 0
    assert current_overlay() is None and RULE not in render("outcome.system.j2").text
