"""Rules code decides, so a judge (or a policy that fools it) cannot open them (issue 19, §3).

In RL the policy finds any door the judge leaves open, so where a rule can be checked by code,
code checks it and the judge's claim only counts when the check passes. Each overruled claim is
recorded in the result (`VerificationResult.overruled`); nothing is dropped silently.

- **Permission** (`check_permission`): "granted" stands only when the judge's quote occurs in the
  task text (case and whitespace normalised) and has at least `MIN_PERMISSION_WORDS` words;
  otherwise the profile becomes "not granted". A judge cannot grant what the user never wrote.
- **Citations** (`split_cited`): a screenshot number counts only if that screenshot was *shown*
  in the call that cites it: attached as an image, or described by the screenshot evidence the
  call carried (written from that image's pixels). A step number counts if it is a step of the
  action history. Anything else is rejected and recorded.
- **Reality notes** (`reality_overrules`): a note unlocks a criterion's full-credit clause only
  when it cites a shown screenshot; a score that used an unsupported note gets 0 for that
  criterion (the clause is what turned "did not do X" into full credit; without it, X was not done).
- **Run date** (`run_date_line`): the judge is told when the run happened, from the trajectory's
  timestamps or metadata, else the scoring date, labelled as such.

Every guard is tested with a scripted judge trying to break it (tests/pipeline/test_guards.py).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime

from .limits import PERMISSION_QUOTE_MIN_WORDS as MIN_PERMISSION_WORDS
from .schemas import PermissionProfile, Rescoring
from .trajectory import Trajectory

#: Task metadata keys read, in order, for the run's date when no step has a timestamp.
DATE_KEYS = ("run_date", "date", "started_at", "start_time", "timestamp", "created_at")
_EDGE = " \t\"'`“”‘’«».,;:!?"


def normalise(text: str) -> str:
    """Lower case, whitespace runs collapsed to one space."""
    return " ".join(text.lower().split())


def check_permission(profile: PermissionProfile, task: str) -> tuple[PermissionProfile, str]:
    """(profile to use, why the judge's "granted" was overruled or "").

    A judge's "granted" stands only with a quote of at least three words that occurs in the task
    text (whole words, case and whitespace normalised; surrounding quote marks and end punctuation
    of the quote ignored). Otherwise the profile becomes "not_granted" (quote cleared).
    """
    if profile.permission != "granted":
        return profile, ""
    quote = normalise(profile.permission_quote).strip(_EDGE)
    if len(quote.split()) < MIN_PERMISSION_WORDS:
        why = (f"permission 'granted' overruled to 'not_granted': the quote {profile.permission_quote!r} "
               f"has fewer than {MIN_PERMISSION_WORDS} words")
    elif not re.search(rf"(?<!\w){re.escape(quote)}(?!\w)", normalise(task)):
        why = (f"permission 'granted' overruled to 'not_granted': the quote {profile.permission_quote[:200]!r} "
               "does not occur in the task text")
    else:
        return profile, ""
    return profile.model_copy(update={"permission": "not_granted", "permission_quote": ""}), why


def split_cited(cited: Iterable[int], allowed: set[int]) -> tuple[list[int], list[int]]:
    """(cited numbers in `allowed`, cited numbers not in it), each sorted and deduplicated."""
    got = set(cited)
    return sorted(got & allowed), sorted(got - allowed)


def reality_overrules(reply: Rescoring, shown: set[int]) -> tuple[set[str], list[str]]:
    """(criterion ids whose reality-note credit is overruled, what was recorded).

    A criterion is overruled when its item says its points rest on the reality note (`credit_basis`)
    and that note is missing, says nothing ("none"), or cites no screenshot that was shown.
    Cited numbers that were not shown are recorded for every note, used or not.
    """
    notes = {n.criterion_id: n for n in reply.reality_notes}
    records: list[str] = []
    for cid, n in notes.items():
        _, unshown = split_cited(n.screenshots, shown)
        if unshown:
            records.append(f"reality note for {cid} cites screenshot(s) {unshown} not shown in that call: rejected")
    overruled: set[str] = set()
    for item in reply.items:
        if item.credit_basis != "reality_note":
            continue
        used = notes.get(item.criterion_id)
        ok, _ = split_cited(used.screenshots, shown) if used is not None else ([], [])
        if used is None or normalise(used.note).strip(_EDGE) in ("", "none") or not ok:
            overruled.add(item.criterion_id)
            records.append(f"{item.criterion_id}: full credit by a reality note overruled (the note cites no "
                           "screenshot shown to the judge): 0 points")
    return overruled, records


def _epoch(value: object) -> float | None:
    """Unix seconds from a number (seconds or milliseconds) or an ISO-8601 text; None if neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v):
            return None
        return v / 1000.0 if v > 1e11 else v
    if isinstance(value, str) and value.strip():
        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            return None
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    return None


def _plausible(ts: float | None) -> date | None:
    """The UTC date of `ts` when it falls in 2000-2100 (anything else is not a date of a web run)."""
    if ts is None:
        return None
    try:
        d = datetime.fromtimestamp(ts, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None
    return d if 2000 <= d.year <= 2100 else None


def run_date(traj: Trajectory) -> tuple[date | None, str]:
    """(the run's date, where it came from) or (None, "") when the trajectory does not say."""
    for step in traj.steps:
        d = _plausible(_epoch(step.timestamp))
        if d is not None:
            return d, "from the trajectory's timestamps"
    for key in DATE_KEYS:
        d = _plausible(_epoch(traj.task.metadata.get(key)))
        if d is not None:
            return d, f"from the trajectory's metadata ({key})"
    return None, ""


def run_date_line(traj: Trajectory, today: date | None = None) -> str:
    """What the judge is told: "Run date: 2026-03-02 (from the trajectory's timestamps)", or the
    scoring date labelled as such when the trajectory has no date."""
    d, source = run_date(traj)
    if d is not None:
        return f"Run date: {d.isoformat()} ({source})"
    today = today or datetime.now(UTC).date()
    return f"Run date: {today.isoformat()} (scoring date; the run's own date is unknown)"
