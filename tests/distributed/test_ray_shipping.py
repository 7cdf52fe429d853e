"""`--ray ADDRESS` ships the project to the cluster's workers through a runtime environment: what
goes in the package Ray builds from it, that the shipped copy runs on its own, and that joining a
cluster (only then) passes it to `ray.init`. The live join is tests/distributed/test_ray_bind.py's."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytestmark = pytest.mark.slow

from verifier.distributed import ray_backend
from verifier.distributed.shipping import project_runtime_env

REPO = Path(__file__).resolve().parents[2]


def _package(env: dict, dest: Path) -> list[str]:
    """The zip Ray uploads for `env`, built by Ray's own packaging code, extracted into `dest`."""
    from ray._private.runtime_env.packaging import create_package

    src = env["working_dir"] if "working_dir" in env else env["py_modules"][0]
    zipped = dest.parent / "pkg.zip"
    create_package(src, zipped, include_gitignore=True, excludes=env.get("excludes", []),
                   include_parent_dir="py_modules" in env)
    with zipfile.ZipFile(zipped) as z:
        z.extractall(dest)
        return z.namelist()


def test_checkout_ships_the_package_and_templates_only_and_the_copy_runs_alone(tmp_path):
    env = project_runtime_env()
    assert env["working_dir"] == str(REPO) and "py_modules" not in env
    names = _package(env, tmp_path / "shipped")
    assert {n.split("/")[0] for n in names} == {"verifier", "prompts"}
    assert "verifier/distributed/actors.py" in names and "prompts/versions.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    # the shipped copy alone (cwd and sys.path as a worker's) finds its templates and actor class
    probe = ("import verifier, verifier.prompts as p, verifier.distributed.actors as a; "
             "print(verifier.__file__); print(p.prompts_dir())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path / "shipped", capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "shipped")})
    module, prompts = out.stdout.split()
    assert module.startswith(str(tmp_path / "shipped")) and prompts == str(tmp_path / "shipped" / "prompts")


def test_an_installed_package_ships_as_py_modules(tmp_path):
    pkg = tmp_path / "site" / "verifier"
    (pkg / "_prompts").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_prompts" / "rubric.system.j2").write_text("x")
    env = project_runtime_env(pkg)
    assert env == {"py_modules": [str(pkg)]}
    assert "verifier/_prompts/rubric.system.j2" in _package(env, tmp_path / "shipped")
    with pytest.raises(FileNotFoundError):
        project_runtime_env(tmp_path / "site")  # neither layout: refused before any upload


def test_joining_a_cluster_passes_the_runtime_env_and_a_local_run_does_not(monkeypatch):
    import ray

    calls: list[dict] = []
    monkeypatch.setattr(ray, "init", lambda **kw: calls.append(kw))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray_backend.init_ray("10.0.0.5:6379")
    ray_backend.init_ray("local")
    assert calls[0]["runtime_env"] == project_runtime_env() and calls[0]["address"] == "10.0.0.5:6379"
    assert "runtime_env" not in calls[1] and calls[1]["_node_ip_address"] == "127.0.0.1"
