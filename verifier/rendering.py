"""Turning a trajectory and a rubric into prompt text: compact, fenced, and prefix-cache friendly.

Three rules, each fixing a weakness of the reference implementation:
- **Compact**: one line per step (`3. click {"x": 10} | url=... | thought: «...»`), JSON without
  ASCII escaping, long thoughts/arguments middle-elided. Over `max_history_chars` the history is
  compressed, never cut: thoughts shorten first, then go, then long arguments shorten; every
  step's action line stays, and the judge and the result (`HistoryView`) are told.
- **Fenced**: everything the agent or the web page produced (thoughts, arguments, URLs, the final
  answer) sits inside an untrusted-data block whose closing tag carries a code the text cannot
  know, with look-alike tags defused and every line quoted (`verifier.fencing` says how and why);
  every system prompt tells the judge never to follow instructions found there. The final answer
  is capped like the other fields (`max_final_answer_chars`, head and tail kept) and the cut is
  recorded in `result.truncations`.
- **Shared prefix first**: `messages(...)` always emits [system: the shared principles, the same
  for every call] then [user: shared context (task, rubric, history, status, final answer), then
  the stage's own instructions, the per-call part, images LAST]. The system prompt and the context
  are byte-identical across the calls of a verification (relevance calls, which must not see the
  history, share their own task + rubric context; the rubric calls share the task-only one), so
  vLLM's prefix cache serves everything up to the stage's instructions.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from .config import VerifierConfig
from .coordinates import shown_arguments
from .fencing import FENCE, defuse, fence  # noqa: F401 - FENCE, defuse re-exported (the fence lives there)
from .guards import run_date_line
from .judge.base import ImagePart, Message, TextPart
from .prompts import PromptInfo, RenderedPrompt, current_overlay, prompt_info, render, template_path
from .result import HistoryView, Truncation
from .schemas import PermissionProfile, Rubric
from .trajectory import RunStatus, Trajectory

_INCLUDE = re.compile(r"""\{%-?\s*include\s+["']([^"']+)["']""")
_HIDDEN_ARGS = {"reasoning", "thought", "thoughts"}


def elide(text: str, limit: int) -> str:
    """Cut the middle of `text` down to about `limit` characters."""
    if len(text) <= limit:
        return text
    half = max(limit // 2 - 10, 1)
    return f"{text[:half]} […{len(text) - 2 * half} chars cut…] {text[-half:]}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_step(step: Any, cfg: VerifierConfig, *, thought_chars: int | None = None,
                argument_chars: int | None = None) -> str:
    """One line per step; `thought_chars=0` leaves the thought out (history compression)."""
    thought_limit = cfg.max_thought_chars if thought_chars is None else thought_chars
    arg_limit = cfg.max_argument_chars if argument_chars is None else argument_chars
    # coordinates as in the screenshots the judge sees, not the thumbnail the agent pointed on
    args = {k: v for k, v in shown_arguments(step.arguments, getattr(step, "screen", None)).items()
            if k not in _HIDDEN_ARGS}
    thought = step.thought
    if thought is None:
        hidden = [str(step.arguments[k]) for k in ("reasoning", "thoughts", "thought") if step.arguments.get(k)]
        thought = " ".join(hidden) or None
    arg_text = json.dumps(args, ensure_ascii=False, separators=(", ", ": "), default=str) if args else ""
    parts = [f"{step.index}. {step.action} {elide(_one_line(arg_text), arg_limit)}".rstrip()]
    if step.url:
        parts.append(f"url={elide(step.url, min(150, arg_limit))}")
    if thought and thought_limit > 0:
        parts.append(f"thought: «{elide(_one_line(thought), thought_limit)}»")
    if step.error:
        parts.append(f"ERROR: {elide(_one_line(step.error), min(300, max(arg_limit, 60)))}")
    return " | ".join(parts)


#: Compression levels tried in order when the history is over budget:
#: (thought chars, argument chars, HistoryView.thoughts, HistoryView.arguments); None = as configured.
_LEVELS: tuple[tuple[int | None, int | None, str, str], ...] = (
    (None, None, "full", "full"), (160, None, "shortened", "full"), (0, None, "omitted", "full"),
    (0, 60, "omitted", "shortened"))
#: Steps whose thoughts stay (shortened) when older thoughts are left out (`cut=2`).
RECENT_THOUGHTS = 10
#: `cut` -> the first level the token budget forces (`verifier.budget` steps 1-2); the char
#: budget may compress further from there. Level "older" sits between "shortened" and "omitted".
_CUT_START = {0: 0, 1: 1, 2: "older", 3: 3}


def _render_older(traj: Trajectory, cfg: VerifierConfig) -> str:
    """Older steps without thoughts, the last `RECENT_THOUGHTS` with shortened ones."""
    first_recent = len(traj.steps) - RECENT_THOUGHTS
    short = min(160, cfg.max_thought_chars)
    return "\n".join(render_step(s, cfg, thought_chars=short if i >= first_recent else 0)
                     for i, s in enumerate(traj.steps))


def history_view(traj: Trajectory, cfg: VerifierConfig, cut: int = 0) -> tuple[str, HistoryView]:
    """(history text, how it was rendered). Never drops a step: see `HistoryView`.

    `cut` forces at least that much compression (the token budget's steps, `verifier.budget`):
    1 shortens every thought, 2 leaves older thoughts out, 3 leaves all out and shortens arguments."""
    budget = cfg.max_history_chars
    if not traj.steps:
        text = "(the agent took no actions)"
        return text, HistoryView(steps=0, chars=len(text), budget=budget)
    start = _CUT_START[cut]
    if start == "older":
        text = _render_older(traj, cfg)
        if len(text) <= budget:
            return text, HistoryView(steps=len(traj.steps), chars=len(text), budget=budget,
                                     thoughts="older_omitted")
        start = 2
    assert isinstance(start, int)
    for thoughts, args, t_state, a_state in _LEVELS[start:]:
        if thoughts is not None:
            thoughts = min(thoughts, cfg.max_thought_chars)  # compression never lengthens a thought
        if args is not None:
            args = min(args, cfg.max_argument_chars)
        text = "\n".join(render_step(s, cfg, thought_chars=thoughts, argument_chars=args) for s in traj.steps)
        if len(text) <= budget:
            break
    return text, HistoryView(steps=len(traj.steps), chars=len(text), budget=budget,
                             thoughts=t_state, arguments=a_state,  # type: ignore[arg-type]
                             over_budget=len(text) > budget)


def render_history(traj: Trajectory, cfg: VerifierConfig) -> str:
    """All steps, one line each, compressed (never cut) beyond `max_history_chars`."""
    return history_view(traj, cfg)[0]


def history_note(view: HistoryView) -> str:
    """What the judge is told about a compressed history ("" when nothing was compressed)."""
    if not view.compressed:
        return ""
    done = {"shortened": "the agent's thoughts are shortened", "omitted": "the agent's thoughts are left out",
            "older_omitted": f"the agent's thoughts are left out except the last {RECENT_THOUGHTS} steps' "
                             "(shortened)",
            "full": "the agent's thoughts are complete"}[view.thoughts]
    if view.arguments == "shortened":
        done += " and long arguments and URLs are shortened"
    return f"(This history is long: {done}. All {view.steps} steps' action lines are listed.)"


_STATUS = {RunStatus.finished: "finished: the agent stopped on its own",
           RunStatus.step_budget_exhausted: "step budget exhausted: the run was cut off before the agent finished",
           RunStatus.aborted: "aborted: the harness stopped the run"}


def render_status(traj: Trajectory) -> str:
    """How the run ended, for the judge (issue 9, H2): status plus whether there is a final answer."""
    answer = "a final answer was given" if traj.final_answer is not None else "NO final answer was given"
    return f"{_STATUS[traj.status]}; {answer}."


def render_final_answer(traj: Trajectory, cfg: VerifierConfig | None = None) -> str:
    """The answer as the judge sees it: middle-elided beyond `max_final_answer_chars` (head and
    tail carry the claim and its conclusion; a 5 MB answer would otherwise fill every call)."""
    if traj.final_answer is None:
        return "(the agent gave no final answer)"
    limit = (cfg or VerifierConfig()).max_final_answer_chars
    return elide(traj.final_answer, limit) if traj.final_answer else "(empty answer)"


def truncations(traj: Trajectory, cfg: VerifierConfig | None = None) -> list[Truncation]:
    """The trajectory fields the judge saw cut (recorded in the result, so a verdict on a cut
    answer is never mistaken for a verdict on the whole)."""
    limit = (cfg or VerifierConfig()).max_final_answer_chars
    answer = traj.final_answer or ""
    if len(answer) <= limit:
        return []
    return [Truncation(field="final_answer", original_chars=len(answer),
                       kept_chars=len(elide(answer, limit)))]


def render_rubric(rubric: Rubric) -> str:
    """Stable text form of the rubric (same bytes in every stage, so prompts share a prefix)."""
    out = []
    for c in rubric.criteria:
        head = f"[{c.id}] {c.name} (max {c.max_points:g} points)"
        if c.condition:
            head += f"\n  CONDITIONAL: applies only if {c.condition}"
            if c.exclusive_group:
                head += f" (mutually exclusive group '{c.exclusive_group}')"
        out.append(f"{head}\n  {c.description}")
    if rubric.critical_points:
        allowed = {"granted": "granted by the task", "not_granted": "not granted",
                   "no_critical_point": "not needed"}[rubric.permission.permission]
        out.append(f"Critical points (permission to cross: {allowed}): " + "; ".join(rubric.critical_points))
    return "\n".join(out)


def screenshot_label(traj: Trajectory, number: int, same_as: Sequence[int] = ()) -> str:
    shot = traj.screenshots[number - 1]
    when = "initial page" if shot.step == 0 else f"page {shot.timing} step {shot.step}"
    extra = f"; identical to screenshot(s) {', '.join(map(str, same_as))}" if same_as else ""
    return f"Screenshot {number} of {len(traj.screenshots)} ({when}{extra})"


def image_part(traj: Trajectory, number: int, same_as: Sequence[int] = (), *, coarse: bool = False) -> ImagePart:
    return ImagePart(screenshot=traj.screenshots[number - 1], label=screenshot_label(traj, number, same_as),
                     detail="coarse" if coarse else "full")


#: The one system template of every call (all shared principles, each once, in a fixed order).
SYSTEM_TEMPLATE = "system.j2"
#: Heads the stage's own instructions, which follow the shared context in the user message.
JOB_HEADING = "## Your job in this request"


def system_prompt(rubric: Rubric | None) -> RenderedPrompt:
    """The shared system prompt. With a rubric it ends with the critical-point rules that match the
    rubric's permission profile (the same for every call after the rubric, and for every rollout
    of the task); without one (the rubric calls, which write that profile) it stops before them,
    so those calls share everything up to there."""
    return _system_prompt(None if rubric is None else rubric.permission.model_dump_json(), current_overlay())


@lru_cache(maxsize=256)
def _system_prompt(profile_json: str | None, overlay: Path | None) -> RenderedPrompt:
    """Rendered once per permission profile and prompt overlay (the largest prompt, sent with every
    call; a group's rollouts share one profile). Callers must not mutate the returned prompt."""
    if profile_json is None:
        return render(SYSTEM_TEMPLATE, rules=False)
    return render(SYSTEM_TEMPLATE, rules=True, profile=PermissionProfile.model_validate_json(profile_json))


def shared_context(traj: Trajectory, cfg: VerifierConfig, rubric: Rubric | None, *,
                   with_history: bool = True, cut: int = 0) -> str:
    """The block every call of a trajectory starts with (byte-identical across stages; `cut`:
    the history compression a call's token budget forced, see `history_view`).

    With the history it also carries the run date (`guards.run_date_line`): "latest", "upcoming"
    and "this Sunday" cannot be judged without it, and as part of this block it is the same bytes
    in every call of the verification, so the prefix cache still serves it."""
    text, view = history_view(traj, cfg, cut) if with_history else ("", None)
    return render("context.user.j2", task=traj.task.instruction, start_url=traj.task.start_url,
                  rubric=render_rubric(rubric) if rubric is not None else None,
                  history=fence(text, "action history") if with_history else None,
                  history_note=history_note(view) if view is not None else "", status=render_status(traj),
                  run_date=run_date_line(traj) if with_history else None,
                  final_answer=fence(render_final_answer(traj, cfg), "final answer") if with_history else None,
                  n_screenshots=len(traj.screenshots)).text


def messages(system: RenderedPrompt, shared: str, instructions: str = "", per_call: str = "",
             images: Iterable[ImagePart] = ()) -> list[Message]:
    """[system: the shared principles] [user: shared context, the stage's instructions, the per-call
    text, images last]: everything before the stage's instructions is the same for every call of a
    verification (relevance calls: for every relevance call), so vLLM's prefix cache serves it."""
    parts: list[TextPart | ImagePart] = [TextPart(text=shared)]
    if instructions:
        parts.append(TextPart(text=f"{JOB_HEADING}\n{instructions}"))
    if per_call:
        parts.append(TextPart(text=per_call))
    parts.extend(images)
    return [Message.system(system.text), Message(role="user", content=parts)]


def infos(name: str) -> tuple[PromptInfo, ...]:
    """PromptInfo of template `name` and of every template it includes (recursively), read under
    the current prompt overlay: a replaced principle block changes its own recorded hash."""
    return _infos(name, current_overlay())


@cache  # every judge call records its prompts; templates are read once per process (`prompts`)
def _infos(name: str, overlay: Path | None) -> tuple[PromptInfo, ...]:
    seen: dict[str, PromptInfo] = {}

    def walk(n: str) -> None:
        if n in seen:
            return
        seen[n] = prompt_info(n)
        for inc in _INCLUDE.findall(template_path(n, overlay).read_text(encoding="utf-8")):
            walk(inc)
    walk(name)
    return tuple(seen.values())


def history_text(traj: Trajectory, cfg: VerifierConfig) -> str:
    """The fenced action history alone (for stages that take no rubric)."""
    return fence(render_history(traj, cfg), "action history")
