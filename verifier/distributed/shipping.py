"""The project's code for the workers of a running Ray cluster (`score-dataset --ray ADDRESS`).

Why: the actors import `verifier` (the session, the loaders, the prompt templates). On a local
cluster the workers share the driver's machine and environment; on a cluster they may run on
machines that have the dependencies installed but not this checkout, or an older copy of it. A Ray
runtime environment uploads the code once per job, and every worker of the job imports it.

What is shipped: only what the actors import. An installed wheel carries its templates inside the
package (`verifier/_prompts`), so the package directory goes as a `py_modules` entry. A source
checkout keeps them beside it (`prompts/`), so the checkout's root goes as the `working_dir`
with everything but `verifier/` and `prompts/` excluded (and the checkout's .gitignore applies).
The dependencies themselves are not shipped: the workers' image must have them
(`pip install 'cua-verifier[ray]'` there, or a `pip` entry of your own runtime environment).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

#: Paths of a checkout's root left out of `working_dir` (gitignore patterns, as Ray reads them):
#: every top-level entry but the package and its templates. Checked against the matcher Ray
#: bundles: "/*" would match the root "." too, and a negated folder needs its "/**" as well.
CHECKOUT_EXCLUDES = ["/[!.]*", "/.?*", "!/verifier", "!/verifier/**", "!/prompts", "!/prompts/**",
                     "__pycache__/", "*.pyc"]


def project_runtime_env(package_dir: Path | None = None) -> dict[str, Any]:
    """The `runtime_env` that ships the verifier package (and its templates) to a cluster's workers."""
    pkg = (package_dir or Path(__file__).resolve().parents[1]).resolve()
    if (pkg / "_prompts").is_dir():  # installed: self-contained package
        return {"py_modules": [str(pkg)]}
    if (pkg.parent / "prompts").is_dir():  # a checkout: root as the working dir, only two folders kept
        return {"working_dir": str(pkg.parent), "excludes": list(CHECKOUT_EXCLUDES)}
    raise FileNotFoundError(f"no prompt templates beside {pkg}: cannot ship the project to Ray workers")
