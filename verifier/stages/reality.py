"""Stage 6b: the reality notes, in a call of their own that never sees the agent's words.

A reality note corrects what the rubric assumed from the task alone ("'Atlas' is a product line",
"the site has no size filter") and can unlock a criterion's full-credit clause. Written inside the
rescoring call, after that call had read the action history, the final answer and the claims check,
a note could be shaped by what the agent said about the site (issue 34 §4). Here the call gets the
task and rubric (the relevance fan-out's shared context: no history, no answer), what the analyst
saw on each screenshot with the claims check and discrepancies left out (`pixels_only_evidence`),
and the final screenshots, as the reference's own reality step did.

It runs beside the conditions and rescoring calls (it needs only the evidence), so it adds a call
but no round: the rescoring call writes no note, and code grants its full-credit clause only on
this call's note (`guards.reality_overrules`). When this call fails the run degrades (`reality`) and
no full-credit clause is granted: a missing note never opens a door.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..judge.base import ImagePart
from ..narrowing import for_call
from ..rendering import fence
from ..schemas import RealityCheck, Rubric
from .base import Run
from .evidence import Evidence

STAGE = "reality"


def pixels_only_evidence(rubric: Rubric, evidence: dict[str, list[Evidence]]) -> str:
    """What each screenshot shows per criterion, in time order, without the claims check and the
    discrepancies (both restate what the agent said), fenced like all trajectory-derived text."""
    blocks = []
    for c in rubric.criteria:
        items = evidence.get(c.id, [])
        lines = [f"[{c.id}] {c.name}"] + [
            f"  Screenshot {', '.join(map(str, ev.screenshots))}: shows: {ev.item.visible}"
            + (" | BLOCKER VISIBLE" if ev.item.blocker_visible else "") for ev in items]
        blocks.append("\n".join(lines) if items else f"[{c.id}] no screenshot evidence")
    return "## What the screenshots show (written by an analyst from the pixels)\n" + fence("\n".join(blocks),
                                                                                            "evidence")


def per_call_text(rubric: Rubric, evidence: dict[str, list[Evidence]], n_images: int) -> str:
    lines = [pixels_only_evidence(rubric, evidence), "",
             "Write one reality note for each criterion: " + ", ".join(rubric.ids()) + "."]
    if n_images:
        lines.append(f"The final {n_images} distinct screenshot(s) follow.")
    return "\n".join(lines)


async def run(r: Run, evidence: dict[str, list[Evidence]], images: Sequence[ImagePart], depth: int) -> RealityCheck:
    """The reality call: one note per criterion of the rubric."""
    assert r.rubric is not None
    reply = await r.ask(STAGE, "reality.system.j2", for_call(RealityCheck, r.rubric.ids()), depth=depth,
                        shared=r.shared_bare(), per_call=per_call_text(r.rubric, evidence, len(images)),
                        images=list(images), images_droppable=True)
    assert isinstance(reply, RealityCheck)
    return reply
