"""Prompt templates: versioned Jinja files in `prompts/`, rendered strictly, hashed.

A template file starts with a header comment ``{# id: <id> version: <n> #}``. Every rendered
prompt carries its id, version and the sha256 of the template source, and every result records
them, so a verdict can always be traced to the exact wording that produced it.

Templates live in the repository's top-level `prompts/` folder; the wheel ships them as
`verifier/_prompts` (see pyproject.toml), which is looked up first.
"""
from __future__ import annotations

import hashlib
import re
from functools import cache, lru_cache
from pathlib import Path

import jinja2
from pydantic import BaseModel

_HEADER = re.compile(r"\{#\s*id:\s*(?P<id>[\w.\-]+)\s+version:\s*(?P<version>[\w.\-]+)\s*#\}")


@cache
def prompts_dir() -> Path:
    """The templates folder (resolved once per process: every judge call records its prompts)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_prompts", here.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("prompt templates not found (expected verifier/_prompts or ../prompts)")


class PromptInfo(BaseModel):
    id: str
    version: str
    sha256: str


class RenderedPrompt(BaseModel):
    text: str
    info: PromptInfo


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(prompts_dir())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        # Templates are read once per process, like `prompt_info`'s hash: no stat per render, and
        # a file edited mid-run can never be rendered under the hash recorded for the old text.
        auto_reload=False,
    )


@cache
def prompt_info(name: str) -> PromptInfo:
    """Id, version and hash of template `name` (e.g. "rubric.user.j2")."""
    source = (prompts_dir() / name).read_text(encoding="utf-8")
    m = _HEADER.search(source)
    if not m:
        raise ValueError(f"prompt template {name} lacks a '{{# id: ... version: ... #}}' header")
    return PromptInfo(id=m["id"], version=m["version"],
                      sha256=hashlib.sha256(source.encode()).hexdigest())


def render(name: str, **variables: object) -> RenderedPrompt:
    """Render template `name` with StrictUndefined (a missing variable is an error, not "").
    A template rendered with no variables is rendered once per process (`render_plain`)."""
    return _rendered(name, variables) if variables else render_plain(name)


@cache
def render_plain(name: str) -> RenderedPrompt:
    """`render(name)` with no variables: the same text every time, so rendered once (a stage's
    instructions are rendered for each of its calls: 50 per verification at M = 50). Callers must
    not mutate the returned prompt."""
    return _rendered(name, {})


def _rendered(name: str, variables: dict[str, object]) -> RenderedPrompt:
    text = _env().get_template(name).render(**variables).strip()
    return RenderedPrompt(text=text, info=prompt_info(name))
