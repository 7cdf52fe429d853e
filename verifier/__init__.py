"""cua-verifier: the Universal Verifier for computer-use agent trajectories.

The pipeline API (`verify`, `verify_sync`, `VerifierConfig`, `VerificationResult`, `StageCache`)
is loaded lazily on first access, so `import verifier` stays light (no jinja2, no judge client).
"""
from typing import TYPE_CHECKING, Any

from .errors import (
    ConfigError,
    CuaVerifierError,
    JudgeError,
    JudgeInvalidOutputError,
    JudgeUnavailableError,
    ScreenshotError,
    TrajectoryError,
)
from .trajectory import RunStatus, Screenshot, Step, Task, Trajectory

if TYPE_CHECKING:
    from .cache import StageCache
    from .config import VerifierConfig
    from .pipeline import verify, verify_sync
    from .result import VerificationResult

__version__ = "0.1.0"

_LAZY = {"verify": "pipeline", "verify_sync": "pipeline", "VerifierConfig": "config",
         "VerificationResult": "result", "StageCache": "cache"}

__all__ = ["ConfigError", "CuaVerifierError", "JudgeError", "JudgeInvalidOutputError",
           "JudgeUnavailableError", "RunStatus", "Screenshot", "ScreenshotError", "StageCache", "Step", "Task",
           "Trajectory", "TrajectoryError", "VerificationResult", "VerifierConfig", "__version__", "verify",
           "verify_sync"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
