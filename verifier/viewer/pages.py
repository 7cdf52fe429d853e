"""View models: a results record (plain JSON) turned into what the templates show.

Why work on dicts and not on `VerificationResult`: a site must open results written by older and
newer versions of the verifier. Every field is read defensively (missing, null or of an unexpected
type gives a neutral value), and top-level fields this module does not know (added by later schema
versions) are listed under "Other fields" as JSON instead of being dropped or breaking the page.
"""

from __future__ import annotations

from typing import Any

from .access import band, d, ints, lst, num, pretty, text
from .images import StoredImage
from .timeline import timeline_view

#: Result fields with a dedicated place on the page; anything else goes to "Other fields".
KNOWN_FIELDS = {
    "schema_version",
    "trajectory_id",
    "task_id",
    "task",
    "process_score",
    "process_score_before_penalties",
    "process_success",
    "action_only_score",
    "hallucination_suspected",
    "grounded",
    "rescoring_scores",
    "outcome_success",
    "outcome_votes",
    "outcome_reasoning",
    "primary_intent",
    "nitpicks",
    "critical_issues",
    "critical_point_violation",
    "forced_failure",
    "criteria",
    "penalties",
    "side_effects_reasoning",
    "relevance",
    "topk",
    "rubric_self_audit",
    "diagnosis",
    "degraded",
    "usage",
    "config",
    "models",
    "prompts",
    "permission_profile",
    "unsupported_claims",
    "history",
    "truncations",
    "permission_overruled",
    "overruled",
    "truncated",
    "rubric_source",
}
#: Fields that say what the judge was shown and allowed (schema 1.2), and what code overruled or
#: found cut in its replies (1.3); listed in their own section.
SHOWN_FIELDS = ("permission_profile", "permission_overruled", "history", "truncations", "unsupported_claims",
                "overruled", "truncated", "rubric_source")
KNOWN_CRITERION_FIELDS = {
    "id",
    "name",
    "description",
    "max_points",
    "condition",
    "exclusive_group",
    "condition_status",
    "condition_source",
    "applies",
    "earned",
    "action_only_earned",
    "action_only_justification",
    "justification",
    "reality_notes",
    "evidence_tag",
    "evidence_screenshots",
    "evidence",
    "hallucination_suspected",
}
#: Evidence tags that cost points (README, "The rubric table").
BAD_TAGS = {"contradiction", "contradicts", "fabrication", "omission"}


# ---- index --------------------------------------------------------------------------------------
def index_row(record: dict, href: str) -> dict:
    """One line of the index table (scored or unscored)."""
    res = d(record.get("result"))
    usage = d(res.get("usage"))
    score = num(res.get("process_score"))
    outcome = res.get("outcome_success") if isinstance(res.get("outcome_success"), bool) else None
    tokens = (num(usage.get("prompt_tokens")) or 0) + (num(usage.get("completion_tokens")) or 0)
    status = record.get("status") if record.get("status") in ("scored", "unscored") else "unscored"
    return {
        "id": text(record.get("id")),
        "href": href,
        "status": status,
        "reason": text(record.get("reason")),
        "reason_kind": (text(record.get("reason")) or "unknown").split(":", 1)[0] if status != "scored" else "",
        "task": text(res.get("task")) or text(res.get("task_id")),
        "task_id": text(res.get("task_id")),
        "outcome": outcome if status == "scored" else None,
        "outcome_key": "unscored" if status != "scored" else ("success" if outcome else "failure"),
        "process": score,
        "band": band(score),
        "process_success": res.get("process_success"),
        "hallucination": res.get("hallucination_suspected") is True,
        "degraded": [text(d(g).get("stage")) or "?" for g in lst(res.get("degraded"))],
        "calls": int(num(usage.get("calls")) or 0),
        "tokens": int(tokens),
        "wall_s": num(usage.get("wall_s")) or num(record.get("duration_s")),
        "first_failure": d(res.get("diagnosis")).get("first_failure_step"),
    }


# ---- rollout page -------------------------------------------------------------------------------
def trims_view(res: dict) -> list[dict]:
    """Calls shrunk to fit the judge's context (issue 24): stage, steps applied, tokens before/after,
    and the reply room where the prompt left less than the reply reserve."""
    return [{"stage": text(d(t).get("stage")), "calls": int(num(d(t).get("calls")) or 0),
             "cuts": [text(c) for c in lst(d(t).get("cuts"))],
             "dropped": int(num(d(t).get("screenshots_dropped")) or 0),
             "before": int(num(d(t).get("tokens_before")) or 0), "after": int(num(d(t).get("tokens_after")) or 0),
             "reply": None if num(d(t).get("reply_tokens")) is None else int(num(d(t).get("reply_tokens")) or 0)}
            for t in lst(d(res.get("history")).get("trims"))]


