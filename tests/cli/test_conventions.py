"""Command-line conventions a user expects (issue 35 §6): `--version`, `python -m cua_verifier`,
`-v` / `--quiet` after the command, progress bars with a total, one bar for `calibrate`, YAML configs."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cua_verifier.cli import build_parser, calibrate_cmd, main, score_cmd
from verifier.testing import ScriptedJudge

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "trajectories"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
JUDGE = ["--judge-url", "http://127.0.0.1:9/v1", "--model", "judge"]


def parsed(argv: list[str], parser=None):
    """The namespace `main` hands a command: parsed, then the global options applied."""
    from cua_verifier.cli import _globals

    args = (parser or build_parser()).parse_args(argv)
    _globals.apply(args)
    return args


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"cua-verifier {VERSION}"


def test_python_dash_m_runs_the_same_command_line():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    got = subprocess.run([sys.executable, "-m", "cua_verifier", "--version"], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert got.returncode == 0 and got.stdout.strip() == f"cua-verifier {VERSION}", got.stderr
    got = subprocess.run([sys.executable, "-m", "cua_verifier", "inspect", str(EXAMPLES / "library-hours-success"),
                          "--json", "-q"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout.splitlines()[0])["task"]["id"]


@pytest.mark.parametrize(("argv", "verbose", "quiet"), [
    (["-v", "inspect", "X", "-v"], 2, False),  # both places add up
    (["inspect", "X", "-vv"], 2, False),
    (["inspect", "X", "--verbose"], 1, False),
    (["inspect", "X"], 0, False),
    (["inspect", "X", "--quiet"], 0, True),
    (["-q", "inspect", "X"], 0, True),
])
def test_verbosity_before_or_after_the_command(argv, verbose, quiet):
    args = parsed(argv)
    assert (args.verbose, args.quiet) == (verbose, quiet)


def test_every_command_takes_them_and_quiet_turns_off_progress(monkeypatch):
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in commands.items():
        flags = {f for a in sub._actions for f in a.option_strings}
        assert {"-v", "--verbose", "-q", "--quiet"} <= flags, name
    assert parsed(["score", "p", "--out", "o.jsonl", "--quiet"], parser).no_progress is True
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", root.level)  # restored after the test
    parsed(["inspect", "X", "-vv"], parser)
    assert root.level == logging.DEBUG


def test_score_on_a_folder_shows_a_bar_with_its_total(tmp_path, monkeypatch, capsys):
    from verifier.sources.items import iter_path

    n = len(list(iter_path(EXAMPLES, str)))
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: ScriptedJudge())
    assert main(["score", str(EXAMPLES), "--out", str(tmp_path / "r.jsonl"), *JUDGE]) == 0
    err = capsys.readouterr().err
    assert n == 3 and f"{n}/{n}" in err and "scoring: 100%" in err, err[-2000:]

    from verifier.sources.count import count_items

    assert count_items([EXAMPLES]) == n


def test_count_matches_the_items_of_native_files_and_bad_paths(tmp_path):
    from verifier.sources.count import count_items
    from verifier.sources.items import iter_path

    record = json.loads((EXAMPLES / "library-hours-success" / "trajectory.json").read_text())
    record.pop("screenshots", None)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(record) + "\n\n  \n" + json.dumps(record) + "\n" + "{broken\n")
    (tmp_path / "missing").mkdir()
    paths = [rows, tmp_path / "nope.jsonl", EXAMPLES]
    assert count_items(paths) == sum(len(list(iter_path(p, str))) for p in paths) == 3 + 1 + 3
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([record, record]))
    assert count_items([listed]) is None  # a JSON list would have to be parsed: no total, not a wrong one


def test_score_dataset_on_a_folder_counts_first(tmp_path, monkeypatch):
    from cua_verifier.cli import score_dataset_cmd

    args = parsed(["score-dataset", str(EXAMPLES), "--out", str(tmp_path / "o.jsonl")])
    _, total = score_dataset_cmd.open_source(args)
    assert total == 3


@pytest.fixture
def scripted_calibrate(monkeypatch):
    def fake(args, demo):
        args.judge_model = args.model
        return ScriptedJudge()

    monkeypatch.setattr(calibrate_cmd, "_judge", fake)


def test_calibrate_shows_one_bar_unless_verbose(scripted_calibrate, capsys):
    suite = REPO / "examples" / "calibration"
    assert main(["calibrate", "--suite", str(suite), "--only", "O3", *JUDGE]) == 0
    err = capsys.readouterr().err
    assert "[1/" not in err and "calibrate: 100%" in err and "2/2" in err, err[-2000:]
    assert main(["calibrate", "--suite", str(suite), "--only", "O3", *JUDGE, "-v"]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("[")]
    assert [x.split("]")[0] for x in lines] == ["[1/2", "[2/2"]


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_config_reads_yaml_like_json(tmp_path, suffix):
    from verifier.settings import read_config_file

    data = {"votes": 3, "judge": {"timeout_s": 120, "base_urls": ["http://127.0.0.1:8010/v1"]},
            "max_concurrency": 8}
    as_json = tmp_path / "run.json"
    as_json.write_text(json.dumps(data))
    as_yaml = tmp_path / f"run{suffix}"
    as_yaml.write_text("# a TRL-style run file\nvotes: 3\nmax_concurrency: 8\njudge:\n  timeout_s: 120\n"
                       "  base_urls:\n    - http://127.0.0.1:8010/v1\n")
    assert read_config_file(as_yaml) == read_config_file(as_json)


def test_yaml_config_errors_name_the_file(tmp_path):
    from verifier.errors import ConfigError
    from verifier.settings import read_config_file

    bad = tmp_path / "bad.yaml"
    bad.write_text("votes: [3\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: cannot read YAML config"):
        read_config_file(bad)
    listed = tmp_path / "list.yml"
    listed.write_text("- votes: 3\n")
    with pytest.raises(ConfigError, match=r"list\.yml: expected a YAML mapping"):
        read_config_file(listed)
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("votes: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ConfigError, match="cannot read YAML config"):  # safe_load: no object tags
        read_config_file(tagged)


def test_score_takes_a_yaml_config(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(score_cmd, "build_judge", lambda args: seen.append(args.settings) or ScriptedJudge())
    cfg = tmp_path / "run.yaml"
    cfg.write_text("votes: 1\ntop_k: 2\n")
    assert main(["score", str(EXAMPLES / "library-hours-success"), "--out", str(tmp_path / "r.jsonl"),
                 "--config", str(cfg), "--no-progress", *JUDGE]) == 0
    assert seen and seen[0]["verifier"] == {"votes": 1, "top_k": 2}
