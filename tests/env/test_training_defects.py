"""Training-time defects of issue 11, each through the real TRL path that exposed it."""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
from suite_env import load_recipe

from reward import RewardSettings, clear_sessions, make_uv_rewards
from verifier.errors import JudgeUnavailableError
from verifier.testing import DEFAULTS, ScriptedJudge

REPO = Path(__file__).resolve().parents[2]


def _rubric(messages, output_model):
    text = " ".join(getattr(p, "text", "") or "" for m in messages for p in m.content)
    if "Paris" in text:  # one of the two tasks cannot be judged: its rollouts are unscored
        return JudgeUnavailableError("judge down for this task")
    return DEFAULTS["rubric"](messages, output_model)


def half_failing_judge() -> ScriptedJudge:
    return ScriptedJudge({"rubric": _rubric})


@pytest.mark.slow
def test_unscored_rows_beside_scored_ones_survive_trls_completions_table(tmp_path):
    """log_completions=True: TRL writes the completions table (rewards + log_extra columns) to
    parquet at every log step; a column mixing numbers and "unscored: ..." strings made pyarrow
    raise and stopped training."""
    pd = pytest.importorskip("pandas")
    from reward.testing import run_grpo_smoke, tiny_cua_dataset

    clear_sessions()
    uv = make_uv_rewards(RewardSettings(judge_factory=half_failing_judge, cache_factory=None))
    trainer = run_grpo_smoke([uv.process, uv.outcome], output_dir=tmp_path, num_generations=2,
                             per_device_train_batch_size=4, dataset=tiny_cua_dataset(n_tasks=2),
                             log_completions=True, num_completions_to_print=0)
    clear_sessions()
    (log,) = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    assert log["uv_outcome/failure_rate"] == 0.5
    table = pd.read_parquet(tmp_path / "completions" / "completions_00001.parquet")
    reasons = table["uv_outcome/unscored_reason"]
    unscored = reasons.notna()
    assert unscored.sum() == 2 and reasons[unscored].str.startswith("JudgeUnavailableError").all()
    assert pd.api.types.is_numeric_dtype(table["uv_outcome/process_score"])
    assert table.loc[unscored, "uv_outcome/process_score"].isna().all()
    assert table.loc[~unscored, "uv_outcome/process_score"].map(math.isfinite).all()
    assert table.loc[unscored, "uv_outcome"].isna().all()  # the reward itself: None -> NaN


def _grpo_train_module():
    return load_recipe("grpo_train.py", "grpo_train_defects")


def test_grpo_train_real_runs_save_checkpoints():
    """A real run used to inherit the smoke config's save_strategy="no" (argparse recipe, issue 11)."""
    pytest.importorskip("trl")
    recipe = _grpo_train_module()
    real = str(REPO / "recipes" / "configs" / "train.yaml")
    _, config, _, _ = recipe.parse(["--config", real, "--model_name_or_path", "some/model", "--bf16", "false",
                                    "--output_dir", "runs/x", "--save_steps", "25"])
    assert config.save_strategy == "steps" and config.save_steps == 25
    assert config.reward_weights == [0.5, 1.0]
    _, config, _, _ = recipe.parse(["--config", real, "--tiny", "--bf16", "false", "--no_save"])
    assert config.save_strategy == "no"


