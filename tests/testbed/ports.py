"""Free loopback port helper.

The OS picks the port (bind to port 0), so two test beds started at once
don't collide.  The port is released before the caller binds it, which is
racy in theory; callers that start servers retry on bind failure.
"""
from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port on `host` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def accepts_connections(port: int, host: str = LOOPBACK, timeout: float = 0.5) -> bool:
    """True if something listens on host:port right now."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False
