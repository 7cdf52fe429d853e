"""Every judge call fits the judge's context: estimate, shrink in a fixed order, or refuse to send.

Why: prompts used to be built without looking at the served context; a long trajectory failed only
when vLLM answered 400 after minutes of work (issue 24). `Run.ask` now asks `fit` before each call.

The estimate is prompt tokens (text through `ServedModel.tokenizer`, each image by its size as sent
and the model family's resize rule, a margin for the chat template) plus the call's reply room. The
room is the output schema's worst case (`reply_reserve`) where the prompt leaves it; a longer prompt
may take it down to `reply_floor` (half the reserve) before anything is cut, and the call then asks
for only the room left (`Fitted.reply_tokens`, sent as ``max_tokens``). Why: the worst case (every
bounded field full) is a bound no real reply nears: each bound sits at least twice above the
largest value seen from a real judge (`verifier.limits`), so refusing or cutting a prompt to keep
it free loses information for room a reply never uses. A reply that does reach the smaller room is
cut off, and a cut reply is never parsed: it is re-asked once, then a `JudgeTruncatedError`.
When even the floor does not fit, the call is shrunk one step at a time, least information lost
first, until it fits:

1. ``compress_thoughts``: every thought shortened (every action line kept);
2. ``shorten_older_thoughts``: thoughts of older steps left out, their long arguments shortened;
3. ``drop_repeated_evidence``: evidence text repeated across criteria given once;
4. ``fewer_screenshots``: fewer final screenshots, the last one always kept;
5. ``split_batch``: a per-criterion call split into smaller batches (`SplitNeeded`, only where the
   stage can merge the halves: evidence).

Each step applies only where the call has that part. What was cut is recorded per stage in the
result (`HistoryView.trims`). When even the last step leaves it too long, `ContextOverflowError`
names the context, the tokens needed, and the flag or preset that would hold them; nothing is sent.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import JudgeError
from .judge.base import ImagePart
from .judge.images import target_size
from .judge.schema import json_schema_for, reply_token_budget
from .judge.served import ServedModel, fitting_presets

STEPS = ("compress_thoughts", "shorten_older_thoughts", "drop_repeated_evidence", "fewer_screenshots",
         "split_batch")
#: Chat-template tokens per message and per part (role markers, image labels' separators).
MESSAGE_OVERHEAD = 16
PART_OVERHEAD = 4


class ContextOverflowError(JudgeError):
    """The stage's irreducible prompt does not fit the judge's context; it was not sent."""

    def __init__(self, message: str, *, stage: str | None = None, needed: int = 0, context: int = 0) -> None:
        super().__init__(message, stage=stage)
        self.needed, self.context = needed, context


class SplitNeeded(ContextOverflowError):
    """Raised to a stage that can split its call (step 5); others see a `ContextOverflowError`."""


def remedy(needed: int, context: int) -> str:
    """The flag or preset that would hold `needed` tokens."""
    longer = 1 << max(needed - 1, 1).bit_length()
    presets = fitting_presets(needed)
    alt = f", or a preset with a longer context ({', '.join(presets)})" if presets else ""
    return (f"serve the judge with a longer context: `serve-judge --max-model-len {longer}` (vLLM "
            f"`--max-model-len {longer}`){alt}; or show fewer screenshots per call (config "
            "`final_screenshots`, `relevance_batch_size`)")


@dataclass
class Parts:
    """One call's prompt, in the order `rendering.messages` sends it."""

    system: str
    shared: str
    instructions: str
    per_call: str
    images: list[ImagePart]


@dataclass
class Fitted:
    parts: Parts
    cuts: list[str]
    tokens_before: int
    tokens_after: int
    dropped_images: int = 0
    history_cut: int = 0  # the `rendering.history_view` cut level the shared context was sent at
    reply_tokens: int | None = None  # the reply room left, when below the reserve (None: all of it)


