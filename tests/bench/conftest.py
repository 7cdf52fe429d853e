"""A small local copy of CUAVerifierBench in the dataset's real parquet schema (images included)."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

BROWSERBASE = "fara7b_om2w_browserbase"


def _png(color: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (32, 20), color).save(buf, format="PNG")
    return buf.getvalue()


def _log(task: str, n_actions: int, answer: str) -> str:
    events = []
    for i in range(1, n_actions + 1):
        events.append({"type": "WebSurferEvent", "timestamp": f"2025-01-01T00:00:{i:02d}",
                       "source": "WebSurfer-SummarizedAction", "message": f"Action {i}", "url": "https://x.test/",
                       "action": None, "arguments": None})
        last = i == n_actions
        events.append({"type": "WebSurferEvent", "timestamp": f"2025-01-01T00:00:{i:02d}", "source": "WebSurfer",
                       "message": f"step {i}", "url": "https://x.test/",
                       "action": "stop_and_answer_question" if last else "click",
                       "arguments": ({"answer": answer, "reasoning": "done"} if last
                                     else {"target_id": str(i), "reasoning": f"go {task}"})})
    events.append({"type": "WebSurferEvent", "timestamp": "2025-01-01T00:01:00", "source": "WebSurfer",
                   "message": f"Web surfing done. Final target: {answer}", "url": "https://x.test/",
                   "action": None, "arguments": None})
    return "\n".join(json.dumps(e) for e in events)


TASKS = [  # task_id, uv outcome, uv score, final outcome, final process, blind majority, blind median
    ("Shop--aaaa1111", 1, 0.9, 1, 1, 1, 0.9),
    ("Shop--bbbb2222", 1, 0.85, 0, 1, 0, 0.5),
    ("Maps--cccc3333", 0, 0.2, 0, 0, 0, 0.1),
]


def write_bench_folder(root: Path) -> Path:
    import datasets

    traj_features = datasets.Features({
        "task_id": datasets.Value("string"), "instruction": datasets.Value("string"),
        "init_url": datasets.Value("string"), "start_timestamp": datasets.Value("string"),
        "end_timestamp": datasets.Value("string"), "final_answer": datasets.Value("string"),
        "is_aborted": datasets.Value("bool"), "web_surfer_log": datasets.Value("string"),
        "screenshots": datasets.List(datasets.Image()), "n_screenshots": datasets.Value("int32"),
        "gpt_eval_json": datasets.Value("string"), "uv_rubric_score": datasets.Value("float32"),
        "uv_outcome_success": datasets.Value("int32"), "mm_is_success": datasets.Value("int32"),
        "verifier_is_success": datasets.Value("int32"), "final_human_outcome_label": datasets.Value("int32"),
        "final_human_process_label": datasets.Value("int32"),
        "median_human_rubric_score_agnostic": datasets.Value("float32"),
        "majority_human_outcome_vote": datasets.Value("int32"),
    })
    ann_features = datasets.Features({k: datasets.Value("string") for k in (
        "task_id", "annotator", "human_judgement_outcome", "human_judgement_process", "outcome_comment",
        "process_comment", "informed_outcome_agreement", "informed_process_agreement",
        "informed_outcome_comment", "informed_process_comment")} | {"human_process_score": datasets.Value("float32")})
    colors = ["red", "green", "blue"]
    rows, anns = [], []
    for k, (tid, uv, score, fo, fp, bm, med) in enumerate(TASKS):
        shots = [{"bytes": _png(colors[(k + j) % 3]), "path": None} for j in range(2 + k)]
        answer = f"answer for {tid}"
        rows.append({"task_id": tid, "instruction": f"Do the thing number {k}", "init_url": "https://x.test/",
                     "start_timestamp": "2025-01-01T00:00:00", "end_timestamp": "2025-01-01T00:01:00",
                     "final_answer": answer, "is_aborted": False, "web_surfer_log": _log(tid, len(shots) - 1, answer),
                     "screenshots": shots, "n_screenshots": len(shots), "gpt_eval_json": "{}",
                     "uv_rubric_score": score, "uv_outcome_success": uv, "mm_is_success": 1,
                     "verifier_is_success": 1, "final_human_outcome_label": fo, "final_human_process_label": fp,
                     "median_human_rubric_score_agnostic": med, "majority_human_outcome_vote": bm})
        for j, judge in enumerate(("Judge1", "Judge2")):
            ok = bool(bm) if j == 0 else bool(fo)
            anns.append({"task_id": tid, "annotator": judge,
                         "human_judgement_outcome": "Success" if ok else "Failure",
                         "human_judgement_process": "Success" if fp else "Failure",
                         "human_process_score": med, "outcome_comment": "", "process_comment": "",
                         "informed_outcome_agreement": "Agree", "informed_process_agreement": "Agree",
                         "informed_outcome_comment": "", "informed_process_comment": ""})
    (root / "trajectories").mkdir(parents=True)
    (root / "annotations").mkdir(parents=True)
    datasets.Dataset.from_list(rows, features=traj_features).to_parquet(
        str(root / "trajectories" / f"{BROWSERBASE}-00000-of-00001.parquet"))
    datasets.Dataset.from_list(anns, features=ann_features).to_parquet(
        str(root / "annotations" / f"{BROWSERBASE}-00000-of-00001.parquet"))
    internal = dict(rows[0], task_id="internal-1", screenshots=[], n_screenshots=0,
                    majority_human_outcome_vote=None)
    datasets.Dataset.from_list([internal], features=traj_features).to_parquet(
        str(root / "trajectories" / "internal-00000-of-00001.parquet"))
    datasets.Dataset.from_list([dict(anns[0], task_id="internal-1")], features=ann_features).to_parquet(
        str(root / "annotations" / "internal-00000-of-00001.parquet"))
    return root


@pytest.fixture(scope="session")
def bench_dir(tmp_path_factory) -> Path:
    return write_bench_folder(tmp_path_factory.mktemp("cuaverifierbench"))
