"""`score-dataset --publish-dir/--push-to-hub`: input columns kept, images byte-identical, a card."""
from __future__ import annotations

import io
import json

import pytest
import reward_fakes
import yaml

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")

from PIL import Image as PILImage

from cua_verifier.cli import build_parser
from reward import RewardSettings
from verifier.records import ResultWriter
from verifier.trajectory import Step, Task, Trajectory

FEATURES = datasets.Features({"id": datasets.Value("string"), "trajectory": datasets.Value("string"),
                              "screenshot": datasets.Image(), "frames": datasets.List(datasets.Image()),
                              "note": datasets.Value("string")})


def png(seed: int, size: int = 24) -> bytes:
    img = PILImage.new("RGB", (size, size), (seed * 40 % 256, 90, 200 - seed))
    img.putpixel((seed % size, 1), (1, 2, 3))
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1)  # a setting PIL's default re-encode would not reproduce
    return buf.getvalue()


def make_source(path, n: int = 4):
    rows = [{"id": f"r{k}", "note": f"n{k}",
             "trajectory": Trajectory(task=Task(id=f"t{k}", instruction=f"task {k}"),
                                      steps=[Step(index=i + 1, action="click") for i in range(k)],
                                      final_answer="ok").to_json(),
             "screenshot": {"bytes": png(k), "path": f"s{k}.png"},
             "frames": [{"bytes": png(10 + k + j), "path": None} for j in range(2)]} for k in range(n)]
    datasets.Dataset.from_list(rows, features=FEATURES).to_parquet(str(path))
    return path, rows


def settings(**judge) -> RewardSettings:
    return RewardSettings(verify_fn=reward_fakes.fake_verify, judge_factory=reward_fakes.fake_judge,
                          cache_factory=None, judge=judge)


def run_cli(argv, s=None) -> int:
    args = build_parser().parse_args(["score-dataset", *argv, "--no-progress"])
    return args.func(args, settings=s or settings(model="judge-m"))


@pytest.fixture
def no_decode(monkeypatch):
    """Counts every image decode: `datasets`' Image decoding and any PIL.Image.open."""
    calls = {"datasets": 0, "pil": 0}
    real_decode, real_open = datasets.Image.decode_example, PILImage.open

    def decode(self, *a, **kw):
        calls["datasets"] += 1
        return real_decode(self, *a, **kw)

    def open_(*a, **kw):
        calls["pil"] += 1
        return real_open(*a, **kw)

    monkeypatch.setattr(datasets.Image, "decode_example", decode)
    monkeypatch.setattr(PILImage, "open", open_)
    return calls


@pytest.mark.parametrize("streaming", [False, True])
def test_scored_dataset_keeps_input_columns_and_image_bytes_without_decoding(tmp_path, no_decode, streaming):
    src, rows = make_source(tmp_path / "rollouts.parquet")
    pub = tmp_path / "pub"
    reward_fakes.FAIL_TASKS.add("t2")
    out = ["--out", str(tmp_path / "scores.parquet"), "--publish-dir", str(pub),
           *(["--streaming"] if streaming else [])]
    assert run_cli([str(src), *out, "--limit", "2"]) == 0  # a partial run publishes what it has
    assert len(datasets.load_dataset("parquet", data_files=str(pub / "data" / "*.parquet"),
                                     cache_dir=str(tmp_path / "cache"))["train"]) == 2
    assert run_cli([str(src), *out]) == 3  # resume: only the other two are verified (3: one unscored)
    assert sorted(reward_fakes.CALLS) == ["t0", "t1", "t2", "t3"]
    assert no_decode == {"datasets": 0, "pil": 0}, "screenshots were decoded"

    (shard,) = sorted((pub / "data").glob("*.parquet"))  # the stale 2-row shard was replaced
    table = pq.read_table(shard)
    assert table.column_names == [*pq.read_schema(src).names, "uv_id", "uv_status", "uv_reason", "uv_task_id",
                                  "uv_process_score", "uv_process_success", "uv_outcome_success",
                                  "uv_outcome_reasoning", "uv_first_failure_step", "uv_result_json"]
    got = table.to_pylist()
    for row, orig in zip(got, rows, strict=True):  # the source order, every input value as it was
        assert row["screenshot"]["bytes"] == orig["screenshot"]["bytes"]
        assert [f["bytes"] for f in row["frames"]] == [f["bytes"] for f in orig["frames"]]
        assert (row["id"], row["note"], row["trajectory"]) == (orig["id"], orig["note"], orig["trajectory"])
    assert [r["uv_status"] for r in got] == ["scored", "scored", "unscored", "scored"]
    assert got[2]["uv_reason"].startswith("JudgeUnavailableError") and got[2]["uv_process_score"] is None
    assert got[3]["uv_process_score"] == pytest.approx(0.3) and got[3]["uv_id"] == "r3"
    # loaded back through the card's config, the screenshots are still `Image` features
    ds = datasets.load_dataset(str(pub), split="train", cache_dir=str(tmp_path / "cache"))
    assert isinstance(ds.features["screenshot"], datasets.Image) and ds.features["screenshot"].decode
    assert isinstance(ds.features["frames"].feature, datasets.Image)


