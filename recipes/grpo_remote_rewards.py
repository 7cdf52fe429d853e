#!/usr/bin/env python
"""TRL GRPO on several ranks, all rewards from one cua-verifier reward service.

    cua-verifier serve-reward --judge-url http://127.0.0.1:8010/v1 --model judge &   # prints its URL
    CUA_REWARD_URL=http://127.0.0.1:8012 accelerate launch --num_processes 8 recipes/grpo_remote_rewards.py \\
        --config recipes/configs/remote_rewards.yaml --model_name_or_path MODEL

Same form as the other GRPO recipes: TRL's `TrlParser` over `ScriptArguments`, `GRPOConfig`,
`ModelConfig` and this recipe's own arguments, from a YAML `--config` and/or flags. Every rank sends
its slice of each group to the service, whose single stage cache writes one rubric per task for all
ranks. `reward.remote.uv_process` / `uv_outcome` keep the names, the `None` semantics and the
logged sub-metrics of the in-process rewards.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from reward.trl_recipe import eval_split, evaluates, model_setup  # after the path set-up above


@dataclass
class RemoteArguments:
    """Where the reward service is and the built-in task count (the rest is TRL's own)."""

    reward_url: str | None = field(default=None, metadata={"help": "reward service URL (default $CUA_REWARD_URL)"})
    reward_api_key_env: str = field(default="CUA_REWARD_API_KEY", metadata={"help": "env var holding the key"})
    n_tasks: int = field(default=4, metadata={"help": "built-in tasks when no dataset_name is given"})


def parse(argv: list[str] | None = None) -> tuple[Any, Any, Any, RemoteArguments]:
    from trl import GRPOConfig, ModelConfig, ScriptArguments, TrlParser

    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig, RemoteArguments))
    script_args, training_args, model_args, args = parser.parse_args_and_config(args=argv)
    if evaluates(training_args) and not script_args.dataset_name:
        parser.error("eval_strategy needs a dataset_name with a `dataset_test_split` split (a hub dataset, or a "
                     "folder holding train.jsonl and test.jsonl): the built-in tasks have none")
    return script_args, training_args, model_args, args


def main(argv: list[str] | None = None) -> None:
    import datasets
    from trl import GRPOTrainer

    from reward.remote import make_remote_rewards
    from reward.testing import tiny_cua_dataset

    script_args, training_args, model_args, args = parse(argv)
    r = make_remote_rewards(args.reward_url or os.environ.get("CUA_REWARD_URL"), api_key_env=args.reward_api_key_env)
    def load(split: str) -> Any:
        return datasets.load_dataset(script_args.dataset_name, name=script_args.dataset_config, split=split)

    dataset = load(script_args.dataset_train_split) if script_args.dataset_name else tiny_cua_dataset(n_tasks=args.n_tasks)
    # dtype, attention, quantization (load_in_4bit/8bit) and PEFT as TRL's grpo script passes them
    trainer = GRPOTrainer(model=model_args.model_name_or_path, reward_funcs=[r.process, r.outcome],
                          args=training_args, train_dataset=dataset,
                          eval_dataset=eval_split(script_args, training_args, load),
                          **model_setup(training_args, model_args))
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    if training_args.push_to_hub:
        trainer.push_to_hub(dataset_name=script_args.dataset_name)
    if hasattr(trainer, "end"):  # transformers >= 5.18: trackers finished, process group destroyed
        trainer.end()


if __name__ == "__main__":
    main()
