"""Pure parts of the reward service and its clients (no process, no network)."""
from __future__ import annotations

import pickle

import pytest

from reward.remote import RemoteOutcomeReward, RemoteSettings, make_remote_rewards
from serving.reward_service.config import ServiceConfig
from serving.reward_service.queue import AdmissionQueue
from verifier.errors import ConfigError, ScreenshotError


def test_admission_is_all_or_nothing_and_bounded():
    q = AdmissionQueue(3, concurrency=2)
    assert q.try_admit(2) and not q.try_admit(2) and q.depth == 2  # a batch of 2 does not fit: none admitted
    assert q.try_admit(1) and q.depth == 3 == q.high_water and q.rejected == 1
    q.release(3)
    assert q.depth == 0 and q.retry_after() >= 1


def test_off_loopback_without_a_key_refuses_to_start(monkeypatch):
    monkeypatch.delenv("SR_UNIT_KEY", raising=False)
    with pytest.raises(ConfigError, match="API key"):
        ServiceConfig(host="0.0.0.0", api_key_env="SR_UNIT_KEY").check()
    ServiceConfig(host="127.0.0.1", api_key_env="SR_UNIT_KEY").check()  # loopback: fine without
    monkeypatch.setenv("SR_UNIT_KEY", "k")
    ServiceConfig(host="0.0.0.0", api_key_env="SR_UNIT_KEY").check()
    assert ServiceConfig(deadline_s=10, max_deadline_s=60).deadline(None) == 10
    assert ServiceConfig(deadline_s=10, max_deadline_s=60).deadline(600) == 60


def test_media_paths_are_confined_to_the_root(tmp_path):
    pytest.importorskip("fastapi")
    from serving.reward_service.core import confine

    root = (tmp_path / "media").resolve()
    root.mkdir()
    (root / "a.png").write_bytes(b"x")
    (tmp_path / "out.png").write_bytes(b"x")
    (root / "link.png").symlink_to(tmp_path / "out.png")
    assert confine("a.png", root, field="f") == str(root / "a.png")
    assert confine(str(root / "a.png"), root, field="f") == str(root / "a.png")
    for bad in ("../out.png", str(tmp_path / "out.png"), "link.png"):
        with pytest.raises(ScreenshotError, match="outside"):
            confine(bad, root, field="f")
    with pytest.raises(ScreenshotError, match="data URL"):
        confine("a.png", None, field="f")


def test_remote_rewards_pickle_with_their_settings_and_names(monkeypatch):
    monkeypatch.setenv("CUA_REWARD_URL", "http://10.1.2.3:9000")
    r = make_remote_rewards(timeout_s=5)
    clone = pickle.loads(pickle.dumps(r.outcome))
    assert isinstance(clone, RemoteOutcomeReward) and clone.__name__ == "uv_outcome"
    assert clone.remote == RemoteSettings(url="http://10.1.2.3:9000", timeout_s=5)
    assert clone.session.settings.url == "http://10.1.2.3:9000"


def test_remote_rewards_are_none_at_the_batch_deadline_when_the_service_hangs():
    """A reward service that accepts and never answers cannot stall a training step: the remote
    rewards honour `batch_deadline_s` like the in-process ones (None, reason JudgeDeadlineError)."""
    import asyncio
    import socket
    import time

    from service_helpers import trajectory

    from reward.remote import make_remote_rewards

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)  # accepts (the kernel completes the handshake) and never answers
    try:
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        r = make_remote_rewards(url, batch_deadline_s=1.0, timeout_s=60.0)
        extra: dict = {}
        start = time.monotonic()
        got = asyncio.run(r.outcome([["p"]] * 2, ["c"] * 2, trajectory=[trajectory(1), trajectory(2)],
                                    log_extra=extra.__setitem__))
        took = time.monotonic() - start
    finally:
        srv.close()
    assert got == [None, None]
    assert 0.9 <= took < 5.0, took
    assert all(v.startswith("JudgeDeadlineError") for v in extra["uv_outcome/unscored_reason"])


