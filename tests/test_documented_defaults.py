"""Claims the docs make that the code can check (issue 35 §6): every default the docs give for a
settings field equals the settings model's default, and the README's statements about the linters
and the publishing extra match pyproject.

Why mechanical: the reward README said the breaker opened "after 10 consecutive transport
failures" long after the code moved to a ratio over a window with 20 known requests; a reader
cannot tell which one is stale, a test can.

What counts as a claim (Markdown in README.md, reward/README.md, docs/*.md), `NAME` a backticked
field name, optionally `judge.` / `verifier.` prefixed:
- "`NAME` (default VALUE" and "`NAME` (VALUE)";
- "`NAME`, VALUE;" / "`NAME`, VALUE," and "`NAME`, default VALUE)" (the reward README's inline forms);
- a table row with no inline claim whose first cell lists names and whose other cells give
  "(default VALUE" once per name, in the same order.
Names that are not fields of `RewardSettings`, `JudgeConfig` or `VerifierConfig` are not claims;
a plain name several of them have must match one of their defaults.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from verifier.config import VerifierConfig
from verifier.judge.config import JudgeConfig
from verifier.settings import RewardSettings

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "reward" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAME = r"`((?:judge\.|verifier\.)?[a-z][a-z0-9_]*)`"
VALUE = r"(`\[[^`]*\]`|none|-?\d+(?:\.\d+)?(?:\s*(?:s|%))?)"
INLINE = [re.compile(NAME + r"\s*\(default\s+" + VALUE + r"(?=[\s,;:)])"),
          re.compile(NAME + r"\s*\(" + VALUE + r"\)"),
          re.compile(NAME + r",\s*(?:default\s+)?" + VALUE + r"[,;)]")]
DEFAULT = re.compile(r"\(default\s+" + VALUE + r"(?=[\s,;:)])")


def _fields(name: str) -> list[tuple[type[BaseModel], str]]:
    """The (model, field) pairs `name` may mean: one with a prefix, possibly several without."""
    prefix, _, field = name.rpartition(".")
    models: list[type[BaseModel]] = {"judge": [JudgeConfig], "verifier": [VerifierConfig]}.get(
        prefix, [RewardSettings, JudgeConfig, VerifierConfig])
    return [(m, field) for m in models if field in m.model_fields and field not in ("judge", "verifier")]


def _field(name: str) -> bool:
    return bool(_fields(name))


def _parse(value: str) -> Any:
    value = value.strip()
    if value.startswith("`"):
        return json.loads(value.strip("`"))
    if value == "none":
        return None
    if value.endswith("%"):
        return float(value[:-1]) / 100
    return float(value.removesuffix("s").strip())


def claims() -> list[tuple[str, int, str, str]]:
    """(file, line, field name, documented value) of every claim in the docs."""
    found = []
    for path in DOCS:
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            where = (path.relative_to(REPO).as_posix(), no)
            inline = [(*where, n, v) for pattern in INLINE for n, v in pattern.findall(line) if _field(n)]
            row = line.split("|")[1:-1] if line.startswith("|") else []
            if row and not inline:
                names = [n for n in re.findall(NAME, row[0]) if _field(n)]
                values = DEFAULT.findall("|".join(row[1:]))
                if names and len(names) == len(values):
                    inline = [(*where, n, v) for n, v in zip(names, values, strict=True)]
            found += inline
    return found


def _model_defaults(name: str) -> list[Any]:
    out = []
    for model, field in _fields(name):
        value = model.model_fields[field].get_default(call_default_factory=True)
        out.append(sorted(value) if isinstance(value, (set, frozenset)) else value)
    return out


def test_the_docs_make_enough_claims_to_check():
    names = {name.rpartition(".")[2] for *_, name, _ in claims()}
    # a change to the patterns that stops finding claims must not pass as "all defaults agree"
    assert {"breaker_failures", "breaker_window", "breaker_cooldown_s", "batch_deadline_s",
            "none_if_degraded", "cache_size", "failure_ttl_s", "max_final_answer_chars"} <= names, names


@pytest.mark.parametrize(("file", "line", "name", "value"), claims(), ids=lambda x: str(x))
def test_documented_default_is_the_models(file, line, name, value):
    documented, actual = _parse(value), _model_defaults(name)
    if isinstance(documented, list):
        documented = sorted(documented)
    # a plain name two models share (`max_concurrency`: rollouts at once, or the judge's calls) may
    # mean either: the claim must match one of them
    assert documented in actual, f"{file}:{line} says {name} defaults to {value}; the model says {actual}"


def test_readme_names_the_packages_mypy_checks():
    files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    sentence = next(s for s in text.split(". ") if "`mypy`" in s and "over" in s)
    named = set(re.findall(r"`([a-z_]+)/`", sentence))
    assert named == set(files), f"README says mypy runs over {sorted(named)}; pyproject checks {files}"


def test_readme_publishing_extra_is_the_one_the_code_asks_for():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    needs = re.findall(r"cua-verifier\[(\w+)\]", (REPO / "verifier" / "publish" / "__init__.py").read_text())
    assert needs == ["publish"] and "publish" in extras
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Publishing the scored dataset", 1)[1].split("\n#", 1)[0]
    told = re.findall(r'pip install -e "\.\[([\w,]+)\]"', section)
    assert told and all(t.split(",") == needs for t in told), told
    table = [line for line in readme.splitlines() if "--push-to-hub" in line and "pip install" in line]
    assert table and all('".[publish]"' in line and "bench,publish" not in line for line in table)
