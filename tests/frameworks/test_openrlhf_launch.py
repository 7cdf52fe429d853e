"""The OpenRLHF launch lines of the recipe, the README and docs/frameworks.md, parsed by OpenRLHF's
own argument parser (in .venv-openrlhf), then a recipe row read by OpenRLHF's own dataset
preprocessing under the parsed flags: the row's `prompt` must be the prompt and its `task` the
label (issue 35 §3: without `--data.input_key prompt` OpenRLHF reads `data["input"]`)."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

from suite_env import required_here

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
SOURCES = ("recipes/openrlhf_browser.sh", "README.md", "docs/frameworks.md")
ENTRY = "openrlhf.cli.train_ppo_ray"


def launch_lines(path: Path) -> list[list[str]]:
    """The arguments after `python -m openrlhf.cli.train_ppo_ray` in each launch line of a file
    (continuation lines joined; `...`, `"$@"` dropped; a shell variable stands for a path)."""
    lines, out = path.read_text().splitlines(), []
    for i, line in enumerate(lines):
        if f"python -m {ENTRY}" not in line or line.lstrip().startswith("#"):
            continue
        text = line
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        words = shlex.split(text.split(ENTRY, 1)[1].split("`")[0])
        if words in ([], ["..."]):  # a mention in prose (`... -- python -m openrlhf.cli.train_ppo_ray ...`)
            continue
        out.append([("runs/agent.py" if w.startswith("$") else w) for w in words if w not in ("...", "$@")])
    return out


def test_every_openrlhf_launch_line_reads_the_recipe_rows():
    python = REPO / ".venv-openrlhf" / "bin" / "python"
    if not python.exists():
        if required_here():
            pytest.fail(".venv-openrlhf missing: run bash tests/frameworks/setup_envs.sh")
        pytest.skip(".venv-openrlhf missing: run bash tests/frameworks/setup_envs.sh")
    found = {f"{src}#{n}": argv for src in SOURCES for n, argv in enumerate(launch_lines(REPO / src))}
    assert {name.split("#")[0] for name in found} == set(SOURCES), found  # each source shows one
    assert all(re.search(r"\.py$", a[a.index("--train.agent_func_path") + 1]) for a in found.values())
    row = {"prompt": "At what time does the Riverside Branch open?", "task": {"id": "library-riverside-saturday"}}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([str(python), str(HERE / "openrlhf_launch.py"), json.dumps(found), json.dumps(row)],
                         capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    parsed = json.loads(run.stdout.strip().splitlines()[-1])
    for name, args in parsed.items():
        assert "error" not in args, (name, args)
        assert args["prompt"] == row["prompt"] and args["label"] == row["task"], (name, args)
        assert not args["apply_chat_template"], name  # the agent renders the first turn itself
