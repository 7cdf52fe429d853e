"""cua-verifier: the Universal Verifier for computer-use agent trajectories."""
from .errors import (ConfigError, CuaVerifierError, JudgeError, JudgeInvalidOutputError,
                     JudgeUnavailableError, ScreenshotError, TrajectoryError)
from .trajectory import RunStatus, Screenshot, Step, Task, Trajectory

__version__ = "0.1.0"

__all__ = ["ConfigError", "CuaVerifierError", "JudgeError", "JudgeInvalidOutputError",
           "JudgeUnavailableError", "RunStatus", "Screenshot", "ScreenshotError", "Step", "Task",
           "Trajectory", "TrajectoryError", "__version__"]
