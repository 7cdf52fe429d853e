"""Helpers every loader shares: strict file reading with located errors, thought extraction,
screenshot-to-step mapping and run-status inference.

They exist so that each format module only describes *where* things are in its format; the rules
(what counts as a thought, which step a screenshot belongs to, when a mismatch is an error) are
decided once, here.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ScreenshotError, TrajectoryError
from ..trajectory import RunStatus, Screenshot, Step
from ..trajectory import path_inside as inside

NO_ANSWER = "<no_answer>"

#: Deepest nesting of lists/objects accepted in trajectory JSON. Real records nest under 10 levels
#: (record > steps > step > arguments > ...); 100 leaves room for odd tool arguments while staying
#: far below the parser's recursion limit (~1,000) and pydantic's serialisation limit (255), so a
#: value that loads can also be rendered, hashed and written back.
MAX_JSON_DEPTH = 100

#: Argument keys that hold the agent's own words, not tool arguments. They go to `Step.thought`.
STATE_KEYS = ("state_description", "screen_description")
REASONING_KEYS = ("reasoning", "thoughts", "thought")

#: Actions after which the agent has stopped on its own.
TERMINAL_ACTIONS = {"terminate", "stop_and_answer_question", "stop_execution", "stop", "answer",
                    "done", "finish"}


def find_folders(root: Path, is_run: Callable[[Path], bool], *, depth: int) -> list[Path]:
    """Every folder at most `depth` levels below `root` for which `is_run` holds (not looking inside
    those), sorted; symlinked folders are not followed (a link loop would never end)."""
    found: list[Path] = []
    level = [root]
    for _ in range(depth):
        nxt: list[Path] = []
        for folder in level:
            try:
                children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
            except OSError:
                continue
            for child in children:
                (found if is_run(child) else nxt).append(child)
        level = nxt
    return sorted(found)


def read_text(path: Path, *, what: str) -> str:
    """UTF-8 text of `path`; missing, non-UTF-8 or empty files raise with file (and line)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TrajectoryError(f"{what} not found", file=str(path)) from None
    except OSError as exc:
        raise TrajectoryError(f"cannot read {what}: {exc.strerror or exc}", file=str(path)) from exc
    return decode_text(data, file=str(path), what=what)


def decode_text(data: bytes | str, *, file: str, what: str) -> str:
    if isinstance(data, str):
        text = data
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise TrajectoryError(f"{what} is not valid UTF-8 (byte {exc.start})", file=file,
                                  line=line) from None
    if not text.strip():
        raise TrajectoryError(f"{what} is empty", file=file)
    return text


def parse_json(text: str, *, file: str, what: str, line_offset: int = 0, line: int | None = None) -> Any:
    """`json.loads` of untrusted text whose every failure is a `TrajectoryError` naming file and line.

    Why more than `json.loads`: a document nested ~1,000 levels deep makes the parser raise
    `RecursionError` (not a `ValueError`), which escaped every caller and killed whole scoring runs.
    It is caught here, and what parses is held to `MAX_JSON_DEPTH` (see `check_depth`). `line` names
    the line of a one-line document (JSONL); otherwise the decoder's line (+ `line_offset`) is used.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TrajectoryError(f"{what} is not valid JSON ({exc.msg}, column {exc.colno})", file=file,
                              line=line if line is not None else exc.lineno + line_offset) from None
    except RecursionError:
        raise too_deep(what, file=file, line=line) from None
    check_depth(data, file=file, what=what, line=line)
    return data


def too_deep(what: str, *, file: str, line: int | None = None, field: str | None = None) -> TrajectoryError:
    return TrajectoryError(f"{what} is nested too deeply (more than {MAX_JSON_DEPTH} levels of objects/"
                           "lists)", file=file, line=line, field=field)


def check_depth(data: Any, *, file: str, what: str, line: int | None = None, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise when lists/objects nest deeper than `limit`. Iterative: a deep value cannot overflow it."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[Any] = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > limit:
            raise too_deep(what, file=file, line=line)
        stack.extend((child, depth + 1) for child in children)


def read_json(path: Path, *, what: str) -> Any:
    return parse_json(read_text(path, what=what), file=str(path), what=what)


def iter_json_lines(text: str, *, file: str, what: str) -> Iterable[tuple[int, Any]]:
    """(1-based line number, object) per non-blank line; a bad, truncated or too deep line raises."""
    lines = text.splitlines()
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = " (truncated last line?)" if no == len(lines) else ""
            raise TrajectoryError(f"{what}: invalid JSON line{hint}: {exc.msg}", file=file,
                                  line=no) from None
        except RecursionError:
            raise too_deep(what, file=file, line=no) from None
        check_depth(data, file=file, what=what, line=no)
        yield no, data


def to_epoch(value: Any) -> float | None:
    """Unix seconds from a float or an ISO-8601 string (naive times are read as UTC)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    return None


