"""Loading a calibration suite: one folder per case, `expected.json` beside (or pointing to) a trajectory.

Why pydantic models: the expected verdicts are written by hand, so a typo (an unknown rule id, a
process band "hihg", an outcome "yes") must fail at load time naming the file, not turn into a
silent mismatch in a report. A case may reference data outside the repository (the real
trajectories under `../shared/data/...`, resolved relative to the repository root, or below
`CUA_SHARED_DIR` when set); when that data is absent the case is loaded as *unavailable* and the
report lists it as such instead of dropping it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import CuaVerifierError
from ..schemas import Rubric
from ..trajectory import Trajectory
from .rules import RULES, canonical

EXPECTED_FILE = "expected.json"
SHARED_PREFIX = "../shared/"
BANDS = {"high": (0.8, 1.0, True), "mid": (0.5, 0.8, False), "low": (0.0, 0.5, False)}


class SuiteError(CuaVerifierError):
    """A calibration suite or case that cannot be read (names the file)."""


class ProcessBand(BaseModel):
    """The process scores a careful human accepts: a named band or an explicit closed range.

    Named bands are half-open so that they tile [0, 1]: low [0, 0.5), mid [0.5, 0.8), high [0.8, 1].
    """

    model_config = ConfigDict(frozen=True)

    label: str
    lo: float = Field(ge=0.0, le=1.0)
    hi: float = Field(ge=0.0, le=1.0)
    hi_inclusive: bool = True

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in BANDS:
                raise ValueError(f"unknown process band {value!r} (use {', '.join(BANDS)} or [lo, hi])")
            lo, hi, inclusive = BANDS[value]
            return {"label": value, "lo": lo, "hi": hi, "hi_inclusive": inclusive}
        if isinstance(value, (list, tuple)):
            if len(value) != 2 or not all(isinstance(v, (int, float)) for v in value):
                raise ValueError(f"a process range is [lo, hi], got {value!r}")
            return {"label": f"[{value[0]:g}, {value[1]:g}]", "lo": value[0], "hi": value[1]}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> ProcessBand:
        if self.lo > self.hi:
            raise ValueError(f"process range {self.label}: lo > hi")
        return self

    def contains(self, score: float) -> bool:
        return self.lo <= score <= self.hi if self.hi_inclusive else self.lo <= score < self.hi


class Expectation(BaseModel):
    """The verdict a careful human gives a case (the content of `expected.json`)."""

    model_config = ConfigDict(extra="forbid")

    rules: list[str] = Field(min_length=1)
    side: Literal["lenient-trap", "pedantic-trap", "mechanism", "real"]
    outcome: StrictBool
    process: ProcessBand
    diagnosis: list[str] = Field(default_factory=list)
    """Error codes of which at least one should appear (failure points or task-ambiguity codes)."""
    why: str = Field(min_length=20)
    trajectory: str = "."
    """Where the run is: "." (this folder) or a path relative to the repository root."""
    reference: dict[str, Any] | None = None
    """For real trajectories: what another verifier said and whether we agree."""
    penalty: StrictBool | None = None
    """Whether a careful human charges a side-effect penalty (None: not checked). Checked apart from
    the process band because a fault charged twice barely moves a score but changes what is blamed."""
    violation: StrictBool | None = None
    """Whether a careful human finds a critical-point violation (None: not checked)."""
    rubric: str | None = None
    """A provided rubric (`Rubric` JSON, a file in the case folder) scored instead of a generated
    one: the only way a case can present the judge with a rubric stricter than the task."""

    @field_validator("diagnosis")
    @classmethod
    def _codes(cls, codes: list[str]) -> list[str]:
        from ..schemas import ErrorCode

        known = {c.value for c in ErrorCode}
        bad = [c for c in codes if c not in known]
        if bad:
            raise ValueError(f"unknown diagnosis code(s) {bad} (known: {', '.join(sorted(known))})")
        return codes

    @field_validator("rules")
    @classmethod
    def _known(cls, rules: list[str]) -> list[str]:
        try:
            return [canonical(r) for r in rules]
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None


class Case(BaseModel):
    """One suite entry: its folder name, the expectation and where its trajectory is."""

    name: str
    folder: Path
    expected: Expectation
    trajectory_path: Path
    unavailable: str | None = None
    """Why the trajectory cannot be loaded (e.g. shared data absent); None when present."""
    provided_rubric: Rubric | None = None

    @property
    def rules(self) -> list[str]:
        return self.expected.rules

    def load(self) -> Trajectory:
        """The trajectory (any format the loaders know); raises TrajectoryError / SuiteError."""
        from ..loaders import load_trajectories

        if self.unavailable:
            raise SuiteError(f"case {self.name}: {self.unavailable}")
        trajs = list(load_trajectories(self.trajectory_path))
        if len(trajs) != 1:
            raise SuiteError(f"case {self.name}: expected one trajectory at {self.trajectory_path}, "
                             f"found {len(trajs)}")
        return trajs[0]


def default_suite_dir() -> Path | None:
    """examples/calibration of the checkout this package runs from (None when installed)."""
    folder = Path(__file__).resolve().parents[2] / "examples" / "calibration"
    return folder if folder.is_dir() else None


def resolve_trajectory(folder: Path, ref: str, repo_root: Path) -> Path:
    """'.' -> the case folder; '../shared/x' -> $CUA_SHARED_DIR/x when set (or, as the test suite
    reads it, the parent of $CUA_SHARED_DATA); else relative to the repo."""
    if ref in (".", ""):
        return folder
    data = os.environ.get("CUA_SHARED_DATA")
    shared = os.environ.get("CUA_SHARED_DIR") or (str(Path(data).parent) if data else None)
    if shared and ref.startswith(SHARED_PREFIX):
        return Path(shared) / ref[len(SHARED_PREFIX):]
    return (repo_root / ref).resolve()


def load_case(folder: Path, repo_root: Path) -> Case:
    path = folder / EXPECTED_FILE
    try:
        expected = Expectation.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, ValidationError) as exc:
        raise SuiteError(f"{path}: {exc}") from exc
    first = folder.name.split("-", 1)[0].upper()
    if first not in expected.rules:
        raise SuiteError(f"{path}: the folder is named after rule {first} but `rules` is {expected.rules}")
    traj = resolve_trajectory(folder, expected.trajectory, repo_root)
    missing = None if traj.exists() else f"trajectory not found: {expected.trajectory} (resolved to {traj})"
    return Case(name=folder.name, folder=folder, expected=expected, trajectory_path=traj, unavailable=missing,
                provided_rubric=_provided_rubric(folder, expected.rubric))


def _provided_rubric(folder: Path, name: str | None) -> Rubric | None:
    if name is None:
        return None
    path = folder / name
    if Path(name).name != name:
        raise SuiteError(f"{folder / EXPECTED_FILE}: `rubric` names a file in the case folder, got {name!r}")
    try:
        return Rubric.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError) as exc:
        raise SuiteError(f"{path}: {exc}") from exc


def load_suite(suite_dir: str | Path | None = None, *, only: list[str] | None = None,
               repo_root: str | Path | None = None) -> list[Case]:
    """Every case under `suite_dir` (sorted by name), or those naming one of the rule ids in `only`.

    `repo_root` (what "../shared/..." references resolve against) defaults to two folders up from
    the suite, which is the repository root for examples/calibration.
    """
    if suite_dir is None:
        suite_dir = default_suite_dir()
        if suite_dir is None:
            raise SuiteError("no calibration suite found: pass --suite DIR (examples/calibration in a checkout)")
    root = Path(suite_dir)
    if not root.is_dir():
        raise SuiteError(f"{root}: not a folder")
    base = Path(repo_root) if repo_root is not None else root.resolve().parent.parent
    cases = [load_case(f, base) for f in sorted(root.iterdir()) if (f / EXPECTED_FILE).is_file()]
    if not cases:
        raise SuiteError(f"{root}: no case folders (none holds {EXPECTED_FILE})")
    if only:
        try:
            wanted = {canonical(r) for r in only}
        except KeyError as exc:
            raise SuiteError(exc.args[0]) from None
        cases = [c for c in cases if wanted & set(c.rules)]
        empty = sorted(wanted - {r for c in cases for r in c.rules}, key=list(RULES).index)
        if empty:
            raise SuiteError(f"no case in {root} tests rule(s) {', '.join(empty)}")
    return cases
