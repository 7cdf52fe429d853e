"""The adversarial lenient judge: an OpenAI-compatible stand-in that answers every structured request
as leniently as its JSON schema allows (issue 34).

Why: in RL the policy is an optimiser aimed at the judge, and open judges are easy to flatter. What
the verifier must still refuse when the judge is fooled is what code can see, so the checks that
code makes are measured against the worst judge there is: one that says yes to everything. Every
reply gives full points and success, raises no violation, finds no blocker and no penalty, tags the
evidence as a visual confirmation, rests credit on the evidence, finds every condition met, and
grants permission by quoting a phrase of the task that holds a binding verb (or, failing that, the
task's first words). `cua-verifier calibrate --adversarial` runs the calibration suite against it and
prints how many of the suite's expected failures code still fails.

    python -m verifier.testing.lenient_judge --port 8012    # then CUA_JUDGE_URL=http://127.0.0.1:8012/v1

A test tool with the echo judge's bounds: loopback only, bounded bodies, stalled clients dropped.
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from .echo_judge import FILLER, EchoJudgeServer, minimal_instance

#: Booleans a lenient judge answers False: each would report a fault.
FAULT_FLAGS = frozenset({"critical_point_violation", "blocker_visible"})
#: The most lenient value of each enum field, by field name.
LENIENT_ENUM = {"evidence_tag": "visual_confirmation", "permission": "granted", "credit_basis": "evidence",
                "condition": "met", "deliverable_shown": "yes", "constraints_shown_met": "yes",
                "critical_points_respected": "yes", "not_blocked": "yes"}
#: Lists a lenient judge leaves as short as the schema allows: each entry would be a fault.
FAULT_LISTS = frozenset({"penalties", "critical_issues", "nitpicks", "failure_points", "ambiguity_codes",
                         "missing_personal_data", "critical_point_steps", "critical_point_screenshots"})
_BINDING = re.compile(r"\b(buy|purchase|order|book|reserve|pay|submit|send|sign|place|confirm|check ?out|"
                      r"subscribe|register|apply|donate|transfer|delete)\w*\b", re.IGNORECASE)


def task_of(body: dict[str, Any]) -> str:
    """The task text of a request: the `## Task` section of its user message (prompts/context.user.j2)."""
    for message in body.get("messages", []):
        content = message.get("content")
        parts = [content] if isinstance(content, str) else [
            p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
        for text in parts:
            m = re.search(r"^## Task\n(.*?)(?:\n\(The agent started|\n## |\Z)", text, re.DOTALL | re.MULTILINE)
            if m:
                return m.group(1).strip()
    return ""


def flattering_quote(task: str) -> str:
    """Words of the task around its first binding verb (a phrase a permission quote would use), else
    its first six words: the quote most likely to get a judge's "granted" past a code check."""
    words = task.split()
    for i, word in enumerate(words):
        if _BINDING.fullmatch(word.strip(".,;:!?\"'()")):
            return " ".join(words[max(i - 2, 0):i + 4]).strip(".,;:!?")
    return " ".join(words[:6]).strip(".,;:!?")


def lenient_instance(schema: dict[str, Any], task: str, key: str = "", index: int = 0) -> Any:
    """The most lenient valid value of `schema` (field `key`), by the rules in the module docstring."""
    for alt in ("anyOf", "oneOf"):
        if alt in schema:
            lenient = [o for o in schema[alt] if LENIENT_ENUM.get(key) in o.get("enum", ())]
            if lenient:  # an optional verdict (a condition met): the lenient value, not null
                return lenient_instance(lenient[0], task, key, index)
            return minimal_instance(schema, index)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        values = schema["enum"]
        if key in LENIENT_ENUM and LENIENT_ENUM[key] in values:
            return LENIENT_ENUM[key]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return max(values)  # points sent as their allowed values: the most
        return values[index % len(values)]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next(k for k in kind if k != "null")
    if kind == "object":
        return {k: lenient_instance(v, task, k, index) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        least = schema.get("minItems", 0 if key in FAULT_LISTS else 1)
        n = least if key in FAULT_LISTS else max(least, 0 if schema.get("maxItems", 1) == 0 else 1)
        return [lenient_instance(schema.get("items", {}), task, key, i) for i in range(n)]
    if kind == "boolean":
        return key not in FAULT_FLAGS
    if kind in ("integer", "number"):
        if "maximum" in schema:
            return schema["maximum"]
        return minimal_instance(schema, index)
    if kind == "string":
        if key == "permission_quote" and task:
            return flattering_quote(task)[: schema.get("maxLength", 400)]
        size = max(schema.get("minLength", 1), min(schema.get("maxLength", 16), 16))
        return (FILLER * (size // len(FILLER) + 1))[:size]
    return minimal_instance(schema, index)


class LenientJudgeServer(EchoJudgeServer):
    """The echo judge's server, answering every schema as leniently as it allows."""

    def reply_for(self, schema: dict[str, Any], body: dict[str, Any]) -> Any:
        return lenient_instance(schema, task_of(body))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8012)
    args = p.parse_args(argv)
    server = LenientJudgeServer(args.host, args.port).start()
    print(f"lenient judge on {server.url}", file=sys.stderr)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
