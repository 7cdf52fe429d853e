#!/usr/bin/env python
"""GRPO training of a (vision-language) computer-use policy with Universal Verifier rewards.

The two verifier rewards are separate TRL reward functions, so TRL logs each one
(`rewards/uv_process/mean`, `rewards/uv_outcome/mean`) and combines them either with
`reward_weights` (default `sum_then_normalize`) or per-reward group normalisation
(`--aggregation normalize_then_sum`, GDPO-style: a sparse 0/1 outcome does not drown the dense
process score). Both rewards share one verification per rollout and one rubric per task.

Serve a judge first (see serving/), then for example::

    python recipes/grpo_train.py --model Qwen/Qwen2.5-VL-3B-Instruct --dataset my_tasks.jsonl \\
        --judge-url http://judge-host:8010/v1 --judge-model judge \\
        --process-weight 0.5 --outcome-weight 1.0 --num-generations 8 --output-dir runs/uv-grpo

The dataset needs a conversational `prompt` column (the task, optionally with the initial
screenshot as an image part, or an `image`/`images` column for VLMs) and optionally `task_id`.
How a rollout's actions and screenshots reach the rewards (tool calls with image tool results,
`rollout_func` fields, or `environments`) is described in reward/README.md.

CPU smoke test (no downloads; a tiny random VLM policy built in code, 1-2 steps), against any
judge URL, e.g. the schema-echo judge (schema-valid, meaningless answers) or a tiny vLLM judge::

    python -m reward.echo_judge --port 8011 &       # loopback only; requires $CUA_JUDGE_API_KEY if set
    python recipes/grpo_train.py --tiny --max-steps 1 --max-completion-length 16 \\
        --judge-url http://127.0.0.1:8011/v1 --judge-model echo
    python recipes/grpo_train.py --tiny --max-steps 2 --max-completion-length 16 --scripted-judge
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

log = logging.getLogger("grpo_train")

#: TRL 1.x still uses transformers' pre-v6 `gradient_checkpointing*` names (its GRPOConfig turns the
#: option on by default and the trainer toggles it every step), and transformers 5 warns on each use:
#: hundreds of identical FutureWarnings from library code we cannot change. Only those are silenced;
#: every other warning, ours included, still shows.
DEPRECATED_NAMES = r"`(is_)?gradient_checkpointing(_enable|_disable|_kwargs)?` is deprecated and will be removed in v6"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    g = p.add_argument_group("policy and data")
    g.add_argument("--model", help="policy model id or path (VLM or causal LM)")
    g.add_argument("--tiny", action="store_true",
                   help="build a tiny random VLM policy (LLaVA) in code: CPU smoke test")
    g.add_argument("--tiny-text", action="store_true", help="same with a text-only tiny policy")
    g.add_argument("--dataset", help="prompt dataset: hub name or local .jsonl/.json/.parquet (default: a "
                   "small built-in set of web tasks)")
    g.add_argument("--split", default="train")
    g = p.add_argument_group("judge / verifier (env: CUA_JUDGE_URL, CUA_JUDGE_MODEL, CUA_JUDGE_API_KEY)")
    g.add_argument("--judge-url", help="OpenAI-compatible judge base URL(s), comma-separated")
    g.add_argument("--judge-model", help="judge model name as served")
    g.add_argument("--verifier-config", help="JSON settings file (format of CUA_VERIFIER_CONFIG)")
    g.add_argument("--scripted-judge", action="store_true",
                   help="answer every judge call from verifier.testing.ScriptedJudge (plumbing check only)")
    g.add_argument("--max-concurrency", type=int, default=16, help="rollouts verified at once")
    g = p.add_argument_group("rewards")
    g.add_argument("--process-weight", type=float, default=0.5)
    g.add_argument("--outcome-weight", type=float, default=1.0)
    g.add_argument("--aggregation", default="sum_then_normalize",
                   choices=["sum_then_normalize", "normalize_then_sum"],
                   help="TRL multi_objective_aggregation "
                   "(normalize_then_sum = per-reward group normalisation)")
    g = p.add_argument_group("training")
    g.add_argument("--output-dir", default="runs/uv-grpo")
    g.add_argument("--num-generations", type=int, default=4, help="G rollouts per prompt")
    g.add_argument("--per-device-batch", type=int, help="rollouts per device per step (default: G)")
    g.add_argument("--max-steps", type=int, default=100)
    g.add_argument("--max-completion-length", type=int, default=256)
    g.add_argument("--learning-rate", type=float, default=1e-6)
    g.add_argument("--use-vllm", action="store_true",
                   help="generate with vLLM (colocate) instead of transformers")
    g.add_argument("--max-tool-calling-iterations", type=int, help="TRL tool loop bound (tools/environments)")
    g.add_argument("--report-to", default="none", help="wandb, tensorboard, ... or none")
    g.add_argument("--save-steps", type=int, default=100, help="checkpoint every N steps (and at the end)")
    g.add_argument("--no-save", action="store_true", help="no checkpoints and no final model (plumbing checks)")
    return p.parse_args(argv)


def build_rewards(args: argparse.Namespace):
    """The process and outcome rewards, sharing one settings object (so one session and cache)."""
    from reward import RewardSettings, make_uv_rewards
    from verifier.settings import split_urls

    data = {}
    if args.verifier_config:
        data = json.loads(Path(args.verifier_config).read_text(encoding="utf-8"))
    data["max_concurrency"] = args.max_concurrency
    if args.scripted_judge:
        data["judge_factory"] = "verifier.testing.ScriptedJudge"
    judge = dict(data.pop("judge", None) or {})
    if args.judge_url:
        judge["base_urls"] = split_urls(args.judge_url)
    if args.judge_model:
        judge["model"] = args.judge_model
    return make_uv_rewards(RewardSettings.from_env(judge=judge, **data))


def load_prompts(args: argparse.Namespace):
    from reward.testing import tiny_cua_dataset

    if not args.dataset:  # built-in demo tasks; with images unless the policy is text-only
        return tiny_cua_dataset(n_tasks=4, with_images=not args.tiny_text)
    import datasets

    path = Path(args.dataset)
    if path.is_file():
        kind = {".parquet": "parquet", ".csv": "csv"}.get(path.suffix.lower(), "json")
        return datasets.load_dataset(kind, data_files=str(path), split="train")
    return datasets.load_dataset(args.dataset, split=args.split)


def build_config(args: argparse.Namespace, *, tiny: bool):
    """The GRPOConfig: the smoke defaults (small, CPU) overridden for what this run is.

    Checkpoints are on (`save_strategy="steps"`) unless --no-save: the smoke defaults say "no",
    which a real run must not inherit.
    """
    from reward.testing import grpo_smoke_config

    g = args.num_generations
    overrides = {"learning_rate": args.learning_rate, "max_completion_length": args.max_completion_length,
                 "per_device_train_batch_size": args.per_device_batch or g, "report_to": args.report_to,
                 "use_vllm": args.use_vllm, "log_completions": True, "num_completions_to_print": 0,
                 "save_strategy": "no" if args.no_save else "steps", "save_steps": args.save_steps}
    if args.max_tool_calling_iterations is not None:
        overrides["max_tool_calling_iterations"] = args.max_tool_calling_iterations
    if not tiny:  # the smoke defaults force CPU; real runs use whatever accelerator is there
        overrides["use_cpu"] = False
        overrides["bf16"] = os.environ.get("GRPO_BF16", "1") == "1"
    return grpo_smoke_config(args.output_dir, num_generations=g, max_steps=args.max_steps,
                             reward_weights=[args.process_weight, args.outcome_weight],
                             multi_objective_aggregation=args.aggregation, **overrides)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    warnings.filterwarnings("ignore", message=DEPRECATED_NAMES, category=FutureWarning)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    tiny = args.tiny or args.tiny_text
    if not args.model and not tiny:
        print("error: give --model, --tiny or --tiny-text", file=sys.stderr)
        return 2
    from trl import GRPOTrainer

    from reward.testing import build_tiny_policy, build_tiny_vlm_policy

    rewards = build_rewards(args)
    if tiny:
        build = build_tiny_policy if args.tiny_text else build_tiny_vlm_policy
        model = str(build(Path(args.output_dir) / ("tiny-text" if args.tiny_text else "tiny-vlm")))
    else:
        model = args.model
    config = build_config(args, tiny=tiny)
    trainer = GRPOTrainer(model=model, reward_funcs=[rewards.process, rewards.outcome], args=config,
                          train_dataset=load_prompts(args))
    trainer.train()
    if not args.no_save:  # the final model and its card (the smoke config alone saved nothing)
        trainer.save_model(args.output_dir)
        trainer.create_model_card(model_name=Path(args.output_dir).name, tags=["universal-verifier"])
    last = [h for h in trainer.state.log_history if "rewards/uv_outcome/mean" in h]
    if last:  # one JSON line: both rewards, their failure rates and the judge cost (`uv/...`)
        keys = ("rewards/uv_process/mean", "rewards/uv_outcome/mean", "reward",
                "uv_process/failure_rate", "uv_outcome/failure_rate")
        summary = {k: last[-1].get(k) for k in keys}
        summary.update({k: v for k, v in last[-1].items() if k.startswith("uv/")})
        print(json.dumps(summary))
    if hasattr(trainer, "end"):  # transformers >= 5.18: trackers finished, process group destroyed (last)
        trainer.end()
    return 0


if __name__ == "__main__":
    sys.exit(main())
