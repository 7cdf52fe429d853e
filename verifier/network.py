"""Where a server may listen without a key: the one loopback rule every server here applies.

Why in the core: the judge launcher and the reward service (serving/), the schema-echo judge
(verifier.testing) and any local helper refuse to serve off loopback without an API key, and they
must agree on what "loopback" means. It lived in `serving.command`, which made the echo judge (a
test double the core's benchmark builds on) import the serving layer; `serving.command` still
exports it.
"""
from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses: where a server may run without a key."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
