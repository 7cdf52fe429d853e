"""A new user's first hour (issue 14, section 2; fast, no engine).

Missing optional packages and an unreachable judge are reported in one line before any work;
`score` and `score-dataset` share one exit-status policy; ids, help texts and `inspect
--write-native` say what they mean.
"""
from __future__ import annotations

import argparse
import http.server
import json
import socket
import sys
import threading
from pathlib import Path

import pytest

from cua_verifier.cli import build_parser, main, score_dataset_cmd
from cua_verifier.cli._preflight import check_judge
from reward import RewardSettings
from verifier.errors import JudgeUnavailableError
from verifier.judge import make_judge
from verifier.judge.config import JudgeConfig
from verifier.testing import ScriptedJudge
from verifier.trajectory import Task, Trajectory

REPO = Path(__file__).resolve().parents[2]
JUDGED: list[ScriptedJudge] = []


def scripted_judge() -> ScriptedJudge:
    JUDGED.append(ScriptedJudge())
    return JUDGED[-1]


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens once the socket is closed


def _native(path: Path, n: int = 2) -> Path:
    path.write_text("".join(Trajectory(task=Task(id=f"t{k}", instruction="x"), final_answer="a").to_json() + "\n"
                            for k in range(n)))
    return path


def _ds_args(src: Path, out: Path) -> argparse.Namespace:
    return build_parser().parse_args(["score-dataset", str(src), "--out", str(out), "--no-progress"])


# ---- optional dependencies, checked first ------------------------------------------------------
def test_bench_from_labels_without_scipy_names_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "scipy", None)
    assert main(["bench", "--from-labels", str(tmp_path / "labels.csv")]) == 2
    err = capsys.readouterr().err
    assert "scipy" in err and "pip install 'cua-verifier[bench]'" in err and "Traceback" not in err


