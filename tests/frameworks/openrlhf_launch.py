"""Run inside .venv-openrlhf: parse launch lines with OpenRLHF's own argument parser, then read a
recipe row with OpenRLHF's own dataset preprocessing under the parsed flags.

argv[1] is a JSON object {"name": [arguments after `python -m openrlhf.cli.train_ppo_ray`]}; argv[2]
a JSON row as recipes/openrlhf_browser.sh writes them. `openrlhf.cli.train_ppo_ray` builds its
parser in its `__main__` block, so the module is run as `__main__` with those arguments and
stopped right after parsing (at its `hierarchize(args)` call, before any Ray or GPU work). Its
imports of vLLM and DeepSpeed, CUDA-only builds absent here, are stubbed: nothing of theirs runs
before the parser. Prints {"name": {"input_key", "label_key", "agent_func_path",
"apply_chat_template", "prompt", "label"} or {"error": ...}} as one JSON line.
"""
from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import runpy
import sys
import types
from typing import Any
from unittest import mock

ABSENT = ("vllm", "deepspeed", "flash_attn")


class _Stub(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return mock.MagicMock(name=f"{self.__name__}.{name}")


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in ABSENT:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> Any:
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: Any) -> None:
        module.__version__ = "0.0.0"


class _Parsed(Exception):
    def __init__(self, args: Any) -> None:
        self.args_ns = args


def parse(argv: list[str]) -> Any:
    from openrlhf.utils import config

    real = config.hierarchize

    def stop(args: Any) -> Any:
        raise _Parsed(real(args))

    old = sys.argv
    sys.argv = ["train_ppo_ray", *argv]
    try:
        with mock.patch.object(config, "hierarchize", stop), contextlib.redirect_stdout(io.StringIO()):
            runpy.run_module("openrlhf.cli.train_ppo_ray", run_name="__main__")
    except _Parsed as parsed:
        return parsed.args_ns
    finally:
        sys.argv = old
    raise AssertionError("OpenRLHF's main did not reach its argument parsing")


def main() -> None:
    if importlib.util.find_spec("vllm") is None:
        sys.meta_path.insert(0, _StubFinder())
    from openrlhf.datasets.prompts_dataset import preprocess_data

    lines, row = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    out: dict[str, Any] = {}
    for name, argv in lines.items():
        try:
            args = parse(argv)
        except SystemExit as exc:  # argparse refused a flag
            out[name] = {"error": f"argparse exit {exc.code}"}
            continue
        data = args.data
        entry = {"input_key": data.input_key, "label_key": data.label_key, "apply_chat_template": data.apply_chat_template,
                 "agent_func_path": args.train.agent_func_path}
        try:
            entry["prompt"], entry["label"] = preprocess_data(row, data.input_template, data.input_key, data.label_key, None)
        except KeyError as exc:
            entry["error"] = f"row has no key {exc}"
        out[name] = entry
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
