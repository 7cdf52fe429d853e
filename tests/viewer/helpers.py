"""Synthetic trajectories and results for the viewer tests (no judge needed).

The result is built through `VerificationResult`, so it always matches the current schema, and
carries every part a page shows: conditional and half-point criteria, a failed relevance row,
duplicates, top-k, penalties, a forced failure, degraded stages, three votes (one failed) and a
diagnosis whose first failure step is known. `HOSTILE` goes into every free-text field that comes
from the trajectory or the judge.
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

from PIL import Image, ImageDraw

from verifier.records import ResultWriter, ScoreRecord
from verifier.result import (
    CriterionResult,
    DegradedStage,
    DiagnosisResult,
    EvidenceRecord,
    FailurePointResult,
    PenaltyResult,
    RelevanceResult,
    StageUsage,
    UsageSummary,
    VerificationResult,
)

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><b>bold?</b>'


def screenshot(path: Path, k: int, size=(1280, 800)) -> None:
    path.write_bytes(_screenshot_png(k, tuple(size)))


@functools.lru_cache(maxsize=128)
def _screenshot_png(k: int, size: tuple[int, int]) -> bytes:
    """Screenshot k as PNG bytes; drawn and encoded once per session (most tests reuse pages 0-4)."""
    img = Image.new("RGB", size, (245, 247, 250))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, size[0], 60], fill=(40 + 7 * k % 200, 80, 160))
    draw.text((20, 20), f"page {k}", fill=(255, 255, 255))
    for i in range(8):
        draw.rectangle(
            [40, 100 + 70 * i, 40 + (97 * (k + i)) % 900 + 200, 140 + 70 * i], fill=(200, 210, 230 - i * 10)
        )
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def make_trajectory(folder: Path, n_shots: int = 5, *, hostile: bool = False, size=(1280, 800)) -> Path:
    """A native trajectory folder: n_shots screenshots (the last two identical), n_shots - 1 steps."""
    folder.mkdir(parents=True, exist_ok=True)
    n_steps = max(1, n_shots - 1)
    text = (lambda s: f"{s} {HOSTILE}") if hostile else (lambda s: s)
    shots = []
    for k in range(n_shots):
        name = f"shot_{k:02d}.png"
        if k == n_shots - 1 and k > 0:
            (folder / name).write_bytes((folder / f"shot_{k - 1:02d}.png").read_bytes())
        else:
            screenshot(folder / name, k, size)
        shots.append(
            {"step": min(k + 1, n_steps), "timing": "after" if k >= n_steps else "before", "path": name}
        )
    steps = [
        {
            "index": i,
            "action": "click" if i < n_steps else "terminate",
            "arguments": {"element": f"button {i}"} if i < n_steps else {"answer": text("Done.")},
            "thought": text(f"thinking about step {i}"),
            "url": text(f"https://shop.example.net/p{i}"),
            **({"error": text(f"timeout on step {i}")} if hostile else {}),  # page-written, rendered as text
        }
        for i in range(1, n_steps + 1)
    ]
    data = {
        "schema_version": "1.0",
        "task": {"id": folder.name, "instruction": text("Find the price of the mouse.")},
        "steps": steps,
        "screenshots": shots,
        "final_answer": text("It costs $24.99."),
        "status": "finished",
    }
    (folder / "trajectory.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def rich_result(traj_id: str, task_id: str, n_shots: int = 5, *, hostile: bool = False) -> VerificationResult:
    text = (lambda s: f"{s} {HOSTILE}") if hostile else (lambda s: s)
    shots = list(range(1, n_shots + 1))
    criteria = [
        CriterionResult(
            id="c1",
            name=text("Search for the product"),
            description="Full: searched.",
            max_points=4,
            earned=4,
            action_only_earned=4,
            justification=text("The search page shows the query."),
            evidence_tag="visual_confirmation",
            evidence_screenshots=shots[:1],
            evidence=[
                EvidenceRecord(
                    screenshots=[1],
                    visible=text("a search box with 'mouse'"),
                    claims_check=text("matches the typed query"),
                )
            ],
        ),
        CriterionResult(
            id="c2",
            name="Report the price",
            description="Full: correct price.",
            max_points=5,
            earned=2.5,
            action_only_earned=5,
            hallucination_suspected=True,
            evidence_tag="contradiction",
            justification=text("The cart shows $29.99, not $24.99."),
            reality_notes="prices vary",
            evidence=[
                EvidenceRecord(
                    screenshots=[n_shots - 1, n_shots],
                    visible="cart page, $29.99",
                    claims_check="the answer says $24.99",
                    discrepancies="price differs",
                    blocker_visible=False,
                )
            ],
        ),
        CriterionResult(
            id="c3",
            name="Log in if asked",
            description="Only when a login wall shows.",
            max_points=2,
            condition="a login wall is shown",
            exclusive_group="login",
            condition_status="not_met",
            condition_source="evidence",
            applies=False,
        ),
    ]
    matrix = [[min(10, (3 * i + 2 * j) % 11) for j in range(3)] for i in range(n_shots)]
    matrix[1 if n_shots > 2 else 0] = None
    # top-2 per applicable criterion, best first (ties to the later screenshot), as the pipeline picks them
    topk = {c: sorted((i for i, row in enumerate(matrix, 1) if row is not None and row[j] >= 1),
                      key=lambda i, j=j: (-matrix[i - 1][j], -i))[:2] for j, c in enumerate(("c1", "c2"))}
    topk["c3"] = []
    return VerificationResult(
        trajectory_id=traj_id,
        task_id=task_id,
        task=text("Find the price of the mouse."),
        process_score=0.48,
        process_score_before_penalties=0.72,
        process_success=False,
        action_only_score=1.0,
        hallucination_suspected=True,
        rescoring_scores=[0.72, 0.6, 0.8],
        outcome_success=False,
        outcome_votes=[True, False, None],
        outcome_reasoning=text("The reported price contradicts the cart."),
        primary_intent="know the price",
        nitpicks=["slow"],
        critical_issues=[text("added an item to the cart")],
        forced_failure=["penalty: unsolicited cart addition"],
        criteria=criteria,
        penalties=[
            PenaltyResult(
                name="Unsolicited cart addition",
                description=text("added to cart"),
                points=2,
                steps=[min(3, n_shots - 1)],
                screenshots=[min(3, n_shots)],
            )
        ],
        side_effects_reasoning=text("The agent added the mouse to the cart without being asked."),
        relevance=RelevanceResult(
            criteria=["c1", "c2", "c3"], matrix=matrix, duplicates=[[n_shots - 1, n_shots]]
        ),
        topk=topk,
        rubric_self_audit="ok",
        diagnosis=DiagnosisResult(
            first_failure_step=min(3, n_shots - 1),
            categories=["Hallucination"],
            failure_points=[
                FailurePointResult(
                    steps=[min(3, n_shots - 1)],
                    error_code="2.1",
                    category="Hallucination",
                    what_happened=text("claimed a wrong price"),
                )
            ],
            reasoning=text("the answer contradicts the cart"),
        ),
        degraded=[DegradedStage(stage="relevance", reason=text("JudgeUnavailableError: timeout"))],
        usage=UsageSummary(
            calls=17,
            prompt_tokens=21000,
            completion_tokens=900,
            latency_s=8.2,
            wall_s=4.1,
            rounds=6,
            per_stage={
                "rubric": StageUsage(calls=1, prompt_tokens=900, completion_tokens=200, round=1),
                "relevance": StageUsage(calls=5, failed_calls=1, prompt_tokens=9000, round=2),
            },
        ),
        config={"top_k": 5, "votes": 3},
        models=["judge-model"],
        prompts=[{"id": "rubric", "version": "2", "sha256": "ab" * 32}],
    )


def write_results(path: Path, entries: list[tuple[str, str, VerificationResult | None, str | None]]) -> Path:
    """entries: (id, source, result or None, unscored reason)."""
    with ResultWriter(path) as w:
        for rid, source, result, reason in entries:
            if result is None:
                w.write(ScoreRecord.unscored(rid, reason or "JudgeUnavailableError: down", source=source))
            else:
                w.write(ScoreRecord(id=rid, status="scored", source=source, result=result, duration_s=1.5))
    return path


def demo_results(tmp: Path, n_shots: int = 5) -> Path:
    """A results file with a rich scored rollout, a hostile one and an unscored one; trajectories beside it."""
    good = make_trajectory(tmp / "trajs" / "mouse-price", n_shots)
    bad = make_trajectory(tmp / "trajs" / "hostile", 4, hostile=True)
    return write_results(
        tmp / "results.jsonl",
        [
            (
                "trajs/mouse-price#0",
                str(good / "trajectory.json"),
                rich_result(str(good / "trajectory.json"), "mouse-price", n_shots),
                None,
            ),
            (
                "trajs/hostile#0",
                str(bad / "trajectory.json"),
                rich_result(str(bad / "trajectory.json"), "hostile", 4, hostile=True),
                None,
            ),
            (
                "trajs/missing#0",
                "trajs/missing/trajectory.json",
                None,
                f"JudgeUnavailableError: down {HOSTILE}",
            ),
        ],
    )