def test_score_dataset_parquet_without_pyarrow_fails_before_scoring(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    JUDGED.clear()
    out = tmp_path / "x.parquet"
    rc = score_dataset_cmd.run(_ds_args(_native(tmp_path / "r.jsonl"), out),
                               RewardSettings(judge_factory=scripted_judge))
    assert rc == 2 and "pyarrow" in capsys.readouterr().err
    assert JUDGED == [] and not out.exists() and not Path(str(out) + ".records.jsonl").exists()


def test_bench_data_dir_without_parquet_is_one_line(tmp_path, capsys):
    rc = main(["bench", "--split", "internal", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"),
               "--judge-url", _dead_url(), "--model", "m"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "no parquet files" in err


# ---- one exit-status policy ---------------------------------------------------------------------
def test_score_dataset_exits_3_when_every_row_is_unscored(tmp_path, capsys):
    src = tmp_path / "runs"
    src.mkdir()
    (src / "a.json").write_text("{oops")
    (src / "b.json").write_text("{also bad")
    out = tmp_path / "o.jsonl"
    rc = score_dataset_cmd.run(_ds_args(src, out), RewardSettings(judge_factory=scripted_judge))
    assert rc == 3 and [json.loads(x)["status"] for x in out.read_text().splitlines()] == ["unscored"] * 2


@pytest.mark.parametrize("command", ["score", "score-dataset"])
def test_help_states_the_exit_status(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "0 every rollout scored; 3 some rollouts unscored" in " ".join(capsys.readouterr().out.split())


def test_readme_documents_the_exit_status():
    text = (REPO / "README.md").read_text()
    assert "Exit status" in text and "3 = some unscored" in text and "score-dataset" in text


# ---- judge health before scoring ----------------------------------------------------------------
def test_score_with_an_unreachable_judge_stops_before_scoring(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    rc = main(["score", str(_native(tmp_path / "r.jsonl")), "--out", str(out), "--judge-url", _dead_url(),
               "--model", "m", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "judge unreachable before scoring" in err and "serve-judge --demo" in err
    assert not out.exists()


def test_score_dataset_with_an_unreachable_judge_stops_before_scoring(tmp_path, capsys):
    out = tmp_path / "o.jsonl"
    settings = RewardSettings(judge={"base_urls": [_dead_url()], "model": "m"})
    assert score_dataset_cmd.run(_ds_args(_native(tmp_path / "r.jsonl"), out), settings) == 2
    assert "judge unreachable" in capsys.readouterr().err and not out.exists()


class _Models(http.server.BaseHTTPRequestHandler):
    key = "right"

    def do_GET(self):
        ok = self.headers.get("Authorization") == f"Bearer {self.key}"
        body = json.dumps({"data": [{"id": "judge"}]} if ok else {"error": "bad key"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def models_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_check_judge_against_a_real_http_server(models_server, monkeypatch, capsys):
    monkeypatch.setenv("HC_KEY", "right")
    check_judge(make_judge(JudgeConfig(base_urls=[models_server], model="judge", api_key_env="HC_KEY")))
    both = JudgeConfig(base_urls=[models_server, _dead_url()], model="judge", api_key_env="HC_KEY")
    check_judge(make_judge(both))  # one replica down: a warning, the other serves
    assert "is not answering" in capsys.readouterr().err
    monkeypatch.setenv("HC_KEY", "wrong")
    with pytest.raises(JudgeUnavailableError, match="API key was rejected"):
        check_judge(make_judge(JudgeConfig(base_urls=[models_server], model="judge", api_key_env="HC_KEY")))


def test_scripted_judges_are_not_probed():
    check_judge(ScriptedJudge())  # nothing to reach, nothing raised


# ---- names, help texts, messages ----------------------------------------------------------------
def test_jsonl_source_ids_name_the_file(tmp_path):
    src = _native(tmp_path / "rollouts.jsonl")
    out = tmp_path / "o.jsonl"
    assert score_dataset_cmd.run(_ds_args(src, out), RewardSettings(judge_factory=scripted_judge)) == 0
    assert sorted(json.loads(x)["id"] for x in out.read_text().splitlines()) == ["rollouts.jsonl#0",
                                                                                  "rollouts.jsonl#1"]


def test_top_level_help_is_not_cut_off(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Universal Verifier for computer-use agents" in text and "COMMAND --help" in text
    assert "exposing" not in text  # the developer note is not the user's description


def test_inspect_write_native_says_what_it_wrote(tmp_path, capsys):
    out = tmp_path / "native.jsonl"
    assert main(["inspect", str(_native(tmp_path / "r.jsonl", 3)), "--write-native", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"wrote 3 trajectory record(s) in the native format to {out}" in err
    assert len(out.read_text().splitlines()) == 3


def test_gitignore_covers_quick_start_and_recipe_outputs():
    ignored = (REPO / ".gitignore").read_text().split()
    for pattern in ("results.jsonl", "results.parquet", "results/", "runs/", ".mypy_cache/"):
        assert pattern in ignored or f"/{pattern}" in ignored, pattern


def test_grpo_recipe_silences_only_the_libraries_deprecation_warnings():
    import importlib.util
    import re

    spec = importlib.util.spec_from_file_location("grpo_train", REPO / "recipes" / "grpo_train.py")
    recipe = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = recipe  # its dataclass resolves annotations there
    spec.loader.exec_module(recipe)
    silenced = re.compile(recipe.DEPRECATED_NAMES)
    for old in ("gradient_checkpointing", "is_gradient_checkpointing", "gradient_checkpointing_enable",
                "gradient_checkpointing_disable"):
        new = old.replace("gradient", "activation")
        assert silenced.match(f"`{old}` is deprecated and will be removed in v6. Use `{new}` instead.")
    assert not silenced.match("`top_k` is deprecated and will be removed in v6. Use `k` instead.")
    assert not silenced.match("something else about gradient_checkpointing")


def test_rounds_in_the_readme_match_the_pipeline():
    """6 rounds when no conditional criterion is undecided (no conditions call), 7 when it runs."""
    import asyncio

    from verifier.loaders import load_trajectory
    from verifier.pipeline import verify
    from verifier.testing import DEFAULTS

    def conditional_rubric(m, o):
        rubric = DEFAULTS["rubric"](m, o)
        rubric["criteria"][1]["condition"] = "if the page loads"
        return rubric

    traj = load_trajectory(REPO / "examples" / "trajectories" / "library-hours-success")
    rounds = {}
    for name, script in (("plain", {}), ("conditional", {"rubric": conditional_rubric})):
        judge = ScriptedJudge(script)
        rounds[name] = (asyncio.run(verify(traj, judge=judge)).usage.rounds, len(judge.requests_for("conditions")))
    assert rounds == {"plain": (6, 0), "conditional": (7, 1)}
    text = " ".join((REPO / "README.md").read_text().split())
    assert "with the defaults 6 when no conditional criterion is left undecided" in text
    assert "7 when the conditions call runs" in text


@pytest.mark.parametrize("status", [404, 405, 501, 503])
def test_any_http_answer_counts_as_reachable(status, capsys):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        check_judge(make_judge(JudgeConfig(base_urls=[f"http://127.0.0.1:{srv.server_address[1]}/v1"],
                                           model="m")))
    finally:
        srv.shutdown()
        srv.server_close()
    assert ("HTTP 503" in capsys.readouterr().err) == (status == 503)


def test_parquet_inputs_without_pyarrow_name_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    data = tmp_path / "bench.parquet"
    data.write_bytes(b"PAR1")
    assert main(["inspect", str(data)]) == 2
    assert "pip install 'cua-verifier[bench]'" in capsys.readouterr().err
    assert main(["score", str(data), "--out", str(tmp_path / "o.jsonl"), "--judge-url", _dead_url(),
                 "--model", "m"]) == 2
    assert "pyarrow" in capsys.readouterr().err and not (tmp_path / "o.jsonl").exists()
