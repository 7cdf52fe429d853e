"""The restricted unpickler's two bounds (issue 38 §10): what a step pickle may name, and how much
of a gzip pickle is inflated.

Widening the allow-list to every `builtins`/`collections` name let a 40-byte pickle run
`builtins.eval`; reading the gzip stream without its size bound inflated a bomb whole before the
size check refused it. No test noticed either.
"""
from __future__ import annotations

import gzip
import pickle
import tracemalloc

import pytest

from verifier.errors import TrajectoryError
from verifier.loaders import _safe_pickle
from verifier.loaders._safe_pickle import GOAL_FILE, STEP_FILE, load_pickle


def _calls(module: str, name: str, arg: str) -> bytes:
    """A protocol-0 pickle that calls `module.name(arg)` when loaded (GLOBAL, MARK, UNICODE, TUPLE, REDUCE)."""
    return f"c{module}\n{name}\n(V{arg}\ntR.".encode()


@pytest.mark.parametrize(("module", "name"), [("builtins", "eval"), ("builtins", "exec"), ("builtins", "getattr"),
                                              ("builtins", "__import__"), ("collections", "namedtuple")])
@pytest.mark.parametrize("allowed", [STEP_FILE, GOAL_FILE])
def test_a_pickle_naming_a_builtin_callable_is_refused_before_it_runs(tmp_path, module, name, allowed):
    payload = _calls(module, name, "__import__('os').getpid()")
    assert len(payload) < 60
    path = tmp_path / "step_0.pkl"
    path.write_bytes(payload)
    with pytest.raises(TrajectoryError, match=f"refused global {module}.{name}"):
        load_pickle(path, what="step file", allowed=allowed)
    path.write_bytes(gzip.compress(payload))  # the same, gzipped
    with pytest.raises(TrajectoryError, match="refused global"):
        load_pickle(path, what="step file", allowed=allowed)


def test_the_plain_containers_old_protocols_name_still_load(tmp_path):
    path = tmp_path / "step_0.pkl"
    value = {"s": {1, 2}, "f": frozenset({3}), "b": bytearray(b"x"), "c": 1 + 2j}
    path.write_bytes(pickle.dumps(value, protocol=3))
    assert load_pickle(path, what="step file") == value


def test_a_gzip_pickle_is_inflated_only_up_to_the_bound(tmp_path, monkeypatch):
    """A 32 MB bomb (32 kB on disk) against a 1 MB bound: refused, having held about the bound."""
    monkeypatch.setattr(_safe_pickle, "MAX_PICKLE_BYTES", 1 << 20)
    path = tmp_path / "step_0.pkl.gz"
    path.write_bytes(gzip.compress(b"\0" * (32 << 20), compresslevel=1))
    tracemalloc.start()
    try:
        with pytest.raises(TrajectoryError, match="decompresses to more than"):
            load_pickle(path, what="step file")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak / 1e6:.1f} MB while refusing a 32 MB inflation (bound 1 MB)"
