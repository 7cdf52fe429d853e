"""Arms resolved before any judge call: overlay checked, config built, judge settings merged, and an
identity computed from *content* (every prompt hash, the full config, the judge settings).

Why content, not names: the paper's loop commits or rolls back a change, and a change is a text or
a setting. Two arms whose content is identical measure nothing but noise, so they are refused; an
output folder re-run with an arm whose content changed under the same name is refused too (its
earlier repeats would be mixed with the new ones).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..config import VerifierConfig
from ..errors import ConfigError
from ..overlay import check_overlay
from ..prompts import prompt_info, prompt_overlay, prompts_dir
from .spec import ArmSpec, ExperimentSpec, ExperimentSpecError


class Arm(BaseModel):
    """One resolved arm, as written to ``experiment.json``."""

    name: str
    baseline: bool = False
    prompts_dir: str | None = None
    replaced: dict[str, str] = {}
    """Templates the overlay replaces: name -> the overlay file's sha256."""
    prompt_hashes: dict[str, str] = {}
    """Every template the arm renders with: name -> sha256 (its identity, with config and judge)."""
    config_overrides: dict[str, Any] = {}
    config: dict[str, Any] = {}
    judge: dict[str, Any] = {}
    judge_key: str = ""
    """Identity of the judge settings: arms with the same key share a client and its calls."""
    fingerprint: str = ""

    def verifier_config(self) -> VerifierConfig:
        return VerifierConfig(**self.config_overrides)

    def overlay(self) -> Path | None:
        return None if self.prompts_dir is None else Path(self.prompts_dir)


def _digest(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _all_hashes(overlay: Path | None) -> dict[str, str]:
    names = sorted(p.relative_to(prompts_dir()).as_posix() for p in prompts_dir().rglob("*.j2"))
    with prompt_overlay(overlay):
        return {n: prompt_info(n).sha256 for n in names}


def resolve_arm(spec: ExperimentSpec, a: ArmSpec, *, baseline: bool) -> Arm:
    overlay, replaced = None, {}
    if a.prompts is not None:
        overlay = spec.path(a.prompts).resolve()
        try:
            replaced = {n: i.sha256 for n, i in check_overlay(overlay).items()}
        except ConfigError as exc:
            raise ExperimentSpecError(f"arm {a.name}: {exc}") from exc
    try:
        config = VerifierConfig(**a.config)
    except ValueError as exc:
        raise ExperimentSpecError(f"arm {a.name}: invalid config overrides: {exc}") from exc
    judge = {**spec.judge, **a.judge}
    if judge.get("cache_dir"):
        raise ExperimentSpecError(f"arm {a.name}: judge cache_dir would replay one repeat's replies in the "
                                  "others; leave it out (arms share unchanged calls without it)")
    hashes = _all_hashes(overlay)
    cfg = config.model_dump(mode="json")
    arm = Arm(name=a.name, baseline=baseline, prompts_dir=None if overlay is None else str(overlay),
              replaced=replaced, prompt_hashes=hashes, config_overrides=dict(a.config), config=cfg,
              judge=judge, judge_key=_digest(judge))
    arm.fingerprint = _digest({"prompts": hashes, "config": cfg, "judge": judge})
    return arm


def resolve_arms(spec: ExperimentSpec) -> list[Arm]:
    """Baseline first; raises ExperimentSpecError for a bad overlay/config or two identical arms."""
    arms = [resolve_arm(spec, spec.baseline, baseline=True)] + [resolve_arm(spec, a, baseline=False)
                                                               for a in spec.arms]
    seen: dict[str, str] = {}
    for arm in arms:
        if arm.fingerprint in seen:
            raise ExperimentSpecError(f"arms {seen[arm.fingerprint]} and {arm.name} are identical (same prompt "
                                      "hashes, config and judge): the comparison would measure only noise")
        seen[arm.fingerprint] = arm.name
    return arms