def test_dataset_card_records_judge_counts_reasons_and_no_secrets(tmp_path):
    src, _ = make_source(tmp_path / "rollouts.parquet", n=3)
    reward_fakes.FAIL_TASKS.add("t1")
    s = settings(model="judge-m", api_key="sekrit-123", base_urls=["http://10.0.0.7:8000/v1"])
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(tmp_path / "pub")], s) == 3
    text = (tmp_path / "pub" / "README.md").read_text()
    assert text.startswith("---\n") and "sekrit" not in text and "10.0.0.7" not in text
    assert str(tmp_path) not in text  # no local paths in a card meant for the public
    meta = yaml.safe_load(text.split("---\n")[1])
    uv = meta["cua_verifier"]
    assert uv["judge_model"] == "judge-m" and uv["source"] == "rollouts.parquet"
    assert uv["counts"] == {"total": 3, "scored": 2, "unscored": 1}
    assert uv["unscored_reasons"] == {"JudgeUnavailableError": 1}
    assert uv["split"] == "train" and "cua-verifier" in meta["tags"]
    assert "| 3 | 2 | 1 |" in text


def test_card_lists_the_prompt_versions_the_real_pipeline_used(tmp_path):
    from verifier.prompts import prompt_info

    src, _ = make_source(tmp_path / "rollouts.parquet", n=2)
    s = RewardSettings(judge_factory="verifier.testing.ScriptedJudge", judge={"model": "scripted"})
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(tmp_path / "pub")], s) == 0
    recs = ResultWriter(tmp_path / "o.jsonl").records()
    assert all(r.status == "scored" for r in recs), [r.reason for r in recs]
    uv = yaml.safe_load((tmp_path / "pub" / "README.md").read_text().split("---\n")[1])["cua_verifier"]
    seen = {(p["id"], p["version"]) for r in recs for p in r.result["prompts"]}
    assert {(p["id"], p["version"]) for p in uv["prompts"]} == seen and seen
    rubric = prompt_info("rubric.system.j2")
    assert {"id": rubric.id, "version": rubric.version, "sha256": rubric.sha256} in uv["prompts"]
    assert uv["config"]["effective"]["votes"] == recs[0].result["config"]["votes"]


def test_push_to_hub_goes_through_datasets_push_to_hub_with_a_card(tmp_path, local_hub):
    """`Dataset.push_to_hub` against a local stand-in of the hub's storage (tests/publish/conftest.py):
    its files, its `configs`, then our card (license, provenance) committed on top of its commit."""
    src, rows = make_source(tmp_path / "rollouts.parquet", n=2)
    out = ["--out", str(tmp_path / "o.jsonl"), "--push-to-hub", "me/scored"]
    assert run_cli([str(src), *out, "--private", "--license", "cc-by-4.0"]) == 0
    repo = local_hub.root / "me" / "scored"
    create, data_commit, card_commit = local_hub.commits
    assert create == {"create_repo": "me/scored", "private": True}
    assert data_commit["paths"] == ["README.md", "data/train-00000-of-00001.parquet"]
    assert card_commit["paths"] == ["README.md"]
    ds = datasets.load_dataset(str(repo), split="train", cache_dir=str(tmp_path / "cache")) \
        .cast_column("screenshot", datasets.Image(decode=False))
    assert [r["screenshot"]["bytes"] for r in ds] == [r["screenshot"]["bytes"] for r in rows]
    assert list(ds["uv_status"]) == ["scored", "scored"]
    meta = yaml.safe_load((repo / "README.md").read_text().split("---\n")[1])
    assert meta["license"] == "cc-by-4.0" and meta["cua_verifier"]["counts"]["total"] == 2
    assert meta["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}]
    assert meta["dataset_info"]["splits"] == [{"name": "train", "num_bytes": meta["dataset_info"]["splits"][0]["num_bytes"],
                                               "num_examples": 2}]  # push_to_hub's own facts are kept

    # a second split joins the repo; pushing `train` again replaces its files only
    assert run_cli([str(src), "--out", str(tmp_path / "d.jsonl"), "--push-to-hub", "me/scored", "--split", "dev"]) == 0
    reward_fakes.FAIL_TASKS.add("t1")
    assert run_cli([str(src), "--out", str(tmp_path / "o2.jsonl"), "--push-to-hub", "me/scored"]) == 3
    assert sorted(p.relative_to(repo).as_posix() for p in repo.rglob("*.parquet")) == \
        ["data/dev-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]
    meta = yaml.safe_load((repo / "README.md").read_text().split("---\n")[1])
    assert {f["split"] for f in meta["configs"][0]["data_files"]} == {"train", "dev"}
    assert meta["license"] == "unknown" and meta["cua_verifier"]["counts"]["unscored"] == 1
    assert datasets.load_dataset(str(repo), split="train", cache_dir=str(tmp_path / "c2"))["uv_status"] == \
        ["scored", "unscored"]


def test_sharded_runs_cannot_push_one_split_over_each_other(tmp_path, local_hub, capsys):
    """push_to_hub replaces a split's files: `--shard` with `--push-to-hub` is refused before scoring."""
    src, _ = make_source(tmp_path / "rollouts.parquet", n=2)
    argv = [str(src), "--out", str(tmp_path / "o.jsonl"), "--shard", "0/2", "--push-to-hub", "me/scored"]
    assert run_cli(argv) == 2
    err = capsys.readouterr().err
    assert "--push-to-hub cannot be combined with --shard" in err and "--publish-dir" in err
    assert reward_fakes.CALLS == [] and local_hub.commits == []  # nothing scored, nothing pushed


def test_unreachable_hub_is_a_clear_error_and_the_scores_are_kept(tmp_path, monkeypatch, capsys):
    """The real hub client against a closed loopback port: an error naming the repo, exit 2."""
    import socket

    import huggingface_hub.constants

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    src, _ = make_source(tmp_path / "rollouts.parquet", n=2)
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--push-to-hub", "me/scored"]) == 2
    err = capsys.readouterr().err
    assert "cannot push to hub dataset 'me/scored'" in err and "rerun the same command" in err
    assert ResultWriter(tmp_path / "o.jsonl").done_ids() == {"r0", "r1"}
    reward_fakes.CALLS.clear()
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(tmp_path / "p")]) == 0
    assert reward_fakes.CALLS == []  # the retry verifies nothing again


