"""The built wheel is what users install: it must carry the prompt templates and a light core.

Builds the wheel, installs it (non-editable) into a fresh virtual environment and renders every
prompt template from the installed copy, from a working directory outside the repository.
"""
from __future__ import annotations

import json
import subprocess
import venv
import zipfile
from pathlib import Path

import pytest
from suite_env import base_venv

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(built_wheel: Path) -> Path:
    return built_wheel  # built once per session (tests/conftest.py)


def test_wheel_ships_prompts_and_packages(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    repo_prompts = sorted(p.relative_to(REPO / "prompts").as_posix()
                          for p in (REPO / "prompts").rglob("*.j2"))
    assert repo_prompts, "no prompt templates in prompts/"
    for rel in repo_prompts:
        assert f"verifier/_prompts/{rel}" in names
    for pkg in ("verifier/__init__.py", "reward/__init__.py", "serving/__init__.py"):
        assert pkg in names
    # setup-judge-env installs from the locks, which travel inside the package (serving/_locks)
    for lock in ("install.sh", "judge-cpu.txt", "judge-gpu.txt"):
        assert f"serving/_locks/{lock}" in names and "serving/setup_judge_env.sh" in names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(meta).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert requires and not any("torch" in r or "vllm" in r for r in requires), requires
    # the CUA_* settings model (verifier/settings.py) is core, not an extra
    assert any(r.split(":", 1)[1].strip().startswith("pydantic-settings") for r in requires), requires


def test_installed_wheel_renders_prompts(wheel: Path, tmp_path: Path) -> None:
    """The wheel installed (not editable, no deps: they come from the base venv's site-packages,
    added by a .pth, which does not run that venv's editable hook) into a venv of its own."""
    base = base_venv()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    base_site = subprocess.run([str(base), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "zz_base_deps.pth").write_text(base_site + "\n")
    subprocess.run([str(base), "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True)
    script = (
        "import json, verifier.prompts as p\n"
        "d = p.prompts_dir()\n"
        "infos = [p.prompt_info(f.relative_to(d).as_posix()).model_dump() for f in sorted(d.rglob('*.j2'))]\n"
        "r = p.render('system.j2', rules=False)\n"
        "print(json.dumps({'dir': str(d), 'infos': infos, 'rubric': r.text, 'id': r.info.id}))\n"
    )
    res = subprocess.run([str(py), "-c", script], cwd=tmp_path, check=True, capture_output=True, text=True)
    payload = json.loads(res.stdout)
    assert "site-packages" in payload["dir"] and payload["dir"].endswith("verifier/_prompts")
    assert payload["infos"] and all(len(i["sha256"]) == 64 for i in payload["infos"])
    # the shared principle blocks were included from the installed copy, not left as tags
    assert payload["id"] == "system" and "{%" not in payload["rubric"] and "RUBRIC DESIGN RULES" in payload["rubric"]
    # torch must not come with the core install
    res = subprocess.run([str(py), "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
                         capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "True"
    # the console script is installed and runs
    res = subprocess.run([str(env_dir / "bin" / "cua-verifier"), "--help"], capture_output=True, text=True,
                         check=False)
    assert res.returncode == 0 and "inspect" in res.stdout