def split_thought(arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Tool arguments without the agent's narration, and that narration as one thought text.

    GPT-solver logs put `state_description` + `reasoning` inside the argument dict, Fara logs a
    `thoughts` key. The judge must see them as the agent's (untrusted) words, apart from what the
    tool was actually asked to do.
    """
    args = dict(arguments)
    state = [str(args.pop(k)) for k in STATE_KEYS if args.get(k) not in (None, "")]
    reasons = [str(args.pop(k)) for k in REASONING_KEYS if args.get(k) not in (None, "")]
    for k in STATE_KEYS + REASONING_KEYS:
        args.pop(k, None)
    if state and reasons:
        return args, f"State: {' '.join(state)}\nReasoning: {' '.join(reasons)}"
    text = " ".join(state + reasons)
    return args, text or None


def make_step(index: int, tool: str | None, arguments: Any, *, thought: str | None = None,
              url: str | None = None, timestamp: Any = None, error: Any = None, file: str,
              line: int | None = None) -> Step:
    """One `Step` from a logged action. A Fara-native `{"action": "left_click", ...}` argument dict
    names the real action; it is lifted into `Step.action`."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise TrajectoryError(f"arguments must be an object, got {type(arguments).__name__}",
                              file=file, line=line, field="arguments")
    args, own_thought = split_thought(arguments)
    action = tool
    if isinstance(args.get("action"), str) and args["action"].strip():
        action = args.pop("action").strip()
    if not action or not str(action).strip():
        raise TrajectoryError("action has no name", file=file, line=line, field="action")
    thoughts = [t for t in dict.fromkeys((thought, own_thought)) if t]  # Fara logs repeat them
    return Step(index=index, action=str(action).strip(), arguments=args,
                thought="\n".join(thoughts) or None, url=url or None, timestamp=to_epoch(timestamp),
                error=str(error) if error not in (None, "") else None)


def answer_or_none(value: Any, *, file: str, field: str = "final_answer") -> str | None:
    if value is None or value == NO_ANSWER:
        return None
    if not isinstance(value, str):
        raise TrajectoryError(f"must be a string, got {type(value).__name__}", file=file, field=field)
    return value


def infer_status(*, aborted: bool, final_answer: str | None, steps: Sequence[Step]) -> RunStatus:
    """Formats only say "aborted" or not; the rest is inferred from how the run ended.

    A run that was not aborted, never answered and whose last action is not a stop action was cut
    off by the harness: the step budget ran out.
    """
    if aborted:
        return RunStatus.aborted
    if final_answer is None and not (steps and steps[-1].action.lower() in TERMINAL_ACTIONS):
        return RunStatus.step_budget_exhausted
    return RunStatus.finished


