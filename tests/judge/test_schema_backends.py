"""Every output schema the verifier sends is accepted by every structured-outputs backend vLLM
offers (an explicitly chosen backend has no fallback: one rejected schema fails every call).

The fast tests collect the real schemas (a whole pipeline run against `ScriptedJudge`, whose
per-call models narrow ids and screenshot numbers, plus the baselines' models) and check the
rewrite rules; the engine-tier test runs vLLM's own request validators, with each backend's
grammar compiler, in the judge environment.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from engine_utils.sized_schemas import sized_models
from pydantic import BaseModel, Field, ValidationError

from verifier.baselines.webjudge import Judgment, KeyPoints, ScreenshotRelevance
from verifier.baselines.webvoyager import WebVoyagerVerdict
from verifier.config import VerifierConfig
from verifier.judge.schema import (
    fold_length,
    json_schema_for,
    portability_problems,
    stepped_values,
    unbounded_paths,
    worst_case_chars,
)
from verifier.loaders import load_trajectory
from verifier.pipeline import verify
from verifier.testing import ScriptedJudge

REPO = Path(__file__).resolve().parents[2]
CHECKER = Path(__file__).with_name("schema_backends_check.py")


def output_schemas() -> dict[str, dict]:
    """name -> schema of every output model a verification and the baselines send, plus each
    per-call model at the real maximum (9 criteria) and at the bound (`MAX_CRITERIA`) of issue 19."""
    judge = ScriptedJudge()
    traj = load_trajectory(REPO / "examples" / "trajectories" / "library-hours-success")
    asyncio.run(verify(traj, VerifierConfig(rubric_audit=True, diagnosis=True), judge=judge))
    models = {f"{r.stage}:{r.output_model.__name__}": r.output_model for r in judge.requests}
    models.update({m.__name__: m for m in (KeyPoints, ScreenshotRelevance, Judgment, WebVoyagerVerdict)})
    models.update(sized_models())
    return {name: json_schema_for(model) for name, model in models.items()}



class Stepped(BaseModel):
    points: float = Field(ge=0, le=10, multiple_of=0.5)
    p: float = Field(ge=0, le=1)
    wide: float = Field(ge=0, le=1000)  # 100001 steps of 0.01: too many to enumerate
    group: str = Field(max_length=40, pattern=r"^[A-Za-z0-9_\-]+$")
    code: str = Field(max_length=5, pattern=r"^[cp]\d{1,3}$")  # two atoms: cannot be folded


def test_real_output_schemas_are_portable_and_bounded():
    schemas = output_schemas()
    assert {"rubric", "relevance", "evidence", "outcome"} <= {n.split(":")[0] for n in schemas}
    for name, schema in schemas.items():
        assert portability_problems(schema) == [], name
        assert unbounded_paths(schema) == [], name
        assert worst_case_chars(schema) is not None


def test_rewrites_keep_the_constraints_the_model_checks():
    schema = json_schema_for(Stepped)
    props = schema["properties"]
    assert props["points"]["enum"] == [k / 2 for k in range(21)] and "multipleOf" not in props["points"]
    assert len(props["p"]["enum"]) == 101
    assert "multipleOf" not in props["wide"] and "enum" not in props["wide"]
    assert unbounded_paths(schema) == ["$.wide"]  # reported, not hidden
    assert props["group"] == {"type": "string", "pattern": r"^[A-Za-z0-9_\-]{1,40}$"}
    assert props["code"] == {"type": "string", "maxLength": 5}  # pattern left to the model
    assert portability_problems(schema) == []
    with pytest.raises(ValidationError):  # the model still enforces what the schema lost
        Stepped(points=1.25, p=0.5, wide=1, group="a", code="x12")
    assert worst_case_chars({"type": "string", "pattern": r"^[a-z]{1,40}$"}) == 42


@pytest.mark.parametrize("pattern,lo,hi,expected", [
    (r"^[a-z]+$", 0, 40, r"^[a-z]{1,40}$"),
    (r"^\d*$", 2, 5, r"^\d{2,5}$"),
    (r"^x{3,}$", 0, 8, r"^x{3,8}$"),
    (r"^x{2,9}$", 4, None, r"^x{4,9}$"),
    (r"^x{3}$", 0, 2, None),  # contradictory bounds
    (r"^(ab)+$", 0, 4, None),  # a group: length is not the repetition count
    (r"^[cp]\d{1,3}$", 0, 4, None),
])
def test_fold_length(pattern, lo, hi, expected):
    assert fold_length(pattern, lo, hi) == expected


def test_stepped_values_respect_exclusive_bounds():
    assert stepped_values({"type": "number", "exclusiveMinimum": 0, "maximum": 1, "multipleOf": 0.25}) == \
        [0.25, 0.5, 0.75, 1.0]
    assert stepped_values({"type": "integer", "minimum": 1, "exclusiveMaximum": 8, "multipleOf": 4}) == [4]
    assert stepped_values({"type": "number", "minimum": 0, "multipleOf": 0.5}) is None  # open range


def _judge_python() -> Path:
    venv = Path(os.environ.get("CUA_JUDGE_VENV") or REPO / ".venv-judge")
    if not (venv / "bin" / "python").is_file():
        pytest.skip("judge venv missing (serving/setup_judge_env.sh --cpu, or set CUA_JUDGE_VENV)")
    return venv / "bin" / "python"


@pytest.mark.engine
def test_every_vllm_backend_accepts_every_output_schema():
    items = [{"name": n, "schema": s} for n, s in output_schemas().items()]
    # The raw pydantic schema of a stepped, pattern-bounded model: what the judge used to send.
    items.append({"name": "control:raw", "schema": Stepped.model_json_schema()})
    proc = subprocess.run([str(_judge_python()), str(CHECKER)], input=json.dumps(items), text=True, check=False,
                          capture_output=True, timeout=600, env={**os.environ, "VLLM_NO_USAGE_STATS": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    control = results.pop("control:raw")
    assert control["xgrammar"] is not None  # the check can fail: xgrammar rejects the raw schema
    rejected = {(name, backend): err for name, per in results.items() for backend, err in per.items() if err}
    assert rejected == {}
    assert set(next(iter(results.values()))) == {"xgrammar", "guidance", "outlines", "lm-format-enforcer"}


def _pinned(array: dict, key: str) -> list:
    """The value each position of a `prefixItems` array admits for `key` (one each, or a failure)."""
    assert "x-one-each" not in array  # the marker never reaches the wire
    return [p["properties"][key]["enum"] for p in array["prefixItems"]]


def test_narrowed_lists_pin_one_id_per_position():
    """A random-weight judge on vLLM wrote one criterion id in every entry (enum items allow it) and
    spent its re-asks; each position now admits only its own id, in the call's order."""
    from verifier.narrowing import for_call
    from verifier.schemas import ActionScores, RealityCheck, RelevanceBatch, Rescoring

    items = json_schema_for(for_call(ActionScores, ("c2", "c1", "c3")))["properties"]["items"]
    assert _pinned(items, "criterion_id") == [["c2"], ["c1"], ["c3"]]
    assert items["minItems"] == items["maxItems"] == 3
    assert items["items"]["properties"]["criterion_id"]["enum"] == ["c2", "c1", "c3"]  # kept for lm-format-enforcer
    rescoring = json_schema_for(for_call(Rescoring, ("c1", "c4")))["properties"]
    notes = json_schema_for(for_call(RealityCheck, ("c1", "c4")))["properties"]
    assert _pinned(notes["notes"], "criterion_id") == _pinned(rescoring["items"], "criterion_id") == [["c1"], ["c4"]]
    rows = json_schema_for(for_call(RelevanceBatch, ("c1", "c2"), (3, 7)))["properties"]["rows"]
    assert _pinned(rows, "screenshot") == [[3], [7]]
    assert all(_pinned(r["properties"]["scores"], "criterion_id") == [["c1"], ["c2"]] for r in rows["prefixItems"])
    # One id: nothing to pin (a single-valued Literal is a const).
    single = json_schema_for(for_call(ActionScores, ("c1",)))["properties"]["items"]
    assert "prefixItems" not in single and single["maxItems"] == 1


def test_every_real_narrowed_list_is_pinned():
    """Every list of the real pipeline's per-call schemas that must hold each id once is pinned."""
    def arrays(node):
        if isinstance(node, dict):
            if node.get("type") == "array" and isinstance(node.get("items"), dict):
                yield node
            for v in node.values():
                yield from arrays(v)
        elif isinstance(node, list):
            for v in node:
                yield from arrays(v)
    pinned = 0
    for name, schema in output_schemas().items():
        for arr in arrays(schema):
            props = arr["items"].get("properties", {})
            for key in ("criterion_id", "screenshot"):
                enum = props.get(key, {}).get("enum")
                if enum and len(enum) > 1 and arr.get("maxItems") == len(enum) == arr.get("minItems"):
                    assert _pinned(arr, key) == [[v] for v in enum], name
                    pinned += 1
    assert pinned >= 4