@dataclass
class Budget:
    """The served model's facts plus how the client sizes images (`JudgeConfig.image_max_*`)."""

    served: ServedModel
    context: int
    image_max_side: int | None = None
    image_max_pixels: int | None = None
    _image_tokens: dict[str, int] = field(default_factory=dict)

    def image_tokens(self, part: ImagePart) -> int:
        shot = part.screenshot
        key = shot.known_sha256 or str(id(shot))
        if key not in self._image_tokens:
            w, h = shot.size()
            w, h = target_size(w, h, self.image_max_side, self.image_max_pixels)
            self._image_tokens[key] = self.served.image_tokens(w, h)
        label = len(part.label.encode("utf-8")) if part.label else 0
        return self._image_tokens[key] + label + PART_OVERHEAD

    def prompt_tokens(self, p: Parts, *, bound: bool = False) -> int:
        """Estimated prompt tokens; `bound`: the UTF-8 byte count of the text instead (an upper
        bound for byte-level BPE, free to compute: most calls fit by it and need no count)."""
        count = _bytes if bound else self.served.tokenizer.count
        texts = [t for t in (p.shared, p.instructions, p.per_call) if t]
        return (2 * MESSAGE_OVERHEAD + count(p.system) + sum(count(t) + PART_OVERHEAD for t in texts)
                + sum(self.image_tokens(i) for i in p.images))

    def fit(self, parts: Parts, *, reserve: int, stage: str, shared_at: Callable[[int], str] | None = None,
            lean_per_call: str | None = None, images_droppable: bool = False,
            splittable: bool = False, floor: int | None = None) -> Fitted:
        """Shrink `parts` in the fixed order until prompt + reply room fits the context: the room is
        `reserve` where the prompt leaves it, else whatever is left down to `floor` (default
        `reserve`: no give), and only below that is the prompt cut.

        Raises:
            SplitNeeded: steps 1-4 were not enough and `splittable` (the stage splits the call).
            ContextOverflowError: not even the smallest form of the call fits.
        """
        floor = reserve if floor is None else min(floor, reserve)
        if (upper := self.prompt_tokens(parts, bound=True)) <= self.context - reserve:
            return Fitted(parts, [], upper, upper)  # fits even counting a token per byte
        before = self.prompt_tokens(parts)
        if before <= self.context - floor:
            return Fitted(parts, [], before, before, reply_tokens=self._room(before, reserve))
        fitted = self._shrink(parts, floor, stage, shared_at, lean_per_call, images_droppable, splittable, before)
        fitted.reply_tokens = self._room(fitted.tokens_after, reserve)
        return fitted

    def check_core(self, system: str, core: str) -> None:
        """Refuse, before any call, a run whose irreducible core cannot fit: the system prompt and
        the history at its last cut (every action line, no thought; `core`), which every call that
        shows the history carries whatever else is shrunk. Why: a 10,000-step run cannot fit a 32k
        judge, and finding out at the first call that needs the history cost 75 calls (rubric and
        relevance rows) first."""
        needed = self.prompt_tokens(Parts(system, core, "", "", []), bound=True)
        if needed <= self.context:
            return
        needed = self.prompt_tokens(Parts(system, core, "", "", []))
        if needed > self.context:
            raise ContextOverflowError(
                f"this run cannot fit the judge's context: its action history alone, with every thought "
                f"left out, and the system prompt need about {needed} tokens, and the context is "
                f"{self.context} tokens ({self.served.context_source}); no call was sent. Fix: "
                f"{remedy(needed, self.context)}", stage="history", needed=needed, context=self.context)

    def _room(self, prompt: int, reserve: int) -> int | None:
        """The reply room a prompt of `prompt` tokens leaves, None when it leaves the whole reserve."""
        room = self.context - prompt
        return None if room >= reserve else room

    def _shrink(self, parts: Parts, floor: int, stage: str,
                shared_at: Callable[[int], str] | None, lean_per_call: str | None, images_droppable: bool,
                splittable: bool, before: int) -> Fitted:
        """Steps 1-4 in order (see the module docstring), then the typed failure."""
        limit, now = self.context - floor, before
        cuts: list[str] = []
        dropped = 0
        cut = 0
        if shared_at is not None:  # level 3: all thoughts out, long arguments shortened
            for level, step in ((1, "compress_thoughts"), (2, "shorten_older_thoughts"),
                                (3, "shorten_older_thoughts")):
                text = shared_at(level)
                if text == parts.shared:
                    continue  # the character budget had compressed this far already
                parts.shared, cut = text, level
                if step not in cuts:
                    cuts.append(step)
                now = self.prompt_tokens(parts)
                if now <= limit:
                    return Fitted(parts, cuts, before, now, history_cut=cut)
        if lean_per_call is not None and lean_per_call != parts.per_call:
            parts.per_call = lean_per_call
            cuts.append("drop_repeated_evidence")
            now = self.prompt_tokens(parts)
            if now <= limit:
                return Fitted(parts, cuts, before, now, history_cut=cut)
        if images_droppable and len(parts.images) > 1:
            cuts.append("fewer_screenshots")
            while len(parts.images) > 1 and now > limit:
                parts.images = parts.images[1:]  # the earliest goes first: the last one stays
                dropped += 1
                now = self.prompt_tokens(parts)
            if now <= limit:
                return Fitted(parts, cuts, before, now, dropped, cut)
        needed = now + floor
        msg = (f"the {stage} call needs about {needed} tokens ({now} prompt + {floor} reply) after "
               f"shrinking ({', '.join(cuts) or 'nothing to shrink'}), but the judge's context is "
               f"{self.context} tokens ({self.served.context_source}); it was not sent. Fix: "
               f"{remedy(needed, self.context)}")
        if splittable:
            raise SplitNeeded(msg, stage=stage, needed=needed, context=self.context)
        raise ContextOverflowError(msg, stage=stage, needed=needed, context=self.context)


