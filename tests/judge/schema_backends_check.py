"""Run vLLM's own request validation for each structured-outputs backend on JSON schemas.

Runs in the judge environment (vLLM installed): reads ``[{"name": ..., "schema": {...}}, ...]``
from stdin and prints ``{name: {backend: error-or-null}}``. These are the functions the vLLM server
calls on every request for the backend named at launch (``SamplingParams`` validation), so a
schema they accept is a schema the server accepts; each also compiles the grammar with the
backend's own compiler (xgrammar, llguidance, outlines-core, lm-format-enforcer).
"""
from __future__ import annotations

import json
import sys

from vllm.sampling_params import SamplingParams, StructuredOutputsParams
from vllm.v1.structured_output.backend_guidance import validate_guidance_grammar
from vllm.v1.structured_output.backend_lm_format_enforcer import (
    validate_structured_output_request_lm_format_enforcer,
)
from vllm.v1.structured_output.backend_outlines import validate_structured_output_request_outlines
from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar

BACKENDS = {
    "xgrammar": validate_xgrammar_grammar,
    "guidance": validate_guidance_grammar,
    "outlines": validate_structured_output_request_outlines,
    "lm-format-enforcer": validate_structured_output_request_lm_format_enforcer,
}


def check(schema: dict) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, validate in BACKENDS.items():
        params = SamplingParams(max_tokens=16, structured_outputs=StructuredOutputsParams(json=schema))
        try:
            validate(params)
            out[name] = None
        except Exception as exc:  # noqa: BLE001 - reported, the test decides
            out[name] = f"{type(exc).__name__}: {exc}"[:300]
    return out


if __name__ == "__main__":
    items = json.load(sys.stdin)
    json.dump({item["name"]: check(item["schema"]) for item in items}, sys.stdout)
