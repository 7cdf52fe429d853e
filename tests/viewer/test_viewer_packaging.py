"""The wheel carries the viewer's templates and assets (pages are rendered from package data)."""
from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_wheel_ships_viewer_templates(built_wheel):
    names = set(zipfile.ZipFile(built_wheel).namelist())
    templates = sorted(p.name for p in (REPO / "verifier" / "viewer" / "templates").iterdir())
    assert {"app.js", "style.css", "rollout.html.j2", "index.html.j2", "report.html.j2"} <= set(templates)
    for name in templates:
        assert f"verifier/viewer/templates/{name}" in names, name
