"""What the GRPO recipes build from TRL's own arguments, the way `trl/scripts/grpo.py` builds it.

Why one place: each recipe used to assemble the model's keyword arguments by hand, and all three
dropped `ModelConfig.load_in_4bit` / `load_in_8bit` (parsed, then ignored: a 4-bit run trained a
full-precision model), one of them `--dtype` and `--attn_implementation` too. TRL 1.16's script
puts `revision`, `trust_remote_code`, `attn_implementation` and `dtype` in
`GRPOConfig.model_init_kwargs` (the run's own `model_init_kwargs` win) and hands
`get_quantization_config(model_args)` to the trainer, which adds it to those kwargs and sets the
device map itself (`device_map=None` under multi-GPU or DeepSpeed); `get_kbit_device_map` is gone
from TRL 1.16. The evaluation split follows the same script: `dataset_test_split` of the same
dataset, used when `eval_strategy` is not "no".
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


def model_init_kwargs(training_args: Any, model_args: Any) -> dict[str, Any]:
    """`GRPOConfig.model_init_kwargs` as TRL's grpo script builds them."""
    kwargs: dict[str, Any] = {"revision": model_args.model_revision,
                              "trust_remote_code": training_args.trust_remote_code,
                              "attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
    kwargs.update(training_args.model_init_kwargs or {})
    return kwargs


def model_setup(training_args: Any, model_args: Any) -> dict[str, Any]:
    """For a model named by path: sets `training_args.model_init_kwargs` and returns the trainer's
    `quantization_config` (None unless `load_in_4bit` / `load_in_8bit`) and `peft_config` keywords."""
    from trl import get_peft_config, get_quantization_config

    training_args.model_init_kwargs = model_init_kwargs(training_args, model_args)
    return {"quantization_config": get_quantization_config(model_args), "peft_config": get_peft_config(model_args)}


def evaluates(training_args: Any) -> bool:
    """Whether the run evaluates (`eval_strategy` "steps" or "epoch"), as TRL's script decides it."""
    strategy = training_args.eval_strategy
    return str(getattr(strategy, "value", strategy)) != "no"


def eval_split(script_args: Any, training_args: Any, load: Callable[[str], Any]) -> Any | None:
    """The evaluation rows: `load(dataset_test_split)` when the run evaluates, else None."""
    return load(script_args.dataset_test_split) if evaluates(training_args) else None
