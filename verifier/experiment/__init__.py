"""`cua-verifier experiment`: the paper's design loop as a command (issue 37).

Compare prompt and config variants (arms) on labelled data against run-to-run noise, and accept a
change only when agreement rises without raising false positives. See docs/experiment.md.

- `spec`: the experiment file; `items`: the labelled set (and fixed rubrics);
- `arms`: arms resolved and identified by content; `sharing`: judge calls shared between arms,
  never between repeats; `runner`: the resumable, exactly-once run;
- `stats`: the pure statistics (paired bootstrap, decision rule); `report`, `report_html`.
"""
from __future__ import annotations

from .arms import Arm, resolve_arms
from .items import Item, ItemLabel, load_fixed_rubrics, load_items
from .runner import RunLine, format_run, run_experiment
from .sharing import SharedCallsJudge, Tally
from .spec import ArmSpec, ExperimentSpec, ExperimentSpecError, load_spec

__all__ = ["Arm", "ArmSpec", "ExperimentSpec", "ExperimentSpecError", "Item", "ItemLabel", "RunLine",
           "SharedCallsJudge", "Tally", "format_run", "load_fixed_rubrics", "load_items", "load_spec",
           "resolve_arms", "run_experiment"]
