"""Prompt templates: versioned Jinja files in `prompts/`, rendered strictly, hashed.

A template file starts with a header comment ``{# id: <id> version: <n> #}``. Every rendered
prompt carries its id, version and the sha256 of the template source, and every result records
them, so a verdict can always be traced to the exact wording that produced it.

Templates live in the repository's top-level `prompts/` folder; the wheel ships them as
`verifier/_prompts` (see pyproject.toml), which is looked up first.

A *prompt overlay* (`prompt_overlay(DIR)`, the CLI's ``--prompts DIR``) is a folder laid out like
`prompts/`: any template or principle block in it replaces the packaged one of the same name, the
rest stay packaged. It is a context variable, not a global, so two experiment arms can verify side
by side in one event loop with different wordings; every cache below is keyed by it, and the hash
recorded is the overlay file's, so a result names the exact text that produced it.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache, lru_cache
from pathlib import Path

import jinja2
from pydantic import BaseModel

_HEADER = re.compile(r"\{#\s*id:\s*(?P<id>[\w.\-]+)\s+version:\s*(?P<version>[\w.\-]+)\s*#\}")
_OVERLAY: ContextVar[Path | None] = ContextVar("cua_verifier_prompt_overlay", default=None)


@cache
def prompts_dir() -> Path:
    """The templates folder (resolved once per process: every judge call records its prompts)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_prompts", here.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("prompt templates not found (expected verifier/_prompts or ../prompts)")


def current_overlay() -> Path | None:
    """The overlay folder in effect in this context (None: the packaged templates only)."""
    return _OVERLAY.get()


@contextmanager
def prompt_overlay(folder: str | Path | None) -> Iterator[Path | None]:
    """Render with `folder`'s templates over the packaged ones inside the block (None: packaged).
    Tasks created inside the block inherit it (asyncio copies the context)."""
    token = _OVERLAY.set(None if folder is None else Path(folder).resolve())
    try:
        yield _OVERLAY.get()
    finally:
        _OVERLAY.reset(token)


def use_prompt_overlay(folder: str | Path | None) -> None:
    """Set the overlay for the rest of this context (a CLI run: `asyncio.run` copies it)."""
    _OVERLAY.set(None if folder is None else Path(folder).resolve())


def template_path(name: str, overlay: Path | None = None) -> Path:
    """Where template `name` is read from: the overlay's file when it has one, else the packaged."""
    if overlay is not None and (overlay / name).is_file():
        return overlay / name
    return prompts_dir() / name


class PromptInfo(BaseModel):
    id: str
    version: str
    sha256: str


class RenderedPrompt(BaseModel):
    text: str
    info: PromptInfo


def _make_env(searchpath: list[str]) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(searchpath),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        # Templates are read once per process, like `prompt_info`'s hash: no stat per render, and
        # a file edited mid-run can never be rendered under the hash recorded for the old text.
        auto_reload=False,
    )


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """The packaged templates' environment."""
    return _make_env([str(prompts_dir())])


@lru_cache(maxsize=32)
def _overlay_env(overlay: Path) -> jinja2.Environment:
    """The overlay's files first, then the packaged ones: an include of `principles/x.j2` inside a
    packaged template reads the overlay's block when the overlay has one."""
    return _make_env([str(overlay), str(prompts_dir())])


def environment(overlay: Path | None = None) -> jinja2.Environment:
    return _env() if overlay is None else _overlay_env(overlay)


def prompt_info(name: str) -> PromptInfo:
    """Id, version and hash of template `name` (e.g. "rubric.user.j2"), under the current overlay."""
    return _info(name, _OVERLAY.get())


@cache
def _info(name: str, overlay: Path | None) -> PromptInfo:
    source = template_path(name, overlay).read_text(encoding="utf-8")
    m = _HEADER.search(source)
    if not m:
        raise ValueError(f"prompt template {name} lacks a '{{# id: ... version: ... #}}' header")
    return PromptInfo(id=m["id"], version=m["version"],
                      sha256=hashlib.sha256(source.encode()).hexdigest())


def render(name: str, **variables: object) -> RenderedPrompt:
    """Render template `name` with StrictUndefined (a missing variable is an error, not "").
    A template rendered with no variables is rendered once per process (`render_plain`)."""
    return _rendered(name, variables, _OVERLAY.get()) if variables else render_plain(name)


def render_plain(name: str) -> RenderedPrompt:
    """`render(name)` with no variables: the same text every time, so rendered once per overlay (a
    stage's instructions are rendered for each of its calls: 50 per verification at M = 50).
    Callers must not mutate the returned prompt."""
    return _plain(name, _OVERLAY.get())


@cache
def _plain(name: str, overlay: Path | None) -> RenderedPrompt:
    return _rendered(name, {}, overlay)


def _rendered(name: str, variables: dict[str, object], overlay: Path | None) -> RenderedPrompt:
    text = environment(overlay).get_template(name).render(**variables).strip()
    return RenderedPrompt(text=text, info=_info(name, overlay))


def clear_caches() -> None:
    """Forget every template read and render (tests that swap `prompts_dir`)."""
    for f in (_env, _overlay_env, _info, _plain):
        f.cache_clear()
