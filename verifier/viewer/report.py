"""Reports in the viewer's look: a title, some facts, then sections of tables and figures.

A generic API, so any command with tabular results renders through the same templates and style:
`bench` builds its sections from its agreement rows; a report that is a pydantic model can be shown
as is with `model_sections(model)` (scalars become a key/value table, lists of models a table with a
column per field, nested models their own section)::

    from verifier.viewer import render_report, model_sections
    render_report("Calibration", model_sections(report), out_dir / "report.html")
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup
from pydantic import BaseModel, Field

from .render import fmt_num, write_page
from .svg import ci_bar


class Cell(BaseModel):
    """One table cell: text (escaped), optional link, small note (e.g. a CI) and CSS class."""

    text: str = ""
    href: str | None = None
    note: str = ""
    cls: str = ""
    ci: tuple[float, float, float] | None = None
    """(value, low, high): drawn as a small interval glyph next to the text."""


class Table(BaseModel):
    title: str = ""
    columns: list[str]
    rows: list[list[Cell]] = Field(default_factory=list)
    row_classes: list[str] = Field(default_factory=list)
    caption: str = ""

    @classmethod
    def of(cls, columns: Sequence[str], rows: Iterable[Sequence[Any]], **kw: Any) -> Table:
        """Build from plain values: a `Cell` is kept, anything else becomes its text."""
        return cls(columns=list(columns), rows=[[cell(v) for v in row] for row in rows], **kw)


class Figure(BaseModel):
    title: str = ""
    svg: str
    """Trusted markup built by `verifier.viewer.svg` or `confusion_matrix` (never raw user text)."""
    caption: str = ""


class Section(BaseModel):
    title: str
    intro: str = ""
    tables: list[Table] = Field(default_factory=list)
    figures: list[Figure] = Field(default_factory=list)


def cell(v: Any) -> Cell:
    if isinstance(v, Cell):
        return v
    if isinstance(v, float):
        return Cell(text=fmt_num(v, 3))
    return Cell(text="" if v is None else str(v))


def render_report(
    title: str,
    sections: Sequence[Section],
    out: str | Path,
    *,
    meta: Sequence[tuple[str, str]] = (),
    notes: Sequence[str] = (),
    links: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write one self-contained HTML report (inline CSS, inline SVG) to `out`."""
    return write_page(
        Path(out),
        "report.html.j2",
        title=title,
        sections=list(sections),
        meta=list(meta),
        notes=list(notes),
        links=list(links),
        Markup=Markup,
        ci_glyph=lambda ci: ci_bar(*ci),
    )


def confusion_matrix(tp: int, fp: int, fn: int, tn: int, title: str) -> Figure:
    """A 2x2 matrix as an HTML grid (rows: human, columns: verifier), shaded by count."""
    top = max(tp, fp, fn, tn, 1)

    def td(v: int, kind: str) -> str:
        alpha = 0.12 + 0.75 * v / top
        return (
            f'<td class="cm-{kind}" style="background:rgba(56,103,214,{alpha:.2f});'
            f'color:{"#fff" if alpha > 0.55 else "#111"}"><b>{v}</b><small>{kind}</small></td>'
        )

    grid = (
        '<table class="confusion"><tr><th></th><th>verifier fail</th><th>verifier success</th></tr>'
        f"<tr><th>human fail</th>{td(tn, 'tn')}{td(fp, 'fp')}</tr>"
        f"<tr><th>human success</th>{td(fn, 'fn')}{td(tp, 'tp')}</tr></table>"
    )
    return Figure(title=title, svg=grid)


# ---- generic: any pydantic report ----------------------------------------------------------------
def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _show(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else fmt_num(v, 3)
    if _scalar(v):
        return "" if v is None else str(v)
    if isinstance(v, BaseModel):
        v = v.model_dump(mode="json")
    return json.dumps(v, ensure_ascii=False, default=str)


def model_sections(model: BaseModel, title: str | None = None) -> list[Section]:
    """Sections for any pydantic model: its scalars, its lists of models as tables, nested models."""
    name = title or type(model).__name__
    data = {k: getattr(model, k) for k in type(model).model_fields}
    scalars = [
        (k, _show(v))
        for k, v in data.items()
        if _scalar(v)
        or (
            isinstance(v, (list, dict))
            and all(_scalar(x) for x in (v.values() if isinstance(v, dict) else v))
        )
    ]
    sections = [Section(title=name, tables=[Table.of(["field", "value"], scalars)])] if scalars else []
    for k, v in data.items():
        if isinstance(v, BaseModel):
            sections += model_sections(v, title=f"{name}: {k}")
        elif isinstance(v, list) and v and all(isinstance(x, BaseModel) for x in v):
            cols = list(dict.fromkeys(f for x in v for f in type(x).model_fields))
            rows = [[_show(getattr(x, c, None)) for c in cols] for x in v]
            sections.append(Section(title=f"{name}: {k}", tables=[Table.of(cols, rows)]))
        elif isinstance(v, dict) and v and all(isinstance(x, BaseModel) for x in v.values()):
            cols = list(dict.fromkeys(f for x in v.values() for f in type(x).model_fields))
            rows = [[key, *[_show(getattr(x, c, None)) for c in cols]] for key, x in v.items()]
            sections.append(Section(title=f"{name}: {k}", tables=[Table.of(["key", *cols], rows)]))
    return sections
