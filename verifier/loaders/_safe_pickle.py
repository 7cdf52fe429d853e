"""A restricted unpickler for BrowserGym / AgentLab step files.

Why: a pickle can name any importable callable and have the unpickler call it (`__reduce__`), so
`pickle.load` on a downloaded trajectory runs whatever its author wanted. `find_class` below is
the only door to code: it answers with an inert record class for the step types this loader
reads, with numpy's array reconstruction (or an inert placeholder without numpy), and with a
refusal for everything else, so a malicious file fails before anything it names is even imported.
Decompressed size is capped too (a small .gz can inflate to gigabytes).

AgentLab's GenericAgent (0.4.2) stores `agent_info=AgentInfo(think=..., chat_messages=Discussion(...))`
in every step, so those classes (and the dict-based messages a `Discussion` holds) are answered
with inert records too, but only in a step file (`STEP_FILE`): a goal file (`GOAL_FILE`) needs no
class at all, and every other class name stays refused in both.
"""
from __future__ import annotations

import gzip
import io
import pickle
from pathlib import Path
from typing import Any

from ..errors import TrajectoryError

#: Largest decompressed step pickle read (real ones are a few MB: axtree, pruned HTML).
MAX_PICKLE_BYTES = 256 * 1024 * 1024

#: Step record classes, under BrowserGym's and AgentLab's module names.
_STEP_RECORDS = frozenset((module, name) for module in ("browsergym.experiments.loop", "agentlab.experiments.loop")
                          for name in ("StepInfo", "StepTimestamps"))
#: What an agent puts in `StepInfo.agent_info`: BrowserGym's `AgentInfo` and AgentLab's `Discussion`.
_AGENT_RECORDS = frozenset({("browsergym.experiments.agent", "AgentInfo"), ("agentlab.llm.llm_utils", "Discussion")})
#: The messages of a `Discussion`: `dict` subclasses, so they unpickle as inert dicts.
_AGENT_MESSAGES = frozenset(("agentlab.llm.llm_utils", name)
                            for name in ("BaseMessage", "SystemMessage", "HumanMessage", "AIMessage"))
#: Globals a step file may name (besides numpy and plain builtins), and a goal file.
STEP_FILE = _STEP_RECORDS | _AGENT_RECORDS | _AGENT_MESSAGES
GOAL_FILE: frozenset[tuple[str, str]] = frozenset()

#: numpy array reconstruction under numpy 1 (`numpy.core`) and numpy 2 (`numpy._core`) names.
_NUMPY = {("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
          ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
          ("numpy._core.multiarray", "scalar")}

#: Harmless builtins older pickle protocols reference for plain containers.
_BUILTINS = {("builtins", "set"), ("builtins", "frozenset"), ("builtins", "complex"),
             ("builtins", "bytearray"), ("collections", "OrderedDict")}


class Record:
    """An inert stand-in for a pickled step object: it only stores the state it is given."""

    type_name = "Record"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.__dict__["_args"] = args

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots) from __slots__ classes
            state = {**(state[0] or {}), **(state[1] or {})}
        if isinstance(state, dict):
            self.__dict__.update({str(k): v for k, v in state.items()})
        else:
            self.__dict__["_state"] = state

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)


class MessageRecord(dict):  # type: ignore[type-arg]
    """An inert stand-in for a pickled `dict` subclass (an AgentLab chat message): a plain dict."""

    type_name = "Message"

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.__dict__.update({str(k): v for k, v in state.items()})


class NumpyPlaceholder(Record):
    """What an array becomes when numpy is not installed (the loader never needs array contents)."""

    type_name = "ndarray"


_records: dict[str, type[Any]] = {}


def _record_class(name: str, base: type[Any] = Record) -> type[Any]:
    if name not in _records:
        _records[name] = type(name, (base,), {"type_name": name})
    return _records[name]


class RestrictedUnpickler(pickle.Unpickler):
    """Resolves only the allow-listed globals; anything else raises `pickle.UnpicklingError`.

    `allowed`: the (module, class) pairs answered with inert records (`STEP_FILE`, `GOAL_FILE`).
    """

    def __init__(self, file: Any, *, allowed: frozenset[tuple[str, str]] = STEP_FILE) -> None:
        super().__init__(file)
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.allowed:
            return _record_class(name, MessageRecord if (module, name) in _AGENT_MESSAGES else Record)
        if (module, name) in _NUMPY:
            return _numpy_global(name)
        if (module, name) in _BUILTINS:
            return super().find_class(module, name)
        kinds = ("BrowserGym/AgentLab StepInfo, StepTimestamps, AgentInfo, Discussion and numpy arrays"
                 if self.allowed else "plain lists, dicts and strings")
        raise pickle.UnpicklingError(f"refused global {module}.{name} (only {kinds} may appear in this file)")


def _numpy_global(name: str) -> Any:
    """The installed numpy's object for `name`, whichever major version wrote the file."""
    import importlib

    try:
        numpy = importlib.import_module("numpy")
    except ImportError:
        return NumpyPlaceholder
    if name in ("ndarray", "dtype"):
        return getattr(numpy, name)
    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    return NumpyPlaceholder


def load_pickle(path: Path, *, what: str, allowed: frozenset[tuple[str, str]] = STEP_FILE) -> Any:
    """The object in `path` (.pkl or .pkl.gz), read with `RestrictedUnpickler(allowed=)`; errors name the file."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as gz:
                raw = gz.read(MAX_PICKLE_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TrajectoryError(f"cannot read {what}: {exc}", file=str(path)) from None
    if len(raw) > MAX_PICKLE_BYTES:
        raise TrajectoryError(f"{what} decompresses to more than {MAX_PICKLE_BYTES} bytes", file=str(path))
    try:
        return RestrictedUnpickler(io.BytesIO(raw), allowed=allowed).load()
    except pickle.UnpicklingError as exc:
        raise TrajectoryError(f"{what}: {exc}", file=str(path)) from None
    except (EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError, RecursionError,
            MemoryError, ImportError) as exc:
        raise TrajectoryError(f"{what} is not a readable pickle ({type(exc).__name__}: {exc})",
                              file=str(path)) from None