def test_folder_source_publishes_the_results_with_a_card(tmp_path):
    runs = tmp_path / "runs"
    for k in range(2):
        (runs / f"run{k}").mkdir(parents=True)
        (runs / f"run{k}" / "trajectory.json").write_text(Trajectory(task=Task(id=f"f{k}", instruction="x"),
                                                                     final_answer="a").to_json())
    assert run_cli([str(runs), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(tmp_path / "pub")]) == 0
    ds = datasets.load_dataset(str(tmp_path / "pub"), split="train", cache_dir=str(tmp_path / "cache"))
    assert sorted(ds["uv_id"]) == ["run0#0", "run1#0"] and set(ds["uv_status"]) == {"scored"}
    assert "none (the source was a folder" in (tmp_path / "pub" / "README.md").read_text()


def test_undecoded_images_reaches_nested_image_features():
    from verifier.publish import image_columns, undecoded_images

    feats = datasets.Features({"a": datasets.Image(), "b": datasets.List(datasets.Image()),
                               "c": {"img": datasets.Image(), "x": datasets.Value("int64")},
                               "d": datasets.Value("string")})
    ds = datasets.Dataset.from_dict({"a": [{"bytes": png(1), "path": None}],
                                     "b": [[{"bytes": png(2), "path": None}]],
                                     "c": [{"img": {"bytes": png(3), "path": None}, "x": 1}], "d": ["s"]},
                                    features=feats)
    assert image_columns(ds) == ["a", "b", "c"]
    out = undecoded_images(ds)
    assert image_columns(out) == [] and out.features["d"] == feats["d"]
    row = out[0]
    assert row["a"]["bytes"] == png(1) and row["b"][0]["bytes"] == png(2) and row["c"]["img"]["bytes"] == png(3)


SEEN_SHOTS: list[bytes] = []


async def capture_verify(trajectory, config=None, *, judge, cache=None):
    """fake_verify that also keeps the screenshot bytes the verifier was handed."""
    SEEN_SHOTS.extend(s.bytes() for s in trajectory.screenshots)
    return await reward_fakes.fake_verify(trajectory, config, judge=judge, cache=cache)


