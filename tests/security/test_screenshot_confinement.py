"""Screenshot paths stay inside the trajectory's folder (issue 14, defect 9).

`../`, absolute paths and symlinks used to send any image the process could read to the judge.
Each escape is now a `ScreenshotError` naming the trajectory file and the offending path, unless
the user opts in (`allow_outside_screenshots=True`, CLI `--allow-outside-screenshots`).
"""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from cua_verifier.cli import main, score_cmd
from verifier.errors import ScreenshotError
from verifier.loaders import load_cuavb_row, load_trajectory
from verifier.testing import ScriptedJudge

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


def png(color: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def secret(tmp_path) -> Path:
    """An image outside every trajectory folder (stands for any file the process can read)."""
    path = tmp_path / "private" / "secret.png"
    path.parent.mkdir()
    path.write_bytes(png("purple"))
    return path


def native(folder: Path, shot_path: str, *, name: str = "trajectory.json") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ok.png").write_bytes(png("red"))
    record = {"task": {"id": folder.name, "instruction": "Find the price"},
              "steps": [{"index": 1, "action": "click"}], "final_answer": "$5",
              "screenshots": [{"step": 1, "path": "ok.png"}, {"step": 1, "timing": "after", "path": shot_path}]}
    (folder / name).write_text(json.dumps(record))
    return folder / name


def escapes(tmp_path: Path, secret: Path) -> dict[str, str]:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "link.png").symlink_to(secret)
    (run / "sub").mkdir()
    (run / "sub" / "dirlink").symlink_to(secret.parent, target_is_directory=True)
    return {"dotdot": "../private/secret.png", "absolute": str(secret), "symlink": "link.png",
            "dir-symlink": "sub/dirlink/secret.png", "dotdot-inside-then-out": "sub/../../private/secret.png"}


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "dir-symlink", "dotdot-inside-then-out"])
def test_native_escapes_are_refused_unless_allowed(tmp_path, secret, kind):
    raw = escapes(tmp_path, secret)[kind]
    path = native(tmp_path / "run", raw)
    with pytest.raises(ScreenshotError, match="outside the trajectory folder") as err:
        load_trajectory(path)
    assert err.value.file == str(path) and err.value.field == "screenshots[1]"
    assert raw.split("/")[-1] in str(err.value) and "--allow-outside-screenshots" in str(err.value)
    with pytest.raises(ScreenshotError):  # even when images are not checked at load time
        load_trajectory(path, check_images=False)
    t = load_trajectory(path, allow_outside_screenshots=True)
    assert t.screenshots[1].sha256 == t.screenshots[1].sha256 and t.screenshots[1].size() == (16, 12)


def test_paths_inside_the_folder_still_load(tmp_path):
    run = tmp_path / "run"
    path = native(run, str(run / "ok.png"))  # absolute, but inside
    (run / "inner.png").symlink_to(run / "ok.png")  # a symlink that stays inside
    assert len(load_trajectory(path).screenshots) == 2
    (run / "sub").mkdir()
    native(run, "sub/../inner.png")  # `..` that stays inside, to a symlink that stays inside
    assert load_trajectory(path).screenshots[1].size() == (16, 12)


