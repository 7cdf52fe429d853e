"""Traceability of the judging rules (prompts/PRINCIPLES.md) and prompt versioning.

Every rule id has one row; the row's prompt block exists, marks the rule with a `{# <id> #}`
comment and is included by the shared system template (`prompts/system.j2`, the system prompt of
every judge call: tests/pipeline/test_prompt_layout.py checks every request starts with it); every
block is included there exactly once and by no stage template (a stage's instructions follow the
shared context, so a block there would be stated twice); every marked id has a row; and a prompt
whose text changed also changed its version (prompts/versions.json records id/version -> sha256).
"""
import json
import re

import pytest

from verifier.prompts import prompt_info, prompts_dir
from verifier.rendering import SYSTEM_TEMPLATE, infos, system_prompt
from verifier.schemas import Rubric

RULE_IDS = ([f"O{i}" for i in range(1, 17)] + [f"R{i}" for i in range(1, 11)] + ["S1", "S2", "S3"]
            + [f"U{i}" for i in range(1, 8)] + [f"C{i}" for i in range(1, 7)]
            + ["H1", "H2", "H3", "H4", "X1", "X2", "X3"])
_ROW = re.compile(r"^\|\s*([A-Z]\d+)\s*\|(.*)\|\s*$")
_VETO_ROW = re.compile(r"^\|\s*veto (V\d+)\s*\|(.*)\|\s*$")
_MARK = re.compile(r"\{#([^#]*)#\}")


def rows() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (prompts_dir() / "PRINCIPLES.md").read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            assert m[1] not in out, f"rule {m[1]} has two rows"
            out[m[1]] = [c.strip() for c in m[2].split("|")]
    return out


def stage_templates() -> list[str]:
    return sorted(str(p.relative_to(prompts_dir())) for p in prompts_dir().glob("*.system.j2"))


def included_blocks() -> set[str]:
    """Every template the shared system template includes, transitively (by id)."""
    return {i.id for i in infos(SYSTEM_TEMPLATE)}


def test_every_principle_block_is_in_the_shared_system_prompt_once_and_nowhere_else():
    source = (prompts_dir() / SYSTEM_TEMPLATE).read_text(encoding="utf-8")
    for block in sorted((prompts_dir() / "principles").glob("*.j2")):
        rel = str(block.relative_to(prompts_dir()))
        assert source.count(f'include "{rel}"') == 1, rel
    for stage in stage_templates():
        assert "include" not in (prompts_dir() / stage).read_text(encoding="utf-8"), stage
    # Rendered: each block's heading appears once, in the order of the template.
    text = system_prompt(Rubric.model_validate({"criteria": [{"id": "c1", "name": "n", "description": "d",
                                                               "max_points": 1}]})).text
    for heading in ("RUBRIC DESIGN RULES", "CRITICAL POINTS", "PARTIAL CREDIT", "EVIDENCE TAXONOMY",
                    "HOW THE RUN IS SHOWN", "SECURITY:", "CRITICAL-POINT RULES FOR THIS TASK"):
        assert text.count(heading) == 1, heading


def markers(path) -> set[str]:
    return {tok for body in _MARK.findall(path.read_text(encoding="utf-8"))
            for tok in re.findall(r"\b([OURSCH]\d+)\b", body)}


def test_every_rule_id_has_exactly_one_row_with_the_glob_of_its_cases():
    table = rows()
    assert list(table) == RULE_IDS
    for rid, cells in table.items():
        assert len(cells) == 4, rid
        assert cells[3] == f"`examples/calibration/{rid.lower()}-*`", rid
        assert cells[0] and cells[1], f"{rid}: rule and source must be filled in"


@pytest.mark.parametrize("rid", [r for r in RULE_IDS if not r.startswith("X")])
def test_row_names_blocks_that_exist_state_the_rule_and_are_included(rid):
    blocks = re.findall(r"`(principles/[\w.]+\.j2)`", rows()[rid][2])
    assert blocks, f"{rid}: no prompt block named"
    used = included_blocks()
    for block in blocks:
        path = prompts_dir() / block
        assert path.is_file(), f"{rid}: {block} does not exist"
        assert prompt_info(block).id in used, f"{rid}: {block} is not included by the shared system template"
        assert rid in markers(path), f"{rid}: {block} has no {{# {rid} #}} marker"


def test_every_marked_rule_has_a_row():
    marked = {rid for p in (prompts_dir() / "principles").glob("*.j2") for rid in markers(p)}
    assert marked <= set(rows()), marked - set(rows())
    assert marked == {r for r in RULE_IDS if not r.startswith("X")}


def test_each_rule_is_marked_in_one_block_only():
    seen: dict[str, str] = {}
    for p in sorted((prompts_dir() / "principles").glob("*.j2")):
        for rid in markers(p):
            if rid == "S2":  # stated where the profile is written and where it is applied
                continue
            assert rid not in seen, f"{rid} is stated in {seen.get(rid)} and {p.name}"
            seen[rid] = p.name


def test_a_changed_prompt_has_a_new_version():
    recorded = json.loads((prompts_dir() / "versions.json").read_text(encoding="utf-8"))
    for path in sorted(prompts_dir().rglob("*.j2")):
        rel = str(path.relative_to(prompts_dir()))
        info = prompt_info(rel)
        entry = recorded.get(rel, {"versions": {}})
        known = entry["versions"].get(info.version)
        hint = (f'record it in prompts/versions.json: "{rel}": {{"id": "{info.id}", "versions": '
                f'{{..., "{info.version}": "{info.sha256}"}}}}')
        assert known is not None, f"{rel} version {info.version} is not recorded; {hint}"
        assert known == info.sha256, (f"{rel} changed but kept version {info.version}: bump the version in "
                                      f"its header, then {hint}")
        assert entry["id"] == info.id, rel


def test_every_code_veto_has_one_row_and_a_documented_switch():
    """The code vetoes (verifier/vetoes.py) are listed apart from the judge's rules: a row each in
    PRINCIPLES.md, and a line each in docs/judging-rules.md with the switch that turns it off."""
    from pathlib import Path

    from verifier.vetoes import VETO_IDS

    listed = [m[1] for line in (prompts_dir() / "PRINCIPLES.md").read_text(encoding="utf-8").splitlines()
              if (m := _VETO_ROW.match(line))]
    assert listed == list(VETO_IDS)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "judging-rules.md").read_text(encoding="utf-8")
    assert "vetoes_off" in doc and all(f"`{v}`" in doc for v in VETO_IDS)
