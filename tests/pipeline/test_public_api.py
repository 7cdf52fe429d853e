"""The pipeline API is importable from the package top level, and `import verifier` stays light."""
import subprocess
import sys

import pytest

import verifier


def test_top_level_names_are_the_pipeline_objects():
    from verifier import StageCache, VerificationResult, VerifierConfig, verify, verify_sync
    from verifier.cache import StageCache as C
    from verifier.config import VerifierConfig as V
    from verifier.pipeline import verify as v
    from verifier.pipeline import verify_sync as vs
    from verifier.result import VerificationResult as R

    assert (verify, verify_sync, VerifierConfig, VerificationResult, StageCache) == (v, vs, V, R, C)
    assert {"verify", "verify_sync", "VerifierConfig", "VerificationResult", "StageCache"} <= set(verifier.__all__)
    with pytest.raises(AttributeError):
        verifier.no_such_name  # noqa: B018


def test_import_verifier_loads_no_pipeline_and_no_http_client():
    code = ("import sys, verifier; heavy = [m for m in ('openai', 'jinja2', 'verifier.pipeline') if m in sys.modules];"
            "from verifier import verify; assert 'openai' not in sys.modules; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