def _service(queue_size: int):
    pytest.importorskip("fastapi")
    from serving.reward_service.core import RewardService
    from verifier.settings import RewardSettings

    settings = RewardSettings(judge={"base_urls": ["http://127.0.0.1:9/v1"], "model": "unused"})
    return RewardService(settings, ServiceConfig(queue_size=queue_size))


def test_a_record_that_fails_to_parse_frees_its_slot():
    """Issue 20 S7: more bad records than the queue holds, one after the other, never fill it."""
    import asyncio

    svc = _service(queue_size=2)

    async def send_bad(n):
        return [await svc.verify_records([{"task": {"id": "x"}}], None) for _ in range(n)]

    answers = asyncio.run(send_bad(5))
    assert [a[0].http_status for a in answers] == [422] * 5
    assert "task.instruction" in (answers[0][0].reason or "")
    assert svc.queue.depth == 0


@pytest.mark.parametrize("raised, status", [(ValueError("embedded null byte"), 422),
                                            (OSError(36, "File name too long"), 422),
                                            (RuntimeError("a bug"), 500)])
def test_any_parse_failure_frees_its_slot_and_answers_its_own_item(monkeypatch, raised, status):
    """Issue 20 §1: whatever parsing raises, the slot is released (`finally`) and a batch answers per
    item: input the checks did not name is a 422, anything else a 500 for that item only."""
    import asyncio

    from serving.reward_service import core

    real = core.parse_trajectory

    def parse(record, root, *, where, decoded=None):
        if record.get("poison"):
            raise raised
        return real(record, root, where=where, decoded=decoded)

    monkeypatch.setattr(core, "parse_trajectory", parse)
    svc = _service(queue_size=3)
    good_but_unjudgeable = {"task": {"id": "t"}}  # fails its own way (422), parsed for real
    items = asyncio.run(svc.verify_records([{"poison": 1}, good_but_unjudgeable, {"poison": 1}], None))
    assert [i.http_status for i in items] == [status, 422, status]
    assert svc.queue.depth == 0
    for _ in range(4):  # over the queue size: nothing leaked
        (item,) = asyncio.run(svc.verify_records([{"poison": 1}], None))
        assert item.http_status == status
    assert svc.queue.depth == 0


def test_an_api_key_of_spaces_is_no_key(monkeypatch):
    """Issue 20 §4: a blank key used to count as a key (and let the service bind off loopback)."""
    monkeypatch.setenv("SR_UNIT_KEY", "   ")
    cfg = ServiceConfig(host="0.0.0.0", api_key_env="SR_UNIT_KEY")
    assert cfg.api_key() is None
    with pytest.raises(ConfigError, match="API key"):
        cfg.check()
    monkeypatch.setenv("SR_UNIT_KEY", " k3y ")
    assert ServiceConfig(api_key_env="SR_UNIT_KEY").api_key() == "k3y"


def test_serve_reward_offers_no_option_that_would_do_nothing():
    """Issue 20 §4: --no-progress and --allow-outside-screenshots were accepted and ignored (paths are
    governed by --media-root), and --help ended with `score`'s exit statuses."""
    from cua_verifier.cli import build_parser

    parser = build_parser()
    for flag in ("--no-progress", "--allow-outside-screenshots"):
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(["serve-reward", flag])
        assert exc.value.code == 2
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    text = sub["serve-reward"].format_help()
    assert "exit status" not in text.lower() and "--media-root" in text
    assert "exit status" in sub["score"].format_help()


def test_verl_unscored_rollouts_raise_by_default(monkeypatch):
    """Issue 20 W4: without CUA_VERL_ON_FAILURE an unscored rollout raises (asks the service for
    on_failure=error); a default of "0" would turn every outage into a reward of 0.0 unnoticed."""
    from reward import verl

    monkeypatch.delenv("CUA_VERL_ON_FAILURE", raising=False)
    sent: dict = {}
    monkeypatch.setattr(verl, "post_openrlhf", lambda body, params, url=None: sent.update(params) or
                        {"rewards": [0.5], "extra_logs": {"uv_unscored": [0.0]}})
    verl.compute_score("cua", "answer", "find the hours")
    assert sent["on_failure"] == "error"