def test_the_model_card_names_only_hub_datasets(tmp_path):
    """TRL writes `dataset_name` into the card's `datasets` metadata and links it on the Hub; the
    built-in tasks (None) or a local file are no hub dataset and must not appear there."""
    pytest.importorskip("trl")
    from huggingface_hub.utils import validate_repo_id
    from trl.trainer.utils import generate_model_card

    recipe = _grpo_train_module()
    local = tmp_path / "tasks.jsonl"
    local.write_text("{}\n")
    assert recipe.card_dataset(None) is None and recipe.card_dataset(str(local)) is None
    assert recipe.card_dataset("no spaces/in ids") is None
    assert recipe.card_dataset("trl-lib/tldr") == "trl-lib/tldr"

    def card(name):
        return generate_model_card(base_model=None, model_name="m", hub_model_id="m", dataset_name=name, tags=[],
                                   wandb_url=None, trackio_url=None, trainer_name="GRPO")

    raw = card(str(local)).data.to_dict()  # what passing the path through would write
    with pytest.raises(ValueError):
        validate_repo_id(raw["datasets"][0] if isinstance(raw["datasets"], list) else raw["datasets"])
    clean = card(recipe.card_dataset(str(local)))
    assert "datasets" not in clean.data.to_dict() and "huggingface.co/datasets" not in clean.text
    # the browser recipe writes its card through the same guard
    assert load_recipe("grpo_browser.py", "grpo_browser_card").card_dataset is recipe.card_dataset


@pytest.mark.slow
def test_grpo_train_saves_the_final_model(tmp_path):
    pytest.importorskip("trl")
    from huggingface_hub import ModelCard

    recipe = _grpo_train_module()
    clear_sessions()
    rc = recipe.main(["--config", str(REPO / "recipes" / "configs" / "train_smoke.yaml"), "--scripted_judge",
                      "--max_completion_length", "8", "--output_dir", str(tmp_path)])
    clear_sessions()
    assert rc == 0
    assert (tmp_path / "model.safetensors").is_file() and (tmp_path / "checkpoint-1").is_dir()
    card = ModelCard.load(tmp_path / "README.md").data.to_dict()  # the built-in tasks: no dataset named
    assert "datasets" not in card and "universal-verifier" in card["tags"]


def test_cua_verifier_reward_names_resolve_like_trl_grpo(monkeypatch):
    """`trl grpo --reward_funcs X.Y` imports X after putting the working directory first on
    sys.path. `cua_verifier.uv_outcome` is `reward.uv_outcome` itself: a second name, not a way
    around the clash with the unrelated PyPI `reward` package (README, "Package names")."""
    import cua_verifier
    import reward

    assert cua_verifier.uv_process is reward.uv_process and cua_verifier.uv_outcome is reward.uv_outcome
    assert cua_verifier.uv_combined.__name__ == "uv_combined"
    module_path, name = ["cua_verifier", "uv_outcome"]
    monkeypatch.setattr(sys, "path", [str(REPO), *sys.path])
    assert getattr(importlib.import_module(module_path), name) is reward.uv_outcome


def test_browser_recipe_configs_parse(monkeypatch):
    """Both YAML configs are valid for the recipe's parser (the GPU one with CPU overrides, since
    GRPOConfig refuses bf16 without a GPU)."""
    pytest.importorskip("trl")
    spec = importlib.util.spec_from_file_location("grpo_browser_cfg", REPO / "recipes" / "grpo_browser.py")
    recipe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "grpo_browser_cfg", recipe)
    spec.loader.exec_module(recipe)
    from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig, recipe.BrowserArguments))
    configs = REPO / "recipes" / "configs"
    _, smoke, _, smoke_env = parser.parse_args_and_config(args=["--config", str(configs / "browser_smoke.yaml")])
    assert smoke_env.tiny_policy and smoke_env.judge == "echo" and smoke.save_strategy == "steps"
    assert smoke.reward_weights == [0.5, 1.0] and smoke.log_completions
    _, gpu, model, gpu_env = parser.parse_args_and_config(
        args=["--config", str(configs / "browser_gpu.yaml"), "--bf16", "false", "--use_cpu", "true"])
    assert gpu.use_vllm and gpu.vllm_mode == "server" and gpu.vllm_server_port == 8001
    assert gpu_env.judge == "url" and gpu_env.judge_url.endswith("/v1") and model.model_name_or_path
    assert gpu.save_strategy == "steps" and gpu.multi_objective_aggregation == "normalize_then_sum"