def reply_reserve(output_model: type, asked: int) -> int:
    """Context kept free for the reply: the `asked` max_tokens, or the output schema's worst case
    (every bounded field full) where that is smaller. Under constrained decoding a valid reply
    cannot be longer, and vLLM (>= 0.32) clamps a larger max_tokens to the room the prompt leaves,
    so reserving a configured floor above the worst case (8192 on the demo judge) would only
    shrink prompts for nothing."""
    return reply_token_budget(json_schema_for(output_model), floor=1, cap=asked)


def reply_floor(reserve: int) -> int:
    """The least reply room a call is sent with before its prompt is cut: half its reserve. Each
    reply bound sits at least twice above the largest value a real judge wrote (`verifier.limits`),
    so a reply as long as the longest seen still fits; a longer one is cut and reported, never parsed."""
    return max(1, -(-reserve // 2))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def halves(items: Sequence[Any]) -> list[list[Any]]:
    """Split a batch in two (step 5); a batch of one cannot split."""
    mid = (len(items) + 1) // 2
    return [list(items[:mid]), list(items[mid:])]


async def budget_for(judge: Any) -> Budget | None:
    """The budget of `judge`: None when its context is unknown (nothing is enforced then).

    A judge offers its facts through ``served_model()`` (`OpenAICompatJudge` asks its server once);
    test doubles may set a ``served`` attribute instead."""
    served = getattr(judge, "served", None)
    getter = getattr(judge, "served_model", None)
    if served is None and callable(getter):
        served = await getter()
    if not isinstance(served, ServedModel) or served.context_tokens is None:
        return None
    cfg = getattr(judge, "config", None)
    return Budget(served, served.context_tokens, image_max_side=getattr(cfg, "image_max_side", None),
                  image_max_pixels=getattr(cfg, "image_max_pixels", None))
