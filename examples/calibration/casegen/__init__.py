"""The calibration cases, one module per group of rules; `all_cases()` lists them in suite order.

Each module returns `Case` objects (see `draw.py`): the pages the agent saw, its steps, its answer
and the verdict a careful human gives. `make_calibration.py` writes them out; the one real run that
is converted rather than drawn (`x3-*`) is written by `osworld.write_osworld`.
"""
from __future__ import annotations

from .cascade import cascade_cases
from .draw import Case
from .judgement import judgement_cases
from .outcome import outcome_cases
from .outcome_more import more_outcome_cases
from .rescoring import rescoring_cases
from .rubric import rubric_cases
from .shown import shown_cases
from .side_effects import hack_cases, side_effect_cases


def all_cases() -> list[Case]:
    return (outcome_cases() + more_outcome_cases() + rescoring_cases() + side_effect_cases() + rubric_cases()
            + cascade_cases() + shown_cases() + hack_cases() + judgement_cases())
