"""A free loopback port, for servers the tests start as processes of their own (no other
dependency, so the benches' PostgreSQL helper can use it too)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
