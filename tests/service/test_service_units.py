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
