"""The import layering (issue 18, docs/architecture.md) is checked, and the check can fail.

`lint-imports` reads the contracts in pyproject `[tool.importlinter]`: packages import downward only
(cua_verifier > serving | browser_env > reward > verifier), the core's own layers, row sources below
Ray and publishing, the core never importing the rewards or serving, and no cycles between sibling
modules or packages. A second check here walks the module graph (grimp, import-linter's own graph
library) for any cycle at all, including a package and its own submodule, which the sibling contract
does not look at. Each check is shown to fail on a planted back-arrow in a copy of the tree.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("verifier", "reward", "serving", "browser_env", "cua_verifier")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    beside = Path(sys.executable).with_name("lint-imports")
    exe = str(beside) if beside.exists() else shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]' (import-linter)", pytrace=False)
    # The packages under `cwd` come first on the path, so a copy is analysed, not the checkout.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def _copy_tree(dest: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _cycles(root: Path) -> list[list[str]]:
    """Every strongly connected component of more than one module in the import graph of the
    packages under `root`. Built in a fresh interpreter: grimp finds packages through the import
    system, which in this process would hand back the checkout's modules already imported."""
    pytest.importorskip("grimp")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    got = subprocess.run([sys.executable, "-c", _CYCLES, *PACKAGES], cwd=root, env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert got.returncode == 0, got.stderr[-3000:]
    return json.loads(got.stdout)


# Tarjan's algorithm, iterative (no recursion limit), over grimp's graph of the given packages.
_CYCLES = """
import json, sys
import grimp

graph = grimp.build_graph(*sys.argv[1:], cache_dir=None)
index, low, stack, on_stack, found = {}, {}, [], set(), []
for start in sorted(graph.modules):
    if start in index:
        continue
    index[start] = low[start] = len(index)
    stack.append(start)
    on_stack.add(start)
    work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
    while work:
        node, children = work[-1]
        child = next(children, None)
        if child is not None:
            if child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[node])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))
print(json.dumps(found))
"""


def test_lint_imports_keeps_every_contract():
    got = _lint_imports(REPO)
    assert got.returncode == 0, got.stdout[-6000:] + got.stderr[-2000:]
    assert "0 broken" in got.stdout


def test_lint_imports_fails_on_a_back_arrow_and_on_a_cycle(tmp_path):
    """The same contracts on a copy with one upward import and one circle planted."""
    tree = _copy_tree(tmp_path)
    with open(tree / "verifier" / "errors.py", "a", encoding="utf-8") as fh:
        fh.write("\nimport reward  # noqa: E402,F401 - a planted back-arrow: the core importing a plugin\n")
    with open(tree / "verifier" / "bench" / "report_tables.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom . import report_html  # noqa: E402,F401 - a planted circle\n")
    got = _lint_imports(tree)
    out = got.stdout
    assert got.returncode != 0, out
    assert "verifier.errors -> reward" in out  # named, with its line, under the broken contracts
    assert "The verifier core imports neither the rewards" in out.split("Broken contracts")[1]
    assert ".report_tables -> .report_html" in out  # the cycle contract names the import to remove
    assert "4 broken" in out


def test_the_service_package_holds_only_the_service_and_never_imports_the_harness(tmp_path):
    """Issue 38 §9: the load generators and the benchmark's bounds live in `serving/perf`, beside the
    other benchmark harness, not among the service's modules; the service importing them breaks a
    contract (planted in a copy)."""
    service = {p.stem for p in (REPO / "serving" / "reward_service").glob("*.py")}
    assert not service & {"loadtest", "realload", "bounds"}, service
    tree = _copy_tree(tmp_path)
    with open(tree / "serving" / "reward_service" / "core.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom serving.perf import loadtest  # noqa: E402,F401 - planted\n")
    out = _lint_imports(tree).stdout
    assert "serving.reward_service.core -> serving.perf.loadtest" in out, out[-3000:]
    assert "benchmark harness" in out.split("Broken contracts")[1]


def test_no_module_imports_itself_back_through_any_loop(tmp_path):
    assert _cycles(REPO) == []
    tree = _copy_tree(tmp_path)
    # A package's __init__ and its own submodule importing each other: not siblings, still a loop.
    with open(tree / "verifier" / "sources" / "rows.py", "a", encoding="utf-8") as fh:
        fh.write("\nfrom verifier import sources as _planted  # noqa: E402,F401\n")
    assert ["verifier.sources", "verifier.sources.rows"] in _cycles(tree)


def test_user_facing_imports_still_work():
    """The paths users and older code import by, after the modules moved (issue 18)."""
    code = ("import sys\n"
            "import cua_verifier.cli\n"
            "assert 'reward' not in sys.modules, 'the CLI imports the rewards at start'\n"
            "from reward import uv_process, RewardSettings, VerifierSession\n"
            "from verifier import verify\n"
            "import reward.session, reward.settings, reward.adapters\n"
            "import verifier.session, verifier.settings, verifier.loaders.rollouts\n"
            "assert reward.session is verifier.session and reward.settings is verifier.settings\n"
            "assert reward.adapters is verifier.loaders.rollouts\n"
            "from reward.session import VerifierSession as S\n"
            "assert S is VerifierSession is verifier.session.VerifierSession\n"
            "from reward.echo_judge import EchoJudgeServer\n"
            "from verifier.testing.echo_judge import EchoJudgeServer as E\n"
            "assert EchoJudgeServer is E\n"
            "import cua_verifier\n"
            "assert cua_verifier.uv_process is uv_process\n")
    got = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=False)
    assert got.returncode == 0, got.stderr[-3000:]
