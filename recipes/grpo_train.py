#!/usr/bin/env python
"""GRPO training of a (vision-language) computer-use policy with Universal Verifier rewards.

The two verifier rewards are separate TRL reward functions, so TRL logs each one
(`rewards/uv_process/mean`, `rewards/uv_outcome/mean`) and combines them with `reward_weights`
(process, outcome; default here 0.5, 1.0) either after summing (`multi_objective_aggregation:
sum_then_normalize`, TRL's default) or after per-reward group normalisation (`normalize_then_sum`,
GDPO-style: a sparse 0/1 outcome does not drown the dense process score). Both rewards share one
verification per rollout and one rubric per task.

Same form as the other GRPO recipes: TRL's `TrlParser` over `ScriptArguments`, `GRPOConfig`,
`ModelConfig` and this recipe's `TrainArguments`, from a YAML `--config` and/or flags (flags win).
Serve a judge first (see serving/), then for example::

    accelerate launch recipes/grpo_train.py --config recipes/configs/train.yaml \\
        --model_name_or_path Qwen/Qwen2.5-VL-3B-Instruct --dataset_name my_tasks.jsonl \\
        --judge_url http://judge-host:8010/v1 --judge_model judge --output_dir runs/uv-grpo

The dataset (`dataset_name`: a hub name or a local .jsonl/.json/.csv/.parquet file; default a small
built-in set of web tasks) needs a conversational `prompt` column (the task, optionally with the
initial screenshot as an image part, or an `image`/`images` column for VLMs) and optionally
`task_id`. How a rollout's actions and screenshots reach the rewards (tool calls with image tool
results, `rollout_func` fields, or `environments`) is described in reward/README.md.

CPU smoke test (no downloads; a tiny random VLM policy built in code), against any judge URL, e.g.
the schema-echo judge (schema-valid, meaningless answers) or a tiny vLLM judge::

    python -m reward.echo_judge --port 8011 &       # loopback only; requires $CUA_JUDGE_API_KEY if set
    python recipes/grpo_train.py --config recipes/configs/train_smoke.yaml \\
        --judge_url http://127.0.0.1:8011/v1 --judge_model echo
    python recipes/grpo_train.py --config recipes/configs/train_smoke.yaml --scripted_judge --max_steps 2
"""
from __future__ import annotations

import json
import logging
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from reward.model_card import card_dataset  # after the path set-up above
from reward.trl_recipe import eval_split, evaluates, model_setup

log = logging.getLogger("grpo_train")

#: TRL 1.x still uses transformers' pre-v6 `gradient_checkpointing*` names (its GRPOConfig turns the
#: option on by default and the trainer toggles it every step), and transformers 5 warns on each use:
#: hundreds of identical FutureWarnings from library code we cannot change. Only those are silenced;
#: every other warning, ours included, still shows.
DEPRECATED_NAMES = r"`(is_)?gradient_checkpointing(_enable|_disable|_kwargs)?` is deprecated and will be removed in v6"
#: reward_weights (uv_process, uv_outcome) when the run gives none
DEFAULT_WEIGHTS = (0.5, 1.0)
NO_TEST_SPLIT = ("eval_strategy needs a dataset_name with a `dataset_test_split` split (a hub dataset, or a folder "
                 "holding train.jsonl and test.jsonl): the built-in tasks and a single file have none")


@dataclass
class TrainArguments:
    """The policy shortcut, the judge and the built-in tasks (the rest is TRL's own GRPOConfig /
    ModelConfig / ScriptArguments)."""

    tiny: bool = field(default=False, metadata={
        "help": "build a tiny random VLM policy (LLaVA) in code instead of model_name_or_path: CPU smoke test"})
    tiny_text: bool = field(default=False, metadata={"help": "same with a text-only tiny policy"})
    judge_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible judge base URL(s), comma-separated (default $CUA_JUDGE_URL)"})
    judge_model: str | None = field(default=None, metadata={"help": "judge model name as served ($CUA_JUDGE_MODEL)"})
    verifier_config: str | None = field(default=None, metadata={
        "help": "JSON settings file (format of $CUA_VERIFIER_CONFIG)"})
    scripted_judge: bool = field(default=False, metadata={
        "help": "answer every judge call from verifier.testing.ScriptedJudge (plumbing check only)"})
    max_concurrency: int = field(default=16, metadata={"help": "rollouts verified at once"})
    n_tasks: int = field(default=4, metadata={"help": "built-in tasks when no dataset_name is given"})
    no_save: bool = field(default=False, metadata={
        "help": "no checkpoints and no final model (plumbing checks)"})


