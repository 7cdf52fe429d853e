"""The three TRL recipes pass the model options the way TRL's own grpo script does, evaluate on
`dataset_test_split` when `eval_strategy` asks for it, and let TRL's experimental-API warning show
(issue 35 §4). Nothing is loaded: TRL's trainer is stopped where it would load the model, or a
stand-in trainer records what the recipe gave it."""
from __future__ import annotations

import json
import warnings

import pytest
from suite_env import load_recipe

from reward import clear_sessions

pytest.importorskip("trl")

COMMON = ["--model_name_or_path", "org/some-policy", "--bf16", "false", "--use_cpu", "true", "--report_to", "none",
          "--num_generations", "2", "--per_device_train_batch_size", "2", "--per_device_eval_batch_size", "2"]
RECIPES = {  # file: the recipe's own flags for a run that builds nothing remote
    "grpo_train.py": ["--scripted_judge"],
    "grpo_remote_rewards.py": ["--reward_url", "http://127.0.0.1:9"],
    "grpo_browser.py": ["--judge", "scripted", "--tasks", "shop-add-usb-hub"],
}


class Stop(Exception):
    """Raised where the model would be loaded (or training would start)."""


def run(file: str, tmp_path, *flags: str) -> None:
    recipe = load_recipe(file, file.removesuffix(".py"))
    clear_sessions()
    try:
        with pytest.raises(Stop):
            recipe.main([*COMMON, *RECIPES[file], "--output_dir", str(tmp_path / "out"), *flags])
    finally:
        clear_sessions()


@pytest.fixture
def model_kwargs(monkeypatch):
    """The kwargs TRL's GRPOTrainer would load the policy with (create_model_from_path stopped)."""
    from trl.trainer import grpo_trainer

    seen: dict = {}

    def stop(model_id, **kwargs):
        seen.update(kwargs, model_id=model_id)
        raise Stop

    monkeypatch.setattr(grpo_trainer, "create_model_from_path", stop)
    return seen


@pytest.fixture
def trainer_kwargs(monkeypatch):
    """What a recipe hands its trainer class (a stand-in that records and stops)."""
    import trl

    import browser_env.training

    seen: dict = {}

    class Recorder:
        def __init__(self, **kwargs):
            seen.update(kwargs)
            raise Stop

    monkeypatch.setattr(trl, "GRPOTrainer", Recorder)
    monkeypatch.setattr(browser_env.training, "BrowserGRPOTrainer", Recorder)
    return seen


@pytest.mark.parametrize("file", sorted(RECIPES))
def test_quantization_dtype_and_attention_reach_the_model_init_kwargs(file, tmp_path, model_kwargs):
    run(file, tmp_path, "--load_in_4bit", "true", "--dtype", "bfloat16", "--attn_implementation", "sdpa",
        "--model_revision", "v2", "--model_init_kwargs", json.dumps({"low_cpu_mem_usage": True}))
    assert model_kwargs["model_id"] == "org/some-policy"
    quant = model_kwargs["quantization_config"]
    assert quant.load_in_4bit and str(quant.bnb_4bit_compute_dtype) == "torch.bfloat16"
    assert (model_kwargs["dtype"], model_kwargs["attn_implementation"], model_kwargs["revision"]) == (
        "bfloat16", "sdpa", "v2")
    assert model_kwargs["low_cpu_mem_usage"] is True  # the run's own model_init_kwargs are kept


def dataset_folder(tmp_path, task_id: str = "shop-add-usb-hub"):
    """A local dataset with train and test splits (datasets infers them from the file names)."""
    folder = tmp_path / "tasks"
    folder.mkdir()
    for split, n in (("train", 4), ("test", 3)):
        rows = [{"prompt": [{"role": "user", "content": f"{split} task {k}"}], "task_id": task_id} for k in range(n)]
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.mark.parametrize("file", sorted(RECIPES))
def test_the_test_split_is_evaluated_when_eval_strategy_asks(file, tmp_path, trainer_kwargs):
    folder = dataset_folder(tmp_path)
    run(file, tmp_path, "--dataset_name", str(folder), "--eval_strategy", "steps", "--eval_steps", "1")
    evaluated = [row["prompt"][0]["content"] for row in trainer_kwargs["eval_dataset"]]
    assert evaluated == [f"test task {k}" for k in range(3)]
    assert len(trainer_kwargs["train_dataset"]) == 4


@pytest.mark.parametrize("file", sorted(RECIPES))
def test_no_eval_dataset_by_default(file, tmp_path, trainer_kwargs):
    run(file, tmp_path, "--dataset_name", str(dataset_folder(tmp_path)))
    assert trainer_kwargs["eval_dataset"] is None and trainer_kwargs["quantization_config"] is None


def test_eval_without_a_test_split_is_refused_at_parse_time(tmp_path):
    with pytest.raises(SystemExit) as exc:
        load_recipe("grpo_train.py", "grpo_train").parse(
            [*COMMON, "--scripted_judge", "--eval_strategy", "steps", "--output_dir", str(tmp_path)])
    assert exc.value.code == 2


def test_the_browser_recipe_evaluates_built_in_tasks_named_by_eval_tasks(tmp_path, trainer_kwargs):
    run("grpo_browser.py", tmp_path, "--eval_strategy", "steps", "--eval_tasks", "tickets-jazz-sold-out")
    assert [row["task_id"] for row in trainer_kwargs["eval_dataset"]] == ["tickets-jazz-sold-out"]


def test_the_browser_recipe_lets_trls_experimental_warning_show(tmp_path, monkeypatch, model_kwargs):
    """TRL warns about `environment_factory` unless TRL_EXPERIMENTAL_SILENCE=1; the recipe used to set
    it for everyone. The trainer is built (the tiny policy: no download) and stopped at `train`."""
    monkeypatch.delenv("TRL_EXPERIMENTAL_SILENCE", raising=False)
    import browser_env.training

    def stop(self, **_kwargs):
        raise Stop

    monkeypatch.setattr(browser_env.training.BrowserGRPOTrainer, "train", stop)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run("grpo_browser.py", tmp_path, "--tiny_policy", "true", "--max_completion_length", "64")
    assert any("'environment_factory', which is an experimental feature" in str(w.message) for w in caught)
