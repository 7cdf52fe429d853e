"""CUAVerifierBench loader on a local parquet folder in the dataset's real schema."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from verifier.bench.dataset import REVISION, iter_annotation_labels, load_split
from verifier.bench.labels import agreement_table

BB = "fara7b_om2w_browserbase"


def test_fixture_is_in_real_schema(bench_dir):
    schema = pq.read_schema(next((bench_dir / "trajectories").glob(f"{BB}-*.parquet")))
    assert str(schema.field("screenshots").type) == "list<element: struct<bytes: binary, path: string>>"
    assert REVISION == "c19eb323cd802add5c3d2840ff13044061364867"


def test_join_labels_and_stored_verdicts(bench_dir):
    tasks = load_split(BB, data_dir=bench_dir)
    assert [t.task_id for t in tasks] == ["Shop--aaaa1111", "Shop--bbbb2222", "Maps--cccc3333"]
    assert [len(t.annotations) for t in tasks] == [2, 2, 2]
    assert all(a["task_id"] == t.task_id for t in tasks for a in t.annotations)
    lab = tasks[1].labels
    assert (lab.final_outcome, lab.final_process, lab.blind_majority_outcome) == (False, True, False)
    assert lab.blind_median_process_score == pytest.approx(0.5)
    uv = next(v for v in tasks[1].stored_verdicts() if v.verifier.startswith("uv"))
    assert uv.outcome_success is True and uv.process_score == pytest.approx(0.85)
    assert "screenshots" not in tasks[0].row  # fetched on demand
    shots = tasks[0].full_row()["screenshots"]
    assert len(shots) == 2 and shots[0]["bytes"][:4] == b"\x89PNG"


def test_stored_uv_agreement_on_fixture(bench_dir):
    tasks = load_split(BB, data_dir=bench_dir)
    rows = agreement_table([v for t in tasks for v in t.stored_verdicts()], [t.labels for t in tasks], n_boot=50)
    out = {(r.verifier, r.target, r.label_source): r for r in rows}
    b = out[("uv (dataset, stored)", "outcome", "final")].binary
    assert (b.tp, b.fp, b.fn, b.tn) == (1, 1, 0, 1)


def test_internal_split_and_majority_fallback(bench_dir):
    (task,) = load_split("internal", data_dir=bench_dir)
    assert task.full_row()["screenshots"] == [] and len(task.annotations) == 1
    # no stored majority vote: derived from the single UV-blind annotation ("Success")
    assert task.labels.blind_majority_outcome is True


def test_filter_and_errors(bench_dir, tmp_path):
    assert [t.task_id for t in load_split(BB, data_dir=bench_dir, task_ids={"Maps--cccc3333"})] == ["Maps--cccc3333"]
    with pytest.raises(ValueError, match="unknown split"):
        load_split("train", data_dir=bench_dir)
    with pytest.raises(FileNotFoundError):
        load_split(BB, data_dir=tmp_path)


def test_annotation_labels_for_inter_annotator(bench_dir):
    tasks = load_split(BB, data_dir=bench_dir)
    outcome = iter_annotation_labels(tasks, "human_judgement_outcome")
    assert outcome["Shop--bbbb2222"] == {"Judge1": False, "Judge2": False}
    assert outcome["Shop--aaaa1111"] == {"Judge1": True, "Judge2": True}
    scores = iter_annotation_labels(tasks, "human_process_score")
    assert scores["Maps--cccc3333"]["Judge1"] == pytest.approx(0.1)


def test_rows_become_trajectories(bench_dir):
    tasks = load_split(BB, data_dir=bench_dir)
    traj = tasks[2].trajectory()
    assert traj.task.id == "Maps--cccc3333" and traj.task.instruction == "Do the thing number 2"
    assert len(traj.steps) == 3 and len(traj.screenshots) == 4
    assert traj.final_answer == "answer for Maps--cccc3333"
    assert traj.screenshots[0].image().size == (32, 20)
    assert "final_human_outcome_label" not in traj.to_json()  # labels never reach the verifier


def test_hub_path_with_stubbed_datasets(bench_dir, monkeypatch):
    """The hub branch (no network here): right repo/config/split/revision, images kept as bytes."""
    import datasets

    calls = []

    def fake_load(repo, config, split, revision):
        calls.append((repo, config, split, revision))
        return datasets.Dataset.from_parquet(str(next((bench_dir / config).glob(f"{split}-*.parquet"))))

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    tasks = load_split(BB)
    assert calls == [("microsoft/CUAVerifierBench", c, BB, REVISION) for c in ("trajectories", "annotations")]
    assert [t.task_id for t in tasks] == ["Shop--aaaa1111", "Shop--bbbb2222", "Maps--cccc3333"]
    shot = tasks[0].full_row()["screenshots"][0]
    assert isinstance(shot, dict) and shot["bytes"][:4] == b"\x89PNG"  # not decoded to PIL
    assert len(tasks[0].annotations) == 2 and tasks[0].trajectory().screenshots[1].image().size == (32, 20)


@pytest.mark.parametrize(("raw", "expected"), [
    ("Success", True), ("successful", True), ("Yes", True), (1, True), ("1", True),
    ("Failure", False), ("unsuccessful", False), ("Not successful", False), ("No", False), (0, False),
    ("incomplete", False), ("not sure", None), ("Partially complete", None), ("N/A", None), ("", None),
    (None, None), (float("nan"), None),
])
def test_label_parsing(raw, expected):
    from verifier.bench.dataset import _flag

    assert _flag(raw) is expected
