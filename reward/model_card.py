"""What the model card of a policy trained with these rewards may say about its training data.

Why: TRL writes the trainer's `dataset_name` into the card's `datasets` metadata and links
``huggingface.co/datasets/<name>``. A local file or folder, or the built-in task list (no name at
all), is no hub dataset: a path there is invalid metadata that the Hub refuses on push, and a
dead link on the card. Both GRPO recipes (`recipes/grpo_train.py`, `recipes/grpo_browser.py`)
pass their dataset through `card_dataset` before the card is written or pushed.
"""
from __future__ import annotations

from pathlib import Path


def card_dataset(name: str | None) -> str | None:
    """The dataset the model card may name: a hub id only. TRL writes it into the card's `datasets`
    metadata and links `huggingface.co/datasets/<name>`; a local file or the built-in task list
    (None) is no hub dataset, and a path there is invalid metadata that the Hub rejects on push."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not name or Path(name).exists():
        return None
    try:
        validate_repo_id(name)
    except HFValidationError:
        return None
    return name
