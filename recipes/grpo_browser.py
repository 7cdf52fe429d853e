#!/usr/bin/env python
"""GRPO for a computer-use agent acting in a real browser, rewarded by the Universal Verifier.

    python recipes/grpo_browser.py --config recipes/configs/browser_smoke.yaml     # CPU, one step
    accelerate launch recipes/grpo_browser.py --config recipes/configs/browser_gpu.yaml

The policy acts through `browser_env.BrowserEnv` (TRL's `environment_factory`): Debian's Chromium
on the project's loopback task sites; every tool returns the new screenshot as an image part.
Each episode is recorded as a native trajectory (screenshots before/after every action), which
the two verifier rewards (`uv_process`, `uv_outcome`, combined by `reward_weights`) read from
`environments`; the judge is a separate OpenAI-compatible endpoint (`judge_url`, or `judge:
echo` for the loopback schema-echo judge in smoke runs). Policy generation is TRL's: plain
transformers, or vLLM (`use_vllm: true`, `vllm_mode: server` against `trl vllm-serve` on its own
GPU, or `colocate` inside the trainer processes). Checkpoints follow `save_strategy`; the final
model and its model card are written to `output_dir`.

Prints one JSON line at the end: rollouts, actions and screenshots per trajectory, reward mean,
the rewards' None rate and the judge cost.

TRL warns at start that `environment_factory` is experimental (its API may change between TRL
releases; this recipe is tested on TRL 1.16 only). The warning is left on purpose; set
`TRL_EXPERIMENTAL_SILENCE=1` to hide it.

Evaluation follows TRL's grpo script: with `eval_strategy` "steps" or "epoch", the
`dataset_test_split` of `dataset_name` (a hub dataset or a folder of train/test files), or the
built-in tasks named by `eval_tasks`, are rolled out and scored like the training ones.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from reward.model_card import card_dataset  # after the path set-up above
from reward.trl_recipe import eval_split, evaluates, model_setup


@dataclass
class BrowserArguments:
    """The environment, the tasks and the judge (the rest is TRL's own GRPOConfig / ModelConfig)."""

    tasks: list[str] = field(default_factory=list, metadata={"help": "browser_env task ids (default: all)"})
    task_repeat: int = field(default=1, metadata={"help": "times each task appears in the dataset"})
    eval_tasks: list[str] = field(default_factory=list, metadata={
        "help": "browser_env task ids evaluated when eval_strategy is not 'no' and no dataset_name is given"})
    tiny_policy: bool = field(default=False, metadata={
        "help": "build the tiny CPU policy in code (browser_env.tiny_policy) instead of model_name_or_path"})
    judge: str = field(default="url", metadata={
        "help": "url: the judge at judge_url; echo: start the loopback schema-echo judge; scripted: in-process"})
    judge_url: str | None = field(default=None, metadata={"help": "OpenAI-compatible judge URL(s), comma-separated"})
    judge_model: str | None = field(default=None, metadata={"help": "judge model name as served"})
    verifier_config: str | None = field(default=None, metadata={"help": "JSON RewardSettings file"})
    max_env_steps: int = field(default=12, metadata={"help": "actions per episode"})
    policy_max_side: int | None = field(default=448, metadata={
        "help": "longer side (px) of the screenshots the policy sees; the judge always gets full size"})
    text_tokens_per_step: int = field(default=250, metadata={
        "help": "estimated tokens of one step's action and page text, for the budget printed at start"})
    viewport_width: int = 960
    viewport_height: int = 600
    action_timeout_s: float = 5.0
    page_load_timeout_s: float = 10.0


def build_rewards(args: BrowserArguments, judge_url: str | None) -> Any:
    from reward import RewardSettings, make_uv_rewards
    from verifier.settings import read_config_file, split_urls

    data: dict[str, Any] = read_config_file(args.verifier_config) if args.verifier_config else {}
    judge = dict(data.pop("judge", None) or {})
    if args.judge == "scripted":
        data["judge_factory"] = "verifier.testing.ScriptedJudge"
    if judge_url:
        judge["base_urls"] = split_urls(judge_url)
    if args.judge_model:
        judge["model"] = args.judge_model
    return make_uv_rewards(RewardSettings.from_env(judge=judge, **data))


def build_dataset(args: BrowserArguments, script_args: Any) -> Any:
    import datasets

    from browser_env import task_rows

    if script_args.dataset_name:  # rows need `prompt` and `task_id` (a browser_env task)
        return datasets.load_dataset(script_args.dataset_name, name=script_args.dataset_config,
                                     split=script_args.dataset_train_split)
    return datasets.Dataset.from_list(task_rows(args.tasks or None, repeat=args.task_repeat))


def build_eval_dataset(args: BrowserArguments, script_args: Any, training_args: Any) -> Any | None:
    """TRL's convention: `dataset_test_split` of `dataset_name` when the run evaluates; with the
    built-in tasks, the `eval_tasks`."""
    import datasets

    from browser_env import task_rows

    def load(split: str) -> Any:
        if script_args.dataset_name:
            return datasets.load_dataset(script_args.dataset_name, name=script_args.dataset_config, split=split)
        return datasets.Dataset.from_list(task_rows(args.eval_tasks))

    return eval_split(script_args, training_args, load)


def image_tokens(width: int, height: int, max_side: int | None, patch: int = 28) -> int:
    """Tokens one screenshot costs a Qwen2-VL-style policy (one token per 28x28 merged patch)."""
    scale = min(1.0, max_side / max(width, height)) if max_side else 1.0
    w, h = max(1, round(width * scale)), max(1, round(height * scale))
    return -(-w // patch) * -(-h // patch)


def episode_budget(args: BrowserArguments, max_completion_length: int) -> dict[str, Any]:
    """Whether a full episode's screenshots and text fit the completion budget (printed at start)."""
    per_step = image_tokens(args.viewport_width, args.viewport_height, args.policy_max_side) + args.text_tokens_per_step
    need = per_step * args.max_env_steps
    return {"image_tokens_per_step": per_step - args.text_tokens_per_step, "tokens_per_step": per_step,
            "steps": args.max_env_steps, "episode_tokens": need, "max_completion_length": max_completion_length,
            "fits": need <= max_completion_length,
            "steps_that_fit": max_completion_length // per_step}


def report_budget(args: BrowserArguments, max_completion_length: int) -> dict[str, Any]:
    """Print the episode budget at start (stdout), and a warning (stderr) when a full episode does
    not fit: the rollout would be cut mid-episode, silently, at every step."""
    budget = episode_budget(args, max_completion_length)
    print("episode budget:", json.dumps(budget), flush=True)
    if not budget["fits"]:
        print(f"warning: only {budget['steps_that_fit']} of {args.max_env_steps} steps fit max_completion_length; "
              "lower policy_max_side or raise max_completion_length", file=sys.stderr)
    return budget


def summarise(trainer: Any, episodes: list[dict[str, Any]]) -> dict[str, Any]:
    logs = [h for h in trainer.state.log_history if "reward" in h]
    last = logs[-1] if logs else {}
    actions = [e["actions"] for e in episodes]
    shots = [e["screenshots"] for e in episodes]
    summary = {"rollouts": len(episodes), "actions_per_rollout": actions, "screenshots_per_trajectory": shots,
               "rollouts_without_action": sum(a == 0 for a in actions),
               "episode_errors": sum(e["episode_error"] is not None for e in episodes),
               "reward_mean": last.get("reward"), "tool_calls_per_rollout": last.get("tools/call_frequency")}
    for name in ("uv_process", "uv_outcome"):
        summary[f"{name}_mean"] = last.get(f"rewards/{name}/mean")
        summary[f"{name}_none_rate"] = last.get(f"{name}/failure_rate")
    summary.update({k: v for k, v in last.items() if k.startswith("uv/")})
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import functools

    from transformers import TrainerCallback
    from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser, get_peft_config

    from browser_env import BrowserEnv, EnvConfig, close_all
    from browser_env.training import BrowserGRPOTrainer, episode_summary

    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig, BrowserArguments))
    script_args, training_args, model_args, args = parser.parse_args_and_config(args=argv)
    if evaluates(training_args) and not (script_args.dataset_name or args.eval_tasks):
        parser.error("eval_strategy needs eval_tasks (built-in task ids) or a dataset_name with a dataset_test_split")
    echo = None
    judge_url = args.judge_url
    if args.judge == "echo":
        from reward.echo_judge import EchoJudgeServer

        echo = EchoJudgeServer().start()
        judge_url, args.judge_model = echo.url, args.judge_model or "echo"
    rewards = build_rewards(args, judge_url)
    report_budget(args, training_args.max_completion_length)
    env_config = EnvConfig(max_steps=args.max_env_steps, viewport_width=args.viewport_width,
                           viewport_height=args.viewport_height, action_timeout_s=args.action_timeout_s,
                           page_load_timeout_s=args.page_load_timeout_s, policy_max_side=args.policy_max_side)
    processing_class = None
    if args.tiny_policy:
        from browser_env.tiny_policy import build_tiny_browser_policy, load_tiny_browser_policy

        model, processing_class = load_tiny_browser_policy(
            build_tiny_browser_policy(Path(training_args.output_dir) / "tiny-policy"))
        setup = {"peft_config": get_peft_config(model_args)}
    else:  # dtype, attention, quantization (load_in_4bit/8bit) and PEFT as TRL's grpo script passes them
        model = model_args.model_name_or_path
        setup = model_setup(training_args, model_args)
    episodes: list[dict[str, Any]] = []

    class EpisodeLog(TrainerCallback):
        """Collects each generation batch's episodes once (the envs are reused across batches)."""

        seen: int | None = None

        def on_step_end(self, _args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            envs = trainer.environments
            if envs and id(envs) != self.seen:
                self.seen = id(envs)
                episodes.extend(episode_summary(envs)["episodes"])

    trainer = BrowserGRPOTrainer(
        model=model, processing_class=processing_class, reward_funcs=[rewards.process, rewards.outcome],
        args=training_args, train_dataset=build_dataset(args, script_args),
        eval_dataset=build_eval_dataset(args, script_args, training_args),
        environment_factory=functools.partial(BrowserEnv, env_config), callbacks=[EpisodeLog()], **setup)
    try:
        trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model(training_args.output_dir)
        if trainer.accelerator.is_main_process:
            # only a hub dataset is named (reward.model_card): not the built-in tasks, not a local path
            trainer.create_model_card(model_name=Path(training_args.output_dir).name,
                                      dataset_name=card_dataset(script_args.dataset_name),
                                      tags=["computer-use", "browser", "universal-verifier", "browser_env-tasks"])
        if training_args.push_to_hub:
            trainer.push_to_hub(dataset_name=card_dataset(script_args.dataset_name))
        if hasattr(trainer, "end"):  # transformers >= 5.18: trackers finished, process group destroyed
            trainer.end()
    finally:
        close_all()
        if echo is not None:
            echo.stop()
    summary = summarise(trainer, episodes)
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
