"""Confinement compares path components, never string prefixes (issue 38 §10).

A folder named like the root plus a suffix (`run-evil` beside `run`, `media-evil` beside `media`)
starts with the root's string but is outside it. Planting `startswith` in `path_inside`
(verifier/trajectory.py) or in the service's `confine` (serving/reward_service/core.py) let
screenshots from the sibling through, and no test noticed.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from verifier.errors import ScreenshotError
from verifier.loaders import load_trajectory
from verifier.trajectory import path_inside


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), "purple").save(buf, format="PNG")
    return buf.getvalue()


def _sibling(tmp_path: Path, root_name: str) -> tuple[Path, Path]:
    """(root, an image in `<root>-evil`, the root's sibling)."""
    root, evil = tmp_path / root_name, tmp_path / f"{root_name}-evil"
    root.mkdir()
    evil.mkdir()
    (evil / "secret.png").write_bytes(_png())
    return root, evil / "secret.png"


def test_a_sibling_folder_named_like_the_trajectory_folder_is_outside_it(tmp_path):
    run, secret = _sibling(tmp_path, "run")
    (run / "ok.png").write_bytes(_png())
    assert not path_inside(secret, run) and path_inside(run / "ok.png", run) and path_inside(run, run)
    for shot in (str(secret), "../run-evil/secret.png"):
        record = {"task": {"id": "t", "instruction": "Find the price"}, "steps": [{"index": 1, "action": "click"}],
                  "final_answer": "$5", "screenshots": [{"step": 1, "timing": "after", "path": shot}]}
        (run / "trajectory.json").write_text(json.dumps(record))
        with pytest.raises(ScreenshotError, match="outside the trajectory folder"):
            load_trajectory(run / "trajectory.json", check_images=False)


def test_the_services_media_root_refuses_its_sibling(tmp_path):
    pytest.importorskip("fastapi")
    from serving.reward_service.core import confine

    root, secret = _sibling(tmp_path, "media")
    root = root.resolve()
    (root / "a.png").write_bytes(_png())
    assert confine("a.png", root, field="f") == str(root / "a.png")
    for bad in ("../media-evil/secret.png", str(secret)):
        with pytest.raises(ScreenshotError, match="outside"):
            confine(bad, root, field="f")
