"""The experiment spec (`experiment run SPEC.yaml`): a baseline arm, candidate arms, a labelled set.

Why a file rather than flags: an experiment is the unit the paper's design loop commits or rolls
back (its Tables 17-18), so it must be re-runnable and diffable as one document. Every path in it
is read relative to the spec's own folder, so the spec and its overlays travel together.

    name: stricter-outcome
    repeats: 3                       # R: each arm is scored R times on the same items
    labelled:                        # exactly one of calibration / bench / trajectories
      calibration: {suite: examples/calibration, only: [O2, R1]}
    judge: {base_urls: ["http://127.0.0.1:8010/v1"], model: judge}   # every arm's, unless it names one
    baseline: {name: baseline}
    arms:
      - name: strict
        prompts: overlays/strict     # a prompt overlay folder (see verifier.prompts)
        config: {votes: 3}           # VerifierConfig overrides
        judge: {model: other-judge}  # JudgeConfig overrides of this arm's judge
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import ConfigError

ARM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ExperimentSpecError(ConfigError):
    """A spec that cannot be run (names the problem); raised before any judge call."""


class ArmSpec(BaseModel):
    """One variant: what it changes relative to the packaged verifier, never a name-only identity."""

    model_config = ConfigDict(extra="forbid")

    name: str
    prompts: str | None = None
    """Prompt overlay folder (relative to the spec)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """VerifierConfig overrides."""
    judge: dict[str, Any] = Field(default_factory=dict)
    """JudgeConfig overrides on top of the spec's `judge`."""

    @model_validator(mode="after")
    def _name(self) -> ArmSpec:
        if not ARM_NAME.match(self.name):
            raise ValueError(f"arm name {self.name!r}: letters, digits, '_', '.', '-' only (it names a folder)")
        return self


class CalibrationSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: str | None = None
    """Suite folder (default: examples/calibration of this checkout)."""
    only: list[str] | None = None


class BenchSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    split: Literal["fara7b_om2w_browserbase", "internal"]
    data_dir: str | None = None
    """Local parquet files (None: the hub, at the pinned revision)."""
    limit: int | None = Field(default=None, ge=1)
    label_source: Literal["final", "uv_blind"] = "final"


class TrajectorySet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(min_length=1)
    labels: str
    """A labels CSV in the format `bench --from-labels` reads (one row per task_id)."""
    label_source: Literal["final", "uv_blind"] = "final"


class LabelledSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calibration: CalibrationSet | None = None
    bench: BenchSet | None = None
    trajectories: TrajectorySet | None = None

    @model_validator(mode="after")
    def _one(self) -> LabelledSet:
        given = [k for k in ("calibration", "bench", "trajectories") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"`labelled` names exactly one of calibration, bench, trajectories (got {given or 'none'})")
        return self


class ExperimentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "experiment"
    repeats: int = Field(default=3, ge=1, le=50)
    labelled: LabelledSet
    judge: dict[str, Any] = Field(default_factory=dict)
    baseline: ArmSpec
    arms: list[ArmSpec] = Field(min_length=1)
    fixed_rubrics: str | None = None
    """JSONL of {task_id, rubric}: every arm scores against these rubrics (`--fixed-rubrics`)."""
    concurrency: int = Field(default=4, ge=1, le=256)
    """Verifications in flight per arm."""
    none_if_degraded: list[str] | None = None
    """As in --config: results degraded in these stages are unscored (None: the reward's default)."""
    folder: Path = Field(default=Path("."), exclude=True)
    """Where relative paths are read from (the spec file's folder)."""

    @model_validator(mode="after")
    def _distinct(self) -> ExperimentSpec:
        names = [self.baseline.name, *(a.name for a in self.arms)]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"arm names must be distinct: {dup}")
        return self

    @property
    def all_arms(self) -> list[ArmSpec]:
        return [self.baseline, *self.arms]

    def path(self, relative: str) -> Path:
        p = Path(relative).expanduser()
        return p if p.is_absolute() else self.folder / p


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read a YAML (or JSON, by its suffix) spec; every error names the file."""
    from ..settings import read_config_file

    path = Path(path)
    try:
        data = read_config_file(path, what="experiment spec")
    except ConfigError as exc:
        raise ExperimentSpecError(str(exc)) from exc
    if not isinstance(data, dict):
        raise ExperimentSpecError(f"{path}: expected a mapping at the top level")
    try:
        return ExperimentSpec.model_validate({**data, "folder": path.resolve().parent})
    except ValidationError as exc:
        raise ExperimentSpecError(f"{path}: {exc}") from exc
