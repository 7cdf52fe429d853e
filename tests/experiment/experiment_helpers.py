"""Helpers for the experiment tests (a module name of its own: several test folders have a conftest)."""
from __future__ import annotations

from pathlib import Path

from verifier.prompts import prompts_dir


def write_overlay(folder: Path, name: str, extra: str, *, version: str = "99") -> Path:
    """An overlay replacing packaged template `name` with its own text plus `extra` (version bumped)."""
    source = (prompts_dir() / name).read_text(encoding="utf-8")
    head, _, rest = source.partition("#}")
    head = head.rsplit("version:", 1)[0] + f"version: {version} "
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{head}#}}{rest.rstrip()}\n{extra}\n", encoding="utf-8")
    return folder
