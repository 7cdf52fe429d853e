"""Configuration of the verification pipeline (what to compute), apart from the judge (where).

Every knob is documented once, by its attribute docstring; the CLI and the reward configs map
onto these fields. A result records the config it ran with, so two results are comparable only
when their `config` blocks agree.

Example::

    cfg = VerifierConfig(votes=3, top_k=5)            # 3 rescoring runs and 3 outcome votes
    result = await verify(trajectory, cfg, judge=judge)
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .vetoes import VetoId


class VerifierConfig(BaseModel):
    """Pipeline options. Defaults follow the paper (k=5, threshold 0.8, V=1)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    top_k: int = Field(default=5, ge=1, le=50)
    """Screenshots kept per criterion for evidence analysis (ties go to the later screenshot)."""
    prune: bool = True
    """Paper pruning: if a criterion has a screenshot scoring >7, earlier ones scoring <5 are dropped."""
    min_relevance: int = Field(default=1, ge=0, le=10)
    """(criterion, screenshot) pairs scoring below this are never analysed (0 keeps everything)."""
    relevance_batch_size: int = Field(default=1, ge=1, le=8)
    """Distinct screenshots scored per relevance call (1 = one call per screenshot, as the paper)."""
    votes: int = Field(default=1, ge=1, le=9)
    """V: independent rescoring runs (process score = their median) and outcome votes (majority).
    Must be odd so that a majority exists without invalid votes."""
    rescoring_median: Literal["run", "criterion"] = "run"
    """How V rescoring runs combine. "run": the process score is the median of the runs' scores and
    the median run's table is reported (the reference's choice). "criterion": each criterion's earned
    points are the median across runs (justification from the run that gave that value) and the
    process score is eq. 1 over those medians: steadier, one odd run moves one criterion only.
    Both take the lower middle value when failed runs leave an even count (a tie never passes)."""
    vote_temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature of the rescoring/outcome calls when votes > 1 (each vote gets its own seed);
    with votes == 1 the judge's own sampling is used."""
    process_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    """Process success means process score >= this."""
    rubric_audit: bool = False
    """A second rubric call that audits and repairs the draft (phantom criteria, overlaps,
    dependencies). Off by default: the first call already ends with a self-audit field."""
    penalty_mode: Literal["fraction", "dilute"] = "dilute"
    """How side-effect penalties lower the process score (see verifier.scoring.apply_penalties):
    "dilute" (the reference's E / (M + P), which reproduces its stored scores) or "fraction"."""
    penalty_fraction: float = Field(default=0.25, ge=0.0, le=1.0)
    """Share of the process score a 3-point penalty removes in "fraction" mode."""
    hallucination_gap: float = Field(default=0.3, ge=0.0, le=1.0)
    """Flag possible hallucination when the action-only score exceeds the screenshot score by this."""
    final_screenshots: int = Field(default=2, ge=0, le=4)
    """Last distinct screenshots attached to the rescoring and outcome calls themselves."""
    diagnosis: bool = True
    """Run failure diagnosis (2 calls: failure points + task ambiguity)."""
    max_thought_chars: int = Field(default=600, ge=0)
    """Agent thoughts longer than this are cut (middle elided) in the action history."""
    max_argument_chars: int = Field(default=300, ge=20)
    """Rendered tool arguments longer than this are cut."""
    max_history_chars: int = Field(default=60_000, ge=1000)
    """The rendered action history is middle-elided beyond this (first and last steps kept)."""
    allow_outside_screenshots: bool = False
    """Let screenshot paths lead outside the trajectory's folder (`../`, absolute paths, symlinks).
    Off by default: the paths come with the data, and any image they reach is sent to the judge.
    Read by the loaders of `score` / `score-dataset` (flag `--allow-outside-screenshots`)."""
    max_final_answer_chars: int = Field(default=6000, ge=200)
    """The final answer is middle-elided beyond this (head and tail kept) and the cut is recorded in
    `result.truncations`: it is repeated in most calls, so an unbounded answer costs every call."""

    vetoes_off: tuple[VetoId, ...] = ()
    """Code vetoes on the outcome to switch off, by rule id (V1-V6, verifier/vetoes.py and
    docs/judging-rules.md): each forces failure on what code can see, whatever the judge says.
    All are on by default; switching one off hands that failure back to the judge."""

    @field_validator("votes")
    @classmethod
    def _odd(cls, v: int) -> int:
        if v % 2 == 0:
            raise ValueError("votes must be odd (a majority needs an odd electorate)")
        return v