def parse(argv: list[str] | None = None) -> tuple[Any, Any, Any, TrainArguments]:
    """(ScriptArguments, GRPOConfig, ModelConfig, TrainArguments), with the recipe's defaults
    applied to the GRPOConfig: `reward_weights` [0.5, 1.0] (process, outcome) unless given, no
    checkpoints with `no_save`."""
    from transformers.trainer_utils import SaveStrategy
    from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig, TrainArguments))
    script_args, training_args, model_args, args = parser.parse_args_and_config(args=argv)
    if training_args.reward_weights is None:  # TRL's default weighs both alike: the outcome counts more here
        training_args.reward_weights = list(DEFAULT_WEIGHTS)
    if args.no_save:
        training_args.save_strategy = SaveStrategy.NO
    if not (model_args.model_name_or_path or args.tiny or args.tiny_text):
        parser.error("give --model_name_or_path, --tiny or --tiny_text")
    if evaluates(training_args) and (not script_args.dataset_name or Path(script_args.dataset_name).is_file()):
        parser.error(NO_TEST_SPLIT)
    return script_args, training_args, model_args, args


def build_rewards(args: TrainArguments) -> Any:
    """The process and outcome rewards, sharing one settings object (so one session and cache)."""
    from reward import RewardSettings, make_uv_rewards
    from verifier.settings import read_config_file, split_urls

    data: dict[str, Any] = read_config_file(args.verifier_config) if args.verifier_config else {}
    data["max_concurrency"] = args.max_concurrency
    if args.scripted_judge:
        data["judge_factory"] = "verifier.testing.ScriptedJudge"
    judge = dict(data.pop("judge", None) or {})
    if args.judge_url:
        judge["base_urls"] = split_urls(args.judge_url)
    if args.judge_model:
        judge["model"] = args.judge_model
    return make_uv_rewards(RewardSettings.from_env(judge=judge, **data))


def load_prompts(args: TrainArguments, script_args: Any) -> Any:
    from reward.testing import tiny_cua_dataset

    if not script_args.dataset_name:  # built-in demo tasks; with images unless the policy is text-only
        return tiny_cua_dataset(n_tasks=args.n_tasks, with_images=not args.tiny_text)
    import datasets

    path = Path(script_args.dataset_name)
    if path.is_file():
        kind = {".parquet": "parquet", ".csv": "csv"}.get(path.suffix.lower(), "json")
        return datasets.load_dataset(kind, data_files=str(path), split="train")
    return load_split(script_args, script_args.dataset_train_split)


def load_split(script_args: Any, split: str) -> Any:
    import datasets

    return datasets.load_dataset(script_args.dataset_name, name=script_args.dataset_config, split=split)


def summary_line(trainer: Any) -> dict[str, Any] | None:
    """Both rewards, their failure rates and the judge cost (`uv/...`) of the last logged step."""
    last = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    if not last:
        return None
    keys = ("rewards/uv_process/mean", "rewards/uv_outcome/mean", "reward",
            "uv_process/failure_rate", "uv_outcome/failure_rate")
    summary = {k: last[-1].get(k) for k in keys}
    summary.update({k: v for k, v in last[-1].items() if k.startswith("uv/")})
    return summary


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=DEPRECATED_NAMES, category=FutureWarning)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    script_args, training_args, model_args, args = parse(argv)
    from trl import GRPOTrainer, get_peft_config

    from reward.testing import build_tiny_policy, build_tiny_vlm_policy

    rewards = build_rewards(args)
    if args.tiny or args.tiny_text:
        build = build_tiny_policy if args.tiny_text else build_tiny_vlm_policy
        model = str(build(Path(training_args.output_dir) / ("tiny-text" if args.tiny_text else "tiny-vlm")))
        setup = {"peft_config": get_peft_config(model_args)}
    else:  # dtype, attention, quantization (load_in_4bit/8bit) and PEFT as TRL's grpo script passes them
        model = model_args.model_name_or_path
        setup = model_setup(training_args, model_args)
    trainer = GRPOTrainer(model=model, reward_funcs=[rewards.process, rewards.outcome], args=training_args,
                          train_dataset=load_prompts(args, script_args),
                          eval_dataset=eval_split(script_args, training_args, lambda split: load_split(script_args, split)),
                          **setup)
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    dataset = card_dataset(script_args.dataset_name)
    if not args.no_save:  # the final model and its card (checkpoints alone leave no model in output_dir)
        trainer.save_model(training_args.output_dir)
        if trainer.accelerator.is_main_process:
            trainer.create_model_card(model_name=Path(training_args.output_dir).name, dataset_name=dataset,
                                      tags=["universal-verifier", "computer-use"])
        if training_args.push_to_hub:
            trainer.push_to_hub(dataset_name=dataset)
    summary = summary_line(trainer)
    if summary is not None and trainer.accelerator.is_main_process:  # one JSON line (tests read the last)
        print(json.dumps(summary))
    if hasattr(trainer, "end"):  # transformers >= 5.18: trackers finished, process group destroyed (last)
        trainer.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
