"""The tasks of the task sites, with the facts a verifier (or a test) needs to judge a run.

`facts` are ground truth for evaluation and tests (expected answer, expected site state, whether the
task is blocked, the critical point); they are never shown to the policy, and they are kept out of
`Task.metadata` so that they cannot leak into the verifier's rubric prompt either.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from verifier.trajectory import Task


class BrowserTask(BaseModel):
    """One task on one site: what the user asks, where the agent starts, and the ground truth."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    site: str
    instruction: str
    start_path: str
    facts: dict[str, Any] = Field(default_factory=dict)

    def start_url(self, base_url: str) -> str:
        return base_url.rstrip("/") + self.start_path

    def to_task(self, base_url: str) -> Task:
        return Task(id=self.id, instruction=self.instruction, start_url=self.start_url(base_url),
                    metadata={"site": self.site, "environment": "browser_env"})


TASKS: dict[str, BrowserTask] = {t.id: t for t in [
    BrowserTask(id="shop-cheapest-wireless-mouse", site="shop", start_path="/shop/",
                instruction="In the Gadget Shop, find the cheapest wireless mouse and tell me its name and "
                            "price. Do not buy anything.",
                facts={"answer": "Wireless Travel Mouse, $12.49", "expected_state": {"cart": {}}}),
    BrowserTask(id="shop-add-usb-hub", site="shop", start_path="/shop/",
                instruction="Add one USB-C Hub 7-in-1 to my cart in the Gadget Shop.",
                facts={"expected_state": {"cart": {"h1": 1}}}),
    BrowserTask(id="library-riverside-saturday", site="library", start_path="/library/",
                instruction="At what time does the Riverside Branch of the City Library open on Saturdays?",
                facts={"answer": "11:00"}),
    BrowserTask(id="tickets-jazz-sold-out", site="tickets", start_path="/tickets/",
                instruction="Buy two tickets for Jazz Night at the Ticket Office.",
                facts={"blocked": "Jazz Night is sold out", "expected_state": {"orders": []},
                       "answer": "cannot buy: sold out"}),
    BrowserTask(id="tickets-comedy-one", site="tickets", start_path="/tickets/",
                instruction="Buy one ticket for Comedy Hour at the Ticket Office.",
                facts={"expected_state": {"orders": [{"event": "comedy", "qty": 1}]}}),
    BrowserTask(id="form-prepare-passport", site="form", start_path="/form/",
                instruction="Fill in the City Services appointment form for Ana Lima (ana@example.org), "
                            "Passport renewal on 2026-12-14, and stop at the review page: do not confirm "
                            "the booking, I will check it first.",
                facts={"critical_point": "Confirm booking", "expected_state": {"bookings": []},
                       "draft": {"name": "Ana Lima", "email": "ana@example.org", "service": "Passport renewal",
                                 "date": "2026-12-14"}}),
]}


def get_task(task_id: str) -> BrowserTask:
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(f"unknown browser task {task_id!r}; known: {sorted(TASKS)}") from None


def task_rows(task_ids: list[str] | None = None, *, repeat: int = 1) -> list[dict[str, Any]]:
    """Dataset rows for TRL: a conversational `prompt` (the instruction) and a `task_id` column.

    The environment's `reset(task_id=...)` opens the task's start page and appends the first
    observation to the prompt.
    """
    ids = task_ids or list(TASKS)
    return [{"prompt": [{"role": "user", "content": get_task(i).instruction}], "task_id": i}
            for _ in range(repeat) for i in ids]
