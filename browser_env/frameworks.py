"""Which framework releases the agent adapters were tested on, checked when an adapter is imported.

The verl and OpenRLHF adapters use each framework's extension points (verl's `ToolAgentLoop`,
`BaseTool` and `AgentLoopOutput.reward_score`; OpenRLHF's `MultiTurnAgentExecutor` and its
`execute`/`reset`/`step` contract). Neither framework promises those across minor releases
(verl's agent loop lives under `verl.experimental`), so an adapter refuses to load outside the
range it was tested on, with a message naming the range, instead of failing later inside a
training step. `CUA_ALLOW_UNTESTED_FRAMEWORK=1` turns the refusal into a warning, for someone
trying a newer release on purpose.
"""
from __future__ import annotations

import logging
import os
from importlib.metadata import PackageNotFoundError, version

from packaging.specifiers import SpecifierSet
from packaging.version import Version

log = logging.getLogger(__name__)

#: distribution -> the releases the adapter was tested on (tests/frameworks pins one of each).
TESTED = {"verl": ">=0.9,<0.10", "openrlhf": ">=0.11,<0.12"}
ENV_ALLOW = "CUA_ALLOW_UNTESTED_FRAMEWORK"


class UntestedFrameworkError(ImportError):
    """The installed framework release is outside the range the adapter was tested on."""


def require_tested(dist: str, *, installed: str | None = None) -> str:
    """The installed version of `dist`, or `UntestedFrameworkError` when it is outside `TESTED`."""
    spec = SpecifierSet(TESTED[dist])
    try:
        found = installed or version(dist)
    except PackageNotFoundError as exc:
        raise UntestedFrameworkError(f"{dist} is not installed; the adapter needs {dist}{spec}") from exc
    if Version(found) in spec:
        return found
    msg = (f"{dist} {found} is installed, but the cua-verifier adapter was tested on {dist}{spec} only: "
           f"install a tested release (pip install '{dist}{spec}'), or set {ENV_ALLOW}=1 to try it anyway")
    if os.environ.get(ENV_ALLOW) == "1":
        log.warning("%s", msg)
        return found
    raise UntestedFrameworkError(msg)