def shot_view(n: int, images: dict[int, StoredImage], shots_meta: dict[int, str], prefix: str) -> dict:
    img = images.get(n)
    return {
        "n": n,
        "label": shots_meta.get(n, ""),
        "img": None
        if img is None
        else {
            "thumb": prefix + img.thumb,
            "full": prefix + img.full,
            "w": img.width,
            "h": img.height,
            "tw": img.thumb_width,
            "th": img.thumb_height,
        },
    }


def criterion_view(c: dict, topk: list[int], shot) -> dict:
    earned, mx = num(c.get("earned")), num(c.get("max_points"))
    evidence = []
    for e in lst(c.get("evidence")):
        e = d(e)
        evidence.append(
            {
                "shots": [shot(n) for n in ints(e.get("screenshots"))],
                "visible": text(e.get("visible")),
                "claims_check": text(e.get("claims_check")),
                "discrepancies": text(e.get("discrepancies")),
                "blocker": e.get("blocker_visible") is True,
                "condition": text(e.get("condition")),
            }
        )
    tag = text(c.get("evidence_tag")) or "no_evidence"
    return {
        "id": text(c.get("id")) or "?",
        "name": text(c.get("name")),
        "description": text(c.get("description")),
        "earned": earned,
        "max": mx,
        "frac": (earned / mx) if earned is not None and mx else 0.0,
        "applies": c.get("applies") is not False,
        "condition": text(c.get("condition")),
        "condition_status": text(c.get("condition_status")) or "unconditional",
        "condition_source": text(c.get("condition_source")),
        "group": text(c.get("exclusive_group")),
        "tag": tag,
        "tag_bad": tag in BAD_TAGS,
        "justification": text(c.get("justification")),
        "reality_notes": text(c.get("reality_notes")),
        "action_only_earned": num(c.get("action_only_earned")),
        "action_only_justification": text(c.get("action_only_justification")),
        "hallucination": c.get("hallucination_suspected") is True,
        "evidence": evidence,
        "topk": [shot(n) for n in topk],
        "evidence_screenshots": ints(c.get("evidence_screenshots")),
        "extras": {k: pretty(v) for k, v in c.items() if k not in KNOWN_CRITERION_FIELDS},
    }


def heatmap_view(res: dict, criteria: list[dict], shot) -> dict:
    rel = d(res.get("relevance"))
    ids = [text(x) for x in lst(rel.get("criteria"))] or [c["id"] for c in criteria]
    names = {c["id"]: c["name"] for c in criteria}
    topk = {text(k): ints(v) for k, v in d(res.get("topk")).items()}
    dup_of = {}
    for group in lst(rel.get("duplicates")):
        g = ints(group)
        for n in g[1:]:
            dup_of[n] = g[0]
    rows = []
    for i, row in enumerate(lst(rel.get("matrix")), start=1):
        cells = []
        for j, cid in enumerate(ids):
            v = lst(row)[j] if j < len(lst(row)) else None
            v = num(v)
            ranks = topk.get(cid, [])
            cells.append(
                {
                    "cid": cid,
                    "v": v,
                    "top": i in ranks,
                    "rank": ranks.index(i) + 1 if i in ranks else None,
                    "level": None if v is None else max(0, min(10, round(v))),
                }
            )
        rows.append({"shot": shot(i), "failed": row is None, "dup_of": dup_of.get(i), "cells": cells})
    return {"criteria": [{"id": c, "name": names.get(c, "")} for c in ids], "rows": rows}


def usage_view(res: dict) -> dict:
    u = d(res.get("usage"))
    stages = []
    for name, s in d(u.get("per_stage")).items():
        s = d(s)
        stages.append(
            {
                "stage": text(name),
                **{
                    k: num(s.get(k))
                    for k in (
                        "calls",
                        "cache_hits",
                        "failed_calls",
                        "prompt_tokens",
                        "cached_prompt_tokens",
                        "completion_tokens",
                        "latency_s",
                        "round",
                    )
                },
            }
        )
    totals = {
        k: num(u.get(k))
        for k in ("calls", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "latency_s", "wall_s",
                  "rounds")
    }
    return {"totals": totals, "stages": stages}


def other_verdicts_view(record: dict, trajectory: Any) -> dict:
    """The agent's claim and the environment's score, from the record (or the trajectory): shown
    beside the verifier's verdict, labelled as theirs."""
    others = d(record.get("other_verdicts"))
    if not others and trajectory is not None and hasattr(trajectory, "other_verdicts"):
        others = trajectory.other_verdicts()
    claim, env = d(others.get("agent_claim")), d(others.get("env_score"))
    return {
        "agent_claim": {"success": claim.get("success") if isinstance(claim.get("success"), bool) else None,
                        "source": text(claim.get("source"))} if claim else None,
        "env_score": {"score": num(env.get("score")), "success": env.get("success") is True,
                      "source": text(env.get("source"))} if env else None,
    }


