"""The reward clients on a base install (`pip install -e .`, no extras) against the real service.

Why: OpenRLHF swallows a reward function's exception, so a client that needs an extra's package
fails invisibly on a trainer node with the base install. The venv is built once and cached under
`.cache/base-venv` (`suite_env.base_venv`, rebuilt when pyproject.toml changes); the service runs
in the test venv.
"""
from __future__ import annotations

import json
import subprocess
import textwrap

import pytest

pytest.importorskip("fastapi")
pytestmark = pytest.mark.slow  # builds a venv once (~1 min), then a real service process

from service_helpers import LoopbackJudge, Service
from suite_env import BASE_VENV, base_venv

CLIENT = textwrap.dedent('''
    import asyncio, importlib.util, json, sys
    url = sys.argv[1]
    task = json.dumps({"id": "hours", "instruction": "Find the opening hours"})
    out = {"httpx": importlib.util.find_spec("httpx") is not None,
           "fastapi": importlib.util.find_spec("fastapi") is not None}
    from reward.openrlhf import make_reward_func
    from reward.remote import make_remote_rewards
    from reward.verl import compute_score, compute_score_async
    r = make_reward_func(url)(["<|im_start|>assistant\\n9 to 5<|im_end|>"], [""], [task])
    out["openrlhf"] = {k: list(map(float, v)) for k, v in r["extra_logs"].items()}
    out["verl"] = compute_score("cua", "9 to 5", task, {}, url=url, reward="outcome")
    out["verl_async"] = asyncio.run(compute_score_async("cua", "9 to 5", task, None, url=url))
    remote = make_remote_rewards(url).outcome
    out["remote"] = asyncio.run(remote([[{"role": "user", "content": "Find the opening hours"}]],
                                       [[{"role": "assistant", "content": "9 to 5"}]], task_id=["hours"]))
    print(json.dumps(out))
''')


def test_every_reward_client_works_on_a_base_install():
    python = base_venv()
    with LoopbackJudge() as judge, Service(judge.url) as svc:
        run = subprocess.run([str(python), "-c", CLIENT, svc.url], capture_output=True, text=True,
                             timeout=300, cwd=BASE_VENV, check=False)  # not the checkout: the installed package is imported
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert not out["fastapi"]  # really no extras
    assert out["openrlhf"]["uv_unscored"] == [0.0] and out["openrlhf"]["uv_grounded"] == [0.0]
    assert out["verl"]["uv_unscored"] == 0.0 and out["verl"]["score"] == out["verl"]["uv_outcome"]
    assert out["verl_async"]["uv_unscored"] == 0.0
    assert out["remote"][0] in (0.0, 1.0)