def test_benchmark_rows_reach_the_verifier_with_the_stored_screenshot_bytes(tmp_path, no_decode):
    """CUAVerifierBench-shaped rows (a list of `Image` screenshots): the verifier gets the PNG bytes
    as stored, not a PIL decode re-encoded, and the published copy keeps them too."""
    SEEN_SHOTS.clear()
    log = "\n".join(json.dumps({"action": "click", "arguments": {"x": i}, "url": "https://shop.example"})
                    for i in range(2))
    feats = datasets.Features({"task_id": datasets.Value("string"), "instruction": datasets.Value("string"),
                               "web_surfer_log": datasets.Value("string"), "final_answer": datasets.Value("string"),
                               "screenshots": datasets.List(datasets.Image())})
    rows = [{"task_id": f"bench-{k}", "instruction": "Find the kettle price", "web_surfer_log": log,
             "final_answer": "$24", "screenshots": [{"bytes": png(3 * k + j), "path": None} for j in range(3)]}
            for k in range(2)]
    src = tmp_path / "bench.parquet"
    datasets.Dataset.from_list(rows, features=feats).to_parquet(str(src))
    s = RewardSettings(verify_fn=capture_verify, judge_factory=reward_fakes.fake_judge, cache_factory=None)
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(tmp_path / "pub")], s) == 0
    stored = [shot["bytes"] for r in rows for shot in r["screenshots"]]
    assert sorted(SEEN_SHOTS) == sorted(stored)  # byte-identical: never re-encoded
    assert no_decode["datasets"] == 0
    (shard,) = (tmp_path / "pub" / "data").glob("*.parquet")
    got = pq.read_table(shard).to_pylist()
    assert [s["bytes"] for r in got for s in r["screenshots"]] == stored
    assert [r["uv_id"] for r in got] == ["bench-0", "bench-1"]


def test_publishing_without_datasets_fails_when_the_flags_are_parsed(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    for gone in ("datasets", "huggingface_hub", "yaml"):  # each package the publish path imports
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, g=gone: None if name == g else real(name, *a))
        for flag in ("--publish-dir", "--push-to-hub"):
            with pytest.raises(SystemExit) as exc:
                build_parser().parse_args(["score-dataset", "src.parquet", "--out", "o.jsonl", flag, "x"])
            err = capsys.readouterr().err
            assert exc.value.code == 2 and "cua-verifier[publish]" in err and gone in err


def test_images_stored_as_paths_are_published_as_their_file_bytes(tmp_path):
    """A path-only image would not travel to the hub: it is embedded (read, not decoded)."""
    shot = tmp_path / "shot.png"
    shot.write_bytes(png(7))
    feats = datasets.Features({"id": datasets.Value("string"), "trajectory": datasets.Value("string"),
                               "screenshot": datasets.Image()})
    row = {"id": "p0", "trajectory": Trajectory(task=Task(id="t0", instruction="x"), final_answer="a").to_json(),
           "screenshot": {"bytes": None, "path": str(shot)}}
    src = tmp_path / "paths.parquet"
    datasets.Dataset.from_list([row], features=feats).to_parquet(str(src))
    assert pq.read_table(src).to_pylist()[0]["screenshot"]["bytes"] is None  # the source holds a path only
    pub = tmp_path / "pub"
    assert run_cli([str(src), "--out", str(tmp_path / "o.jsonl"), "--publish-dir", str(pub), "--split", "dev"]) == 0
    (shard,) = (pub / "data").glob("dev-00000-of-00001.parquet")
    (got,) = pq.read_table(shard).to_pylist()
    assert got["screenshot"] == {"bytes": png(7), "path": "shot.png"}
    ds = datasets.load_dataset(str(pub), split="dev", cache_dir=str(tmp_path / "cache"))  # split from the name
    assert ds["uv_id"] == ["p0"]


def test_shard_runs_publish_their_own_files_into_one_dataset(tmp_path):
    """N `--shard I/N` processes publishing to one place: each replaces its own files only."""
    src, rows = make_source(tmp_path / "rollouts.parquet", n=6)
    pub = tmp_path / "pub"
    for i in (0, 1, 0):  # shard 0 again (a resumed run): it replaces its file, not shard 1's
        assert run_cli([str(src), "--out", str(tmp_path / f"o{i}.jsonl"), "--shard", f"{i}/2",
                        "--publish-dir", str(pub)]) == 0
    names = sorted(p.name for p in (pub / "data").iterdir())
    assert names == ["train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]
    ds = datasets.load_dataset(str(pub), split="train", cache_dir=str(tmp_path / "cache"))
    assert sorted(ds["id"]) == sorted(ds["uv_id"]) == [r["id"] for r in rows]  # each row exactly once
    assert sorted(reward_fakes.CALLS) == [f"t{k}" for k in range(6)]
    card = yaml.safe_load((pub / "README.md").read_text().split("---\n")[1])
    assert card["cua_verifier"]["shard"] == "0/2" and card["license"] == "unknown"
    assert card["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}]
    # an unsharded run owns the whole split: the shard files give way to its own
    assert run_cli([str(src), "--out", str(tmp_path / "all.jsonl"), "--publish-dir", str(pub)]) == 0
    assert sorted(p.name for p in (pub / "data").iterdir()) == ["train-00000-of-00001.parquet"]