def place_screenshots(numbered: Sequence[tuple[int, Screenshot]], n_steps: int, *, first: int,
                      file: str) -> tuple[list[Screenshot], list[str]]:
    """Give each screenshot its step and timing from its number in the source format.

    `first` is the number of the screenshot showing the page before step 1: 1 for webeval's
    `screenshot_<k>` (k = the action it precedes), 0 for Fara-native `screenshot<i>`, Online-Mind2Web
    and CUAVerifierBench (0 = initial page, i = after action i). So number `first + k - 1` is "before
    step k" and anything past the last step is "after step n" (the final page, kept, unlike the
    reference verifier, which drops it). Count mismatches are reported as warnings, never fatal;
    two screenshots claiming the same number are ambiguous and raise.
    """
    seen: dict[int, int] = {}
    for pos, (num, _) in enumerate(numbered):
        if num in seen:
            raise TrajectoryError(f"two screenshots are both number {num}", file=file,
                                  field=f"screenshots[{pos}]")
        seen[num] = pos
    warnings: list[str] = []
    out: list[Screenshot] = []
    after_last = 0
    for num, shot in sorted(numbered, key=lambda p: p[0]):
        k = num - first + 1
        if k < 1:
            raise TrajectoryError(f"screenshot number {num} is below the first ({first})", file=file)
        if k <= n_steps:
            shot.step, shot.timing = k, "before"
        else:
            shot.step, shot.timing = n_steps, "after"
            after_last += 1
        out.append(shot)
    before = {s.step for s in out if s.timing == "before"}
    missing = [k for k in range(1, n_steps + 1) if k not in before]
    if missing:
        warnings.append(f"{len(out)} screenshots for {n_steps} steps: no screenshot before step(s) "
                        f"{_ranges(missing)}")
    if after_last > 1:
        warnings.append(f"{len(out)} screenshots for {n_steps} steps: {after_last} screenshots come "
                        f"after the last step (all placed at step {n_steps}, timing 'after')")
    return out, warnings


OUTSIDE_HINT = "--allow-outside-screenshots (allow_outside_screenshots=True) permits it"


def confine_screenshots(shots: Sequence[Screenshot], root: str | os.PathLike[str] | None, *,
                        allow_outside: bool, file: str) -> None:
    """Refuse screenshot files outside the trajectory's folder (`root`; None = the working folder).

    Why: the paths come with the data. `../`, an absolute path or a symlink could otherwise send any
    image this process can read to the judge, which may be remote. The check resolves symlinks
    and runs whether or not images are checked; `allow_outside` is the user's explicit opt-in.
    """
    if allow_outside:
        return
    base = os.path.abspath(root if root is not None else os.getcwd())
    for pos, shot in enumerate(shots):
        if shot.path is None:
            continue
        if not inside(shot.path, base):
            raise ScreenshotError(f"screenshot {pos + 1} of {len(shots)}: path {shot.path!r} leads outside the "
                                  f"trajectory folder {base} (to {os.path.realpath(shot.path)}); "
                                  f"{OUTSIDE_HINT}", file=file, field=f"screenshots[{pos}]")
        shot.confine_to(base)


def check_screenshots(shots: Sequence[Screenshot], *, file: str,
                      each: Callable[[Screenshot], None] | None = None) -> None:
    """Cheap load-time check (exists, is an image, within size guards) without decoding pixels.

    A data URL whose text repeats an earlier one's (a page that did not change) adopts that
    screenshot's checked facts instead of being decoded again. Candidates are found by length and
    tail (no hash of megabytes of text); the full texts are compared before adopting.

    `each` runs on every checked screenshot (not on the twins that adopt one) right after its
    check: work on its decoded bytes (hashing, verifying) is then done while they are still in the
    CPU's cache, rather than in a second pass after every other image has evicted them."""
    seen: dict[tuple[int, str], list[Screenshot]] = {}
    for pos, shot in enumerate(shots):
        url = shot.data_url
        key = (len(url), url[-64:]) if url is not None else None
        twin = next((s for s in seen.get(key, ()) if shot.same_data_url(s)), None) if key else None
        if twin is not None:
            shot.adopt(twin)
            continue
        try:
            shot.size()
        except ScreenshotError as exc:
            raise ScreenshotError(f"screenshot {pos + 1} of {len(shots)} (step {shot.step}, "
                                  f"{shot.timing}): {exc.reason}", file=exc.file or file,
                                  field=exc.field or f"screenshots[{pos}]") from exc
        if each is not None:
            each(shot)
        if key is not None:
            seen.setdefault(key, []).append(shot)


def _ranges(nums: Sequence[int]) -> str:
    parts: list[str] = []
    start = prev = nums[0]
    for n in list(nums[1:]) + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)
