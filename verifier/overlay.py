"""Checking a prompt overlay folder before any judge call (`--prompts DIR`, an experiment arm).

Why up front: an overlay is hand-written, and a typo in a file name silently keeps the packaged
template (the arm then measures nothing), while a template that does not render fails every
verification one by one, after the rubric calls were already paid for. So an overlay must only
name templates the package has, each with its ``{# id: ... version: ... #}`` header, and every
stage prompt (and the shared system prompt, which includes the principle blocks) must render
with it in place. `verifier.prompts` does the rendering; this module only says whether it will.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from .errors import ConfigError
from .prompts import PromptInfo, environment, prompt_overlay, prompts_dir, render
from .schemas import PermissionProfile

SYSTEM_TEMPLATE = "system.j2"
#: Sample variables of the templates that take some (the rest of the stage prompts take none).
_SAMPLES: dict[str, list[dict[str, Any]]] = {
    SYSTEM_TEMPLATE: [{"rules": False}, {"rules": True, "profile": PermissionProfile()}],
    "context.user.j2": [{"task": "t", "start_url": None, "rubric": None, "history": None,
                         "history_note": "", "status": "", "run_date": None, "final_answer": None,
                         "n_screenshots": 1}],
}


class PromptOverlayError(ConfigError):
    """An overlay that names an unknown template, lacks a header, or does not render."""


def _templates(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.j2") if p.is_file())


def _stage_templates() -> list[str]:
    """The pipeline's own prompts: every packaged template outside baselines/ and principles/."""
    return [n for n in _templates(prompts_dir()) if "/" not in n]


def check_overlay(folder: str | Path) -> dict[str, PromptInfo]:
    """The templates `folder` replaces (name -> the overlay's id/version/hash); raises
    `PromptOverlayError` naming every problem found."""
    from .prompts import _info  # the overlay's own hash, whatever overlay is current

    root = Path(folder).resolve()
    if not root.is_dir():
        raise PromptOverlayError(f"prompt overlay {folder}: not a folder")
    names = _templates(root)
    if not names:
        raise PromptOverlayError(f"prompt overlay {folder}: no *.j2 template in it (it would replace nothing)")
    packaged = set(_templates(prompts_dir()))
    problems = [f"{n}: the package has no template of that name (see `prompts/`; a typo keeps the packaged one)"
                for n in names if n not in packaged]
    infos: dict[str, PromptInfo] = {}
    for name in (n for n in names if n in packaged):
        try:
            infos[name] = _info(name, root)
            environment(root).get_template(name)
        except ValueError as exc:
            problems.append(str(exc))
        except jinja2.TemplateSyntaxError as exc:
            problems.append(f"{name}: line {exc.lineno}: {exc.message}")
    if not problems:
        problems += _render_problems(root)
    if problems:
        raise PromptOverlayError(f"prompt overlay {folder}: " + "; ".join(problems))
    return infos


def _render_problems(root: Path) -> list[str]:
    """Every stage prompt rendered with the overlay in place, with the variables the pipeline
    passes; a template the packaged set cannot render that way either is not the overlay's fault."""
    problems = []
    for name in _stage_templates():
        for variables in _SAMPLES.get(name, [{}]):
            try:
                with prompt_overlay(root):
                    render(name, **variables)
            except jinja2.TemplateError as exc:
                try:
                    render(name, **variables)
                except jinja2.TemplateError:
                    continue
                problems.append(f"{name} does not render with the overlay: {type(exc).__name__}: {exc}")
                break
    return problems
