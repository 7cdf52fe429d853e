"""The dataset card (README.md) of a scored dataset: what judged it, with which prompts, how it went.

Why a card: a scored dataset is only reusable if a reader can tell which judge model, which prompt
versions and which verifier settings produced the scores, and how many rollouts could not be
scored (and why): an unscored rollout is not a failed one, and a reader must not average it in.
The facts sit in the YAML header (machine-readable, under `cua_verifier`) and are repeated in prose.
The card is a `huggingface_hub.DatasetCard`, so the header is the hub's own format: `license`,
`configs` (which files make which split) and `tags` beside our block.
Secrets never reach the card: keys that look like credentials are dropped, and judge endpoints
(often internal URLs) are not written at all.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..records import ScoreRecord, result_field

_SECRET = re.compile(r"key|token|secret|password|auth|header", re.IGNORECASE)
_ENDPOINTS = {"base_url", "base_urls", "url", "urls"}


def _public(config: Any) -> Any:
    """`config` without credential-like keys or endpoint URLs, recursively."""
    if isinstance(config, dict):
        return {k: _public(v) for k, v in config.items()
                if not _SECRET.search(str(k)) and str(k) not in _ENDPOINTS}
    if isinstance(config, (list, tuple)):
        return [_public(v) for v in config]
    return config


def provenance(records: Iterable[ScoreRecord]) -> dict[str, Any]:
    """Judge models, prompt templates and verifier config as the scored results record them."""
    models: set[str] = set()
    prompts: dict[tuple[str, str, str], dict[str, str]] = {}
    config: dict[str, Any] | None = None
    for rec in records:
        if rec.status != "scored":
            continue
        models.update(result_field(rec.result, "models") or [])
        for p in result_field(rec.result, "prompts") or []:
            p = p if isinstance(p, dict) else p.model_dump()
            prompts[(p["id"], p["version"], p["sha256"])] = dict(p)
        if config is None:
            config = result_field(rec.result, "config") or None
    return {"models": sorted(models), "prompts": [prompts[k] for k in sorted(prompts)],
            "verifier_config": _public(config) if config else None}


def split_configs(splits: Iterable[str], data_dir: str = "data") -> list[dict[str, Any]]:
    """The card's `configs`: one default config whose split `s` is the files `data/s-*`
    (the names `Dataset.push_to_hub` writes, and the folder writer too)."""
    return [{"config_name": "default",
             "data_files": [{"split": s, "path": f"{data_dir}/{s}-*"} for s in sorted(set(splits))]}]


def card_metadata(*, source: str, split: str, shard: str | None = None, summary: dict[str, Any], records: list[ScoreRecord],
                  settings: Any, columns: list[str], license: str = "unknown") -> dict[str, Any]:
    """The YAML header: license and hub tags plus the `cua_verifier` provenance block (of the split
    just written). `configs` is added by whoever knows the files (the folder writer, `push_to_hub`)."""
    from .. import __version__

    facts = provenance(records)
    judge = dict(getattr(settings, "judge", None) or {})
    return {
        "license": license,
        "tags": ["cua-verifier", "computer-use", "reward-model"],
        "cua_verifier": {
            "version": __version__,
            "split": split,
            **({"shard": shard} if shard else {}),  # the counts are this shard's
            "source": source,
            "judge_model": judge.get("model"),
            "models": facts["models"],
            "prompts": facts["prompts"],
            "config": {"judge": _public(judge),
                       "verifier": _public(dict(getattr(settings, "verifier", None) or {})),
                       "effective": facts["verifier_config"]},
            "counts": {k: summary[k] for k in ("total", "scored", "unscored")},
            "unscored_reasons": dict(summary.get("unscored_reasons") or {}),
            "means": {k: summary.get(k) for k in ("process_score_mean", "process_success_rate",
                                                  "outcome_success_rate")},
            "result_columns": [c for c in columns if c.startswith("uv_")],
        },
    }


def card_body(meta: dict[str, Any], *, input_columns: list[str]) -> str:
    """The card's prose: a short human summary of the facts in the header."""
    uv = meta["cua_verifier"]
    counts = uv["counts"]
    prompts = ", ".join(f"{p['id']} v{p['version']}" for p in uv["prompts"]) or "not recorded"
    reasons = "".join(f"\n- `{r}`: {n}" for r, n in uv["unscored_reasons"].items()) or " none"
    means = uv["means"]

    def pct(v: float | None) -> str:
        return "n/a" if v is None else f"{100 * v:.1f}%"

    kept = ", ".join(f"`{c}`" for c in input_columns) or "none (the source was a folder of trajectories)"
    body = f"""# Rollouts scored by cua-verifier

Source `{uv['source']}`, judged by `{uv['judge_model'] or 'unknown'}`
(models seen in the results: {', '.join(uv['models']) or 'not recorded'}) with cua-verifier
{uv['version']}. Prompt templates: {prompts}.

| rollouts | scored | unscored | process score mean | process success | outcome success |
|---|---|---|---|---|---|
| {counts['total']} | {counts['scored']} | {counts['unscored']} | \
{'n/a' if means['process_score_mean'] is None else f"{means['process_score_mean']:.3f}"} | \
{pct(means['process_success_rate'])} | {pct(means['outcome_success_rate'])} |

Unscored rollouts (the judge could not be reached or answered invalidly, or the rollout could not
be read) are not failures: their score columns are empty and they must not be averaged in.
Unscored reasons:{reasons}

Input columns kept as they were (images as stored, not re-encoded): {kept}.
Result columns: {', '.join(f'`{c}`' for c in uv['result_columns'])}; `uv_result_json` holds the
full `VerificationResult`. The judge and verifier settings are in the YAML header above.
"""
    return body


def make_card(meta: dict[str, Any], body: str, base: str | None = None) -> Any:
    """A `DatasetCard`: `base` (an existing README.md, e.g. the one `push_to_hub` just wrote with
    its `configs` and `dataset_info`) with `meta`'s keys set over its header and `body` as its text."""
    from huggingface_hub import DatasetCard

    card = DatasetCard(base if base and base.startswith("---") else "---\n---\n")
    for key, value in meta.items():
        card.data[key] = value
    card.text = "\n" + body
    return card
