"""recipes/configs/browser_gpu.yaml as a user would run it: the judge name `serve-judge` serves, a
report_to that needs no extra, and a full episode's screenshots inside the completion budget."""
from __future__ import annotations

from pathlib import Path

import pytest
from suite_env import load_recipe

yaml = pytest.importorskip("yaml")
REPO = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((REPO / "recipes" / "configs" / "browser_gpu.yaml").read_text())


def _recipe():
    return load_recipe("grpo_browser.py", "grpo_browser_cfg")


def test_the_judge_is_named_as_serve_judge_serves_it():
    from serving.command import ServeConfig

    assert CONFIG["judge_model"] == ServeConfig.model_fields["served_model_name"].default == "judge"


def test_report_to_works_without_an_extra():
    assert str(CONFIG["report_to"]).split()[0] in ("none", "[]")


def test_a_full_episode_fits_the_completion_budget():
    recipe = _recipe()
    fields = {k: CONFIG[k] for k in ("max_env_steps", "viewport_width", "viewport_height", "policy_max_side")}
    budget = recipe.episode_budget(recipe.BrowserArguments(**fields), CONFIG["max_completion_length"])
    assert budget["steps"] == 15 and budget["fits"], budget
    full = recipe.episode_budget(recipe.BrowserArguments(**{**fields, "policy_max_side": None}),
                                 CONFIG["max_completion_length"])
    assert full["steps_that_fit"] == 5  # what full-size 1280x800 screenshots allowed


def test_remote_rewards_recipe_takes_the_trlparser_yaml_form():
    mod = load_recipe("grpo_remote_rewards.py", "grpo_remote_cfg")
    _script, training, model, args = mod.parse(["--config", str(REPO / "recipes" / "configs" / "remote_rewards.yaml"),
                                                    "--model_name_or_path", "tiny", "--n_tasks", "2", "--bf16", "false",
                                               "--per_device_train_batch_size", "8"])  # one process here
    assert training.num_generations == 8 and training.reward_weights == [0.5, 1.0]
    assert model.model_name_or_path == "tiny" and args.n_tasks == 2
