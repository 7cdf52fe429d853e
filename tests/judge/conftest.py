"""Fixtures for the judge tests: scripted loopback servers and a fast judge config."""
from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from judge_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def server2() -> Iterator[ScriptedServer]:
    srv = ScriptedServer().start()
    yield srv
    srv.stop()


@pytest.fixture
def unused_url() -> str:
    """A loopback port nobody listens on (bound then released): connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
