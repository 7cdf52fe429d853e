"""The result viewer: a static site of verdicts (`build_site`) and reports in the same look
(`render_report`). Pages open from disk; see the README, section "Looking at results"."""

from __future__ import annotations

from .report import Cell, Figure, Section, Table, confusion_matrix, model_sections, render_report
from .site import SiteStats, build_site

__all__ = [
    "Cell",
    "Figure",
    "Section",
    "SiteStats",
    "Table",
    "build_site",
    "confusion_matrix",
    "model_sections",
    "render_report",
]
