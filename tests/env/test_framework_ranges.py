"""The verl and OpenRLHF adapters refuse, at import, a framework release outside the range they were
tested on (issue 35 §2, §3), with a message naming the range, instead of failing mid-training."""
from __future__ import annotations

import importlib
import sys

import pytest

from browser_env import frameworks
from browser_env.frameworks import TESTED, UntestedFrameworkError, require_tested


def _import_fresh(module: str) -> None:
    sys.modules.pop(module, None)
    importlib.import_module(module)


@pytest.mark.parametrize(("module", "dist", "newer"), [("browser_env.verl_agent", "verl", "0.10.0"),
                                                        ("browser_env.openrlhf_agent", "openrlhf", "0.12.0")])
def test_an_adapter_refuses_an_untested_release_at_import(monkeypatch, module, dist, newer):
    monkeypatch.setattr(frameworks, "version", lambda name: newer if name == dist else "0")
    monkeypatch.delenv(frameworks.ENV_ALLOW, raising=False)
    with pytest.raises(UntestedFrameworkError) as err:
        _import_fresh(module)
    assert f"{dist} {newer} is installed" in str(err.value) and "tested on" in str(err.value)
    assert all(part in str(err.value) for part in TESTED[dist].split(","))


@pytest.mark.parametrize("module", ["browser_env.verl_agent", "browser_env.openrlhf_agent"])
def test_an_adapter_says_which_framework_is_missing(monkeypatch, module):
    dist = module.split(".")[1].split("_")[0]

    def missing(name: str) -> str:
        raise frameworks.PackageNotFoundError(name)

    monkeypatch.setattr(frameworks, "version", missing)
    with pytest.raises(UntestedFrameworkError, match=f"{dist} is not installed"):
        _import_fresh(module)


def test_the_tested_releases_pass_and_the_override_only_warns(monkeypatch, caplog):
    assert require_tested("verl", installed="0.9.1") == "0.9.1"
    assert require_tested("openrlhf", installed="0.11.2") == "0.11.2"
    with pytest.raises(UntestedFrameworkError):
        require_tested("verl", installed="0.8.5")
    monkeypatch.setenv(frameworks.ENV_ALLOW, "1")
    assert require_tested("openrlhf", installed="0.12.0") == "0.12.0"
    assert "tested on" in caplog.text
