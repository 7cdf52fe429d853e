"""Actions written as code: a model reply with the call in a code fence, or a pyautogui snippet.

BrowserGym / AgentLab store the agent's whole reply as the action (reasoning, then
```` ```click('79')``` ````), and OSWorld stores `import pyautogui; pyautogui.click(10, 20)`. The
judge should see the call as the action and the prose as the agent's (untrusted) thought, so both
are split here once. The code is only parsed (`ast`), never run; arguments are kept only when they
are plain literals, anything else keeps the source text under `code`.
"""
from __future__ import annotations

import ast
import re
from typing import Any

_FENCE = re.compile(r"```(?:[A-Za-z0-9_+-]*\n)?(.*?)```", re.DOTALL)


def split_reply(reply: str) -> tuple[str | None, str | None]:
    """(code, thought) of a model reply: the last fenced block, and the text around it.

    No fence: a reply that parses as calls only is all code (e.g. `click('79')`, BrowserGym's
    multi-action `click('1'); fill('2', 'x')`); otherwise it is all thought and there is no code.
    """
    fences = list(_FENCE.finditer(reply))
    if fences:
        last = fences[-1]
        code = last.group(1).strip()
        prose = (reply[: last.start()] + reply[last.end():]).strip()
        return code or None, prose or None
    text = reply.strip()
    if text and _calls_only(text):
        return text, None
    return None, text or None


def parse_code(code: str, *, default: str = "code") -> tuple[str, dict[str, Any]]:
    """(action name, arguments) of a code action.

    One call with literal arguments (imports aside) gives its dotted name and `args` / keyword
    arguments; anything else (several calls, variables, loops) gives `default` with the source
    under `code`, so nothing the agent did is lost or invented.
    """
    call = _single_call(code)
    if call is None:
        return default, {"code": code}
    name, args, kwargs = call
    out: dict[str, Any] = {}
    if args:
        out["args"] = args
    out.update(kwargs)
    return name, out


def _calls_only(code: str) -> bool:
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    body = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    return bool(body) and all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) for n in body)


def _single_call(code: str) -> tuple[str, list[Any], dict[str, Any]] | None:
    try:
        tree = ast.parse(code, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    name = _dotted(call.func)
    if name is None:
        return None
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg is not None}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if len(kwargs) != len(call.keywords) or "args" in kwargs or "code" in kwargs:
        return None
    return name, args, kwargs


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))
