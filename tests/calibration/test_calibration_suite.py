"""The calibration suite itself: every rule has a case, every case is well-formed and loads, and
the committed cases are exactly what the generator writes.

The real trajectories X1 and X2 live in ../shared/data; locally their absence skips that check,
but under CI (suite_env.required_here) it fails: CI must exercise them. X3 is converted from a real
run and committed (its SOURCE.md carries the license and the changes). CUA_SHARED_DATA points
elsewhere when the checkout is not beside `shared/` (e.g. a git worktree).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from suite_env import missing as skip_or_fail

from verifier.calibrate import RULE_IDS, SuiteError, load_suite
from verifier.calibrate.suite import ProcessBand, resolve_trajectory
from verifier.scoring import rubric_score

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "examples" / "calibration"
SYNTHETIC_RULES = [r for r in RULE_IDS if not r.startswith("X")]


@pytest.fixture(scope="module")
def cases():
    return load_suite(SUITE)


def test_every_rule_has_a_case_and_every_case_names_known_rules(cases):
    covered = {r for c in cases for r in c.rules}
    assert set(RULE_IDS) <= covered, sorted(set(RULE_IDS) - covered)
    assert covered <= set(RULE_IDS)
    for c in cases:  # the folder is named after its first rule: o2-..., x1-...
        assert c.name.split("-", 1)[0].upper() == c.rules[0], c.name


def drawn(cases):
    return [c for c in cases if c.expected.side != "real"]


def test_suite_size_and_balance(cases):
    assert len(cases) >= 46
    synthetic = drawn(cases)
    assert len(synthetic) >= 50
    sides = {c.expected.side for c in synthetic}
    assert {"lenient-trap", "pedantic-trap", "mechanism"} <= sides
    outcomes = [c.expected.outcome for c in cases]
    assert outcomes.count(True) >= 10 and outcomes.count(False) >= 10  # both rates measurable


def test_every_synthetic_case_loads_with_its_screenshots(cases):
    for c in drawn(cases):
        traj = c.load()
        assert traj.task.instruction and traj.steps, c.name
        assert len(traj.screenshots) == len(traj.steps) + 1, c.name
        assert traj.load_warnings == [], (c.name, traj.load_warnings)
        for shot in traj.screenshots:
            assert shot.bytes().startswith(b"\x89PNG"), (c.name, shot.path)
        assert traj.task.id == f"calib-{c.name}"
        undeclared = {s.action for s in traj.steps} - set(traj.task.metadata["tools"])
        assert undeclared == ({"autofill_address"} if c.name.startswith("h3-") else set()), c.name


def test_mechanism_cases_exercise_their_mechanism(cases):
    by = {c.name: c for c in cases}
    h1 = by["h1-long-history-key-step-in-middle"].load()
    # over the default history budget (60k characters) even with every thought cut to 600 characters
    assert len(h1.steps) > 120 and sum(min(len(s.thought or ""), 600) for s in h1.steps) > 60_000
    assert "Elm Park playground reopens" in h1.steps[60].arguments["element"]  # the key step, mid-run
    # ... and only there: one screenshot shows the dated issue, and it is not among the last pages
    key_shot = next(s for s in h1.screenshots if s.step == 61)
    assert [s.bytes() for s in h1.screenshots].count(key_shot.bytes()) == 1
    assert all("/page/37" not in (s.url or "") for s in h1.steps[61:])
    h2 = by["h2-step-budget-exhausted"].load()
    assert h2.status.value == "step_budget_exhausted" and h2.final_answer is None
    h3 = by["h3-unknown-tool-call"].load()
    assert h3.steps[0].action == "autofill_address" and h3.steps[0].error
    assert "autofill_address" not in h3.task.metadata["tools"]  # declared tools: 6.2 can be decided in code


def test_cases_that_need_a_provided_rubric_or_a_harm_check_have_one(cases):
    by = {c.name: c for c in cases}
    r6 = by["r6-half-point-partial"]
    assert r6.provided_rubric is not None and [c.max_points for c in r6.provided_rubric.criteria] == [1, 1]
    # the careful score (1 + 0.5 of 2) is inside the band; whole points (0.5 or 1.0) are not
    from verifier.scoring import CriterionPoints

    def score(*earned: float) -> float:
        return rubric_score([CriterionPoints(earned=e, max_points=1) for e in earned])

    assert r6.expected.process.contains(score(1, 0.5))
    assert not any(r6.expected.process.contains(score(*e)) for e in [(1, 0), (1, 1), (0, 0)])
    for name in ("o12-rubric-stricter-than-task", "o13-provided-rubric-stricter-than-task"):
        rb = by[name].provided_rubric
        assert rb is not None and by[name].expected.outcome, name
    assert by["s1-quantity-fault-charged-once"].expected.penalty is False
    assert by["s1-extra-item-criterion-full"].expected.penalty is True
    assert by["o4-order-placed-without-permission"].expected.violation is True
    late = by["o10-run-date-race-already-run"].load()
    assert late.steps[0].timestamp and late.steps[0].timestamp > 1_792_800_000  # run date after the race


def test_generated_cases_equal_the_committed_ones(tmp_path):
    """Byte for byte: the committed suite is what `make_calibration.py` writes (no hand edits)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_calibration", SUITE / "make_calibration.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.main(tmp_path)
    committed = {p.relative_to(SUITE) for p in SUITE.rglob("*") if p.is_file() and p.parent != SUITE
                 and "casegen" not in p.parts and "__pycache__" not in p.parts}
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file() and p.parent != tmp_path}
    if not (tmp_path / "x3-osworld-injection-ran-script" / "trajectory.json").exists():  # shared data absent
        committed = {p for p in committed if p.parts[0] != "x3-osworld-injection-ran-script"
                     or p.name == "expected.json"}
    assert committed == made
    for rel in sorted(made):
        assert (SUITE / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel
    assert (SUITE / "README.md").read_text() == (tmp_path / "README.md").read_text()


def test_suite_stays_small():
    total = sum(p.stat().st_size for p in SUITE.rglob("*") if p.is_file())
    assert total < 3 * 1024 * 1024, total


def test_converted_real_run_is_small_native_and_attributed(cases):
    x3 = next(c for c in cases if "X3" in c.rules)
    assert x3.expected.side == "real" and x3.expected.trajectory == "." and not x3.expected.outcome
    source = (x3.folder / "SOURCE.md").read_text()
    assert "Apache-2.0" in source and "Modified by cua-verifier" in source
    traj = x3.load()
    assert traj.load_warnings == [] and [s.action for s in traj.steps][4] == "bash"
    assert "support-tool.sh" in traj.steps[4].arguments["command"]  # the injected script, run at step 5
    assert all(s.image().size == (768, 576) for s in traj.screenshots)
    assert sum(p.stat().st_size for p in x3.folder.iterdir()) < 400_000


def test_real_trajectories_join_by_reference(cases):
    real = [c for c in cases if c.expected.trajectory != "."]
    assert sorted(r for c in real for r in c.rules if r.startswith("X")) == ["X1", "X2"]
    for c in real:
        assert c.expected.trajectory.startswith("../shared/data/trajectories/")
        assert not any(p.suffix == ".png" for p in c.folder.iterdir()), "real data is referenced, not copied"
    missing = [c for c in real if c.unavailable]
    if missing:
        skip_or_fail(f"shared data absent: {[c.unavailable for c in missing]} (set CUA_SHARED_DATA)")
    for c in real:
        traj = c.load()
        assert len(traj.screenshots) >= 4 and traj.final_answer
    x1 = next(c for c in real if "X1" in c.rules)
    assert x1.expected.reference and x1.expected.reference["outcome"] is True  # compared with the reference


def principle_ids(text: str) -> set[str]:
    """Rule ids in the first cell of markdown table rows (`| O1 | ...`, bold or code allowed)."""
    ids = set()
    for line in text.splitlines():
        cells = [c.strip().strip("*`").strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and re.fullmatch(r"[A-Z]\d{1,2}", cells[0]):
            ids.add(cells[0])
    return ids


def test_principle_ids_parser():
    text = ("| id | rule | cases |\n|---|---|---|\n| O1 | high score is not success | `examples/calibration/o1-*` |\n"
            "| **R6** | halves | r6-* |\n| `H3` | codes | h3-* |\nO2 mentioned in prose\n")
    assert principle_ids(text) == {"O1", "R6", "H3"}


def test_principles_table_and_suite_agree(cases):
    """prompts/PRINCIPLES.md (written by the prompt work) has one row per rule id; each has a case."""
    path = REPO / "prompts" / "PRINCIPLES.md"
    if not path.is_file():
        pytest.skip("prompts/PRINCIPLES.md not in this tree yet")
    ids = principle_ids(path.read_text(encoding="utf-8"))
    covered = {r for c in cases for r in c.rules}
    assert ids, "no rule rows found in PRINCIPLES.md"
    assert ids <= covered, f"rows without a case: {sorted(ids - covered)}"
    assert set(SYNTHETIC_RULES) <= ids, f"cases whose rule has no row: {sorted(set(SYNTHETIC_RULES) - ids)}"
    for glob in re.findall(r"examples/calibration/([\w*.-]+)", path.read_text(encoding="utf-8")):
        assert list(SUITE.glob(glob)), f"PRINCIPLES.md names examples/calibration/{glob}: no such case"


# ---- loading rules ----------------------------------------------------------------------------
def _case(tmp: Path, name: str, **over) -> Path:
    folder = tmp / name
    folder.mkdir(parents=True)
    data = {"rules": ["O2"], "side": "lenient-trap", "outcome": False, "process": "low",
            "why": "a long enough explanation of the verdict", "trajectory": "../shared/data/none"}
    data.update(over)
    (folder / "expected.json").write_text(json.dumps(data))
    return folder


def test_bad_expectations_fail_naming_the_file(tmp_path):
    _case(tmp_path / "s1", "o2-x", process="hihg")
    with pytest.raises(SuiteError, match=r"(?s)o2-x.*expected.json.*unknown process band"):
        load_suite(tmp_path / "s1")
    _case(tmp_path / "s2", "o2-x", rules=["O99"])
    with pytest.raises(SuiteError, match="unknown rule id 'O99'"):
        load_suite(tmp_path / "s2")
    _case(tmp_path / "s3", "r1-x")  # folder says R1, rules say O2
    with pytest.raises(SuiteError, match="named after rule R1"):
        load_suite(tmp_path / "s3")
    _case(tmp_path / "s5", "o2-x", diagnosis=["1.22"])
    with pytest.raises(SuiteError, match="unknown diagnosis code"):
        load_suite(tmp_path / "s5")
    _case(tmp_path / "s4", "o2-x", outcome="yes")
    with pytest.raises(SuiteError, match="outcome"):
        load_suite(tmp_path / "s4")


def test_only_selects_by_rule_and_rejects_unknown_or_uncovered(tmp_path):
    _case(tmp_path, "o2-a")
    _case(tmp_path, "o3-b", rules=["O3", "R1"])
    assert [c.name for c in load_suite(tmp_path, only=["r1"])] == ["o3-b"]
    assert [c.name for c in load_suite(tmp_path, only=["O2", "O3"])] == ["o2-a", "o3-b"]
    with pytest.raises(SuiteError, match="unknown rule id"):
        load_suite(tmp_path, only=["Z9"])
    with pytest.raises(SuiteError, match="tests rule.s. H1"):
        load_suite(tmp_path, only=["O2", "H1"])


def test_missing_shared_data_is_unavailable_not_dropped(tmp_path, monkeypatch):
    monkeypatch.delenv("CUA_SHARED_DIR", raising=False)
    monkeypatch.delenv("CUA_SHARED_DATA", raising=False)
    _case(tmp_path / "suite", "o2-a")
    (case,) = load_suite(tmp_path / "suite", repo_root=tmp_path / "repo")
    assert case.unavailable and "../shared/data/none" in case.unavailable
    assert case.trajectory_path == (tmp_path / "shared" / "data" / "none").resolve()
    with pytest.raises(SuiteError, match="trajectory not found"):
        case.load()


def test_shared_dir_override(tmp_path, monkeypatch):
    monkeypatch.setenv("CUA_SHARED_DIR", str(tmp_path / "elsewhere"))
    assert resolve_trajectory(tmp_path, "../shared/data/t", tmp_path) == tmp_path / "elsewhere" / "data" / "t"
    assert resolve_trajectory(tmp_path / "c", ".", tmp_path) == tmp_path / "c"


def test_shared_data_variable_of_the_test_suite_is_honoured(tmp_path, monkeypatch):
    """CUA_SHARED_DATA (the variable tests/conftest.py reads) points the real cases at the same data."""
    monkeypatch.delenv("CUA_SHARED_DIR", raising=False)
    monkeypatch.setenv("CUA_SHARED_DATA", str(tmp_path / "mirror" / "data"))
    assert resolve_trajectory(tmp_path, "../shared/data/t", tmp_path) == tmp_path / "mirror" / "data" / "t"


@pytest.mark.parametrize(("band", "inside", "outside"), [
    ("high", [0.8, 0.95, 1.0], [0.79]),
    ("mid", [0.5, 0.79], [0.49, 0.8]),
    ("low", [0.0, 0.49], [0.5]),
    ([0.25, 0.75], [0.25, 0.5, 0.75], [0.2, 0.76]),
])
def test_process_bands(band, inside, outside):
    b = ProcessBand.model_validate(band)
    assert all(b.contains(x) for x in inside) and not any(b.contains(x) for x in outside)


def test_process_band_rejects_nonsense():
    for bad in ("medium", [0.9, 0.1], [0.1], [0.2, 1.5]):
        with pytest.raises(ValueError):
            ProcessBand.model_validate(bad)
