"""The demo judge never reuses a port another server already listens on."""
import socket

from serving.demo import _free_port


def test_busy_preferred_port_is_replaced_by_a_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        port = _free_port(taken)
        assert port != taken
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))  # really free


def test_free_preferred_port_is_kept():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    assert _free_port(free) == free