def rollout_view(
    record: dict,
    trajectory: Any,
    images: dict[int, StoredImage],
    *,
    prefix: str = "../",
    notes: list[str] | None = None,
) -> dict:
    """Everything a rollout page shows, with safe defaults for every missing piece."""
    res = d(record.get("result"))
    shots_meta = {}
    for n, s in enumerate(getattr(trajectory, "screenshots", None) or [], start=1):
        shots_meta[n] = "initial page" if s.step == 0 else f"step {s.step}, {s.timing}"

    def shot(n: int) -> dict:
        return shot_view(n, images, shots_meta, prefix)

    topk = {text(k): ints(v) for k, v in d(res.get("topk")).items()}
    criteria = [
        criterion_view(d(c), topk.get(text(d(c).get("id")), []), shot) for c in lst(res.get("criteria"))
    ]
    task = text(res.get("task"))
    if trajectory is not None:
        task = task or trajectory.task.instruction
    votes = [v if isinstance(v, bool) else None for v in lst(res.get("outcome_votes"))]
    penalties = [
        {
            "name": text(d(p).get("name")),
            "description": text(d(p).get("description")),
            "points": num(d(p).get("points")),
            "steps": ints(d(p).get("steps")),
            "shots": [shot(n) for n in ints(d(p).get("screenshots"))],
        }
        for p in lst(res.get("penalties"))
    ]
    outcome = res.get("outcome_success") if isinstance(res.get("outcome_success"), bool) else None
    return {
        "id": text(record.get("id")),
        "status": text(record.get("status")) or "unscored",
        "reason": text(record.get("reason")),
        "source": text(record.get("source")),
        "scored": record.get("status") == "scored" and bool(res),
        "task": task,
        "task_id": text(res.get("task_id")) or (trajectory.task.id if trajectory else ""),
        "start_url": (trajectory.task.start_url or "") if trajectory is not None else "",
        "final_answer": None if trajectory is None else trajectory.final_answer,
        "run_status": ""
        if trajectory is None
        else getattr(trajectory.status, "value", str(trajectory.status)),
        "load_warnings": list(getattr(trajectory, "load_warnings", None) or []),
        "has_trajectory": trajectory is not None,
        "n_shots": len(shots_meta),
        "outcome": outcome,
        **other_verdicts_view(record, trajectory),
        "votes": votes,
        "outcome_reasoning": text(res.get("outcome_reasoning")),
        "primary_intent": text(res.get("primary_intent")),
        "forced_failure": [text(x) for x in lst(res.get("forced_failure"))],
        "process": num(res.get("process_score")),
        "process_before": num(res.get("process_score_before_penalties")),
        "process_success": res.get("process_success"),
        "action_only": num(res.get("action_only_score")),
        "rescoring": [num(x) for x in lst(res.get("rescoring_scores"))],
        "hallucination": res.get("hallucination_suspected") is True,
        "ungrounded": res.get("grounded") is False,  # action-only mode: no screenshots were judged
        "nitpicks": [text(x) for x in lst(res.get("nitpicks"))],
        "critical_issues": [text(x) for x in lst(res.get("critical_issues"))],
        "critical_point_violation": res.get("critical_point_violation") is True,
        "criteria": criteria,
        "heatmap": heatmap_view(res, criteria, shot),
        "penalties": penalties,
        "side_effects_reasoning": text(res.get("side_effects_reasoning")),
        "rubric_self_audit": text(res.get("rubric_self_audit")),
        "timeline": timeline_view(res, trajectory, shot),
        "degraded": [
            {"stage": text(d(g).get("stage")), "reason": text(d(g).get("reason"))}
            for g in lst(res.get("degraded"))
        ],
        "usage": usage_view(res),
        "models": [text(m) for m in lst(res.get("models"))],
        "prompts": [
            {
                "id": text(d(p).get("id")),
                "version": text(d(p).get("version")),
                "sha256": text(d(p).get("sha256")),
            }
            for p in lst(res.get("prompts"))
        ],
        "config": [
            (text(k), pretty(v) if isinstance(v, (dict, list)) else text(v))
            for k, v in d(res.get("config")).items()
        ],
        "schema_version": text(res.get("schema_version")),
        "trajectory_id": text(res.get("trajectory_id")),
        "shown": {k: pretty(res[k]) for k in SHOWN_FIELDS if res.get(k) not in (None, [], {}, "")},
        "trims": trims_view(res),
        "context_tokens": d(res.get("history")).get("context_tokens"),
        "extras": {k: pretty(v) for k, v in res.items() if k not in KNOWN_FIELDS},
        "notes": list(notes or []),
    }