def test_native_jsonl_names_the_line_and_a_dict_record_is_held_to_the_working_folder(tmp_path, secret,
                                                                                      monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    good = json.loads(native(run, "ok.png").read_text())
    bad = {**good, "screenshots": [{"step": 1, "path": str(secret)}]}
    jsonl = run / "many.jsonl"
    jsonl.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    from verifier.loaders import load_trajectories
    it = load_trajectories(jsonl)
    assert next(it).task.id == "run"
    with pytest.raises(ScreenshotError, match="outside") as err:
        next(it)
    assert err.value.file == f"{jsonl}:2"
    monkeypatch.chdir(run)
    with pytest.raises(ScreenshotError, match="outside"):
        load_trajectory(bad)  # an in-memory record: the working folder is its folder
    assert load_trajectory(bad, allow_outside_screenshots=True).screenshots[0].size() == (16, 12)


def test_fara_escapes(tmp_path, secret):
    from test_loaders import make_fara  # the fara folder builder of the loader tests

    root = make_fara(tmp_path / "a", shots=["screenshot_1.png"],
                     answer={"screenshots": ["screenshot_1.png", "../private/screenshot_2.png"]})
    (secret.parent / "screenshot_2.png").write_bytes(png("blue"))
    with pytest.raises(ScreenshotError, match="outside") as err:
        load_trajectory(root)
    assert err.value.file.endswith("demo_1_final_answer.json") and "screenshot_2.png" in str(err.value)
    assert len(load_trajectory(root, allow_outside_screenshots=True).screenshots) == 2

    root = make_fara(tmp_path / "b", answer={"screenshots": [str(secret.parent / "screenshot_2.png")]})
    with pytest.raises(ScreenshotError, match="outside"):  # absolute, existing, nothing beside the log
        load_trajectory(root)
    (root / "screenshot_2.png").write_bytes(png("green"))  # a copied run folder: its own file wins
    t = load_trajectory(root)
    assert t.screenshots[0].path == str(root / "screenshot_2.png")

    root = make_fara(tmp_path / "c", shots=["screenshot_1.png"])
    (root / "screenshot_2.png").symlink_to(secret)  # found by the folder scan, not listed
    with pytest.raises(ScreenshotError, match="outside"):
        load_trajectory(root)


def test_om2w_symlinked_screenshot(tmp_path, secret):
    from test_loaders import OM2W_RESULT, make_om2w

    root = make_om2w(tmp_path / "r", OM2W_RESULT, 2)
    (root / "trajectory" / "2_full_screenshot.png").symlink_to(secret)
    with pytest.raises(ScreenshotError, match="outside"):
        load_trajectory(root)
    assert len(load_trajectory(root, allow_outside_screenshots=True).screenshots) == 3


def test_cuavb_row_path_only_image(tmp_path, secret, monkeypatch):
    from test_loaders import cuavb_row

    monkeypatch.chdir(tmp_path / "private")
    row = cuavb_row(1, screenshots=[{"bytes": None, "path": "secret.png"}])
    assert len(load_cuavb_row(row).screenshots) == 1  # relative to the working folder: fine
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").mkdir()
    monkeypatch.chdir(tmp_path / "w")
    row = cuavb_row(1, screenshots=[{"bytes": None, "path": str(secret)}])
    with pytest.raises(ScreenshotError, match="outside") as err:
        load_cuavb_row(row, source="bench row 4")
    assert err.value.file == "bench row 4"
    assert len(load_cuavb_row(row, allow_outside_screenshots=True).screenshots) == 1


JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge", "--no-progress"]


def test_score_refuses_then_allows_with_the_flag_and_the_secret_never_reaches_the_judge(tmp_path, secret,
                                                                                         monkeypatch):
    runs = tmp_path / "runs"
    native(runs / "bad", "../../private/secret.png")
    native(runs / "good", "ok.png")
    judges: list[ScriptedJudge] = []
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: judges.append(ScriptedJudge()) or judges[-1])
    out = tmp_path / "r.jsonl"
    assert main(["score", str(runs), "--out", str(out), *JUDGE]) == 3
    recs = {Path(r["id"].split("#")[0]).name: r for r in map(json.loads, out.read_text().splitlines())}
    assert recs["good"]["status"] == "scored" and recs["bad"]["status"] == "unscored"
    assert "ScreenshotError" in recs["bad"]["reason"] and "secret.png" in recs["bad"]["reason"]
    assert "bad/trajectory.json" in recs["bad"]["reason"]
    import hashlib
    secret_sha = hashlib.sha256(secret.read_bytes()).hexdigest()
    sent = {img.screenshot.sha256 for req in judges[0].requests for img in judges[0].images(req)}
    assert sent and secret_sha not in sent
    assert main(["score", str(runs), "--out", str(out), "--allow-outside-screenshots", *JUDGE]) == 0
    sent = {img.screenshot.sha256 for req in judges[1].requests for img in judges[1].images(req)}
    assert secret_sha in sent  # opted in: the user asked for it


def test_inspect_refuses_then_allows(tmp_path, secret, capsys):
    path = native(tmp_path / "run", "../private/secret.png")
    assert main(["inspect", str(path)]) == 2
    assert "outside the trajectory folder" in capsys.readouterr().err
    assert main(["inspect", str(path), "--allow-outside-screenshots", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["screenshots"]) == 2


def test_a_file_swapped_for_a_symlink_after_loading_is_refused_when_read(tmp_path, secret):
    path = native(tmp_path / "run", "later.png")
    (tmp_path / "run" / "later.png").write_bytes(png("green"))
    t = load_trajectory(path)  # checked and fine at load time
    (tmp_path / "run" / "later.png").unlink()
    (tmp_path / "run" / "later.png").symlink_to(secret)
    with pytest.raises(ScreenshotError, match="now leads outside"):
        t.screenshots[1].bytes()
    assert t.screenshots[0].size() == (16, 12)  # the untouched one still reads
