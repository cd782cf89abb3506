"""A port in front of the test sshd that drops chosen connections.

A dropped connection is closed once the client's version line is read:
ssh then fails as a connection (exit status 255, "Connection closed by
remote host"), as it does when sshd's MaxStartups turns it away, and the
close is a plain end of stream, never a reset, whatever the timing.
Every other connection is passed on to sshd.
"""
from __future__ import annotations

import contextlib
import socket
import threading
from typing import Callable


class DroppingPort:
    """Listens on loopback; connection number *n* (1 for the first) is
    dropped when ``drop(n)`` is true, passed on to *server* otherwise."""

    def __init__(self, server, drop: Callable[[int], bool]) -> None:
        self.listener = socket.create_server((server.host, 0))
        self.port = self.listener.getsockname()[1]
        self.sshd = (server.host, server.port)
        self.drop = drop
        self.accepted = 0
        self.dropped = 0
        self.sockets: list[socket.socket] = []  # closed with the port
        threading.Thread(target=self._serve, daemon=True).start()

    def __enter__(self) -> "DroppingPort":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.drop(self.accepted):
                self.dropped += 1
                _close_after_banner(conn)
                continue
            upstream = socket.create_connection(self.sshd)
            self.sockets += [conn, upstream]
            for src, dst in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=_copy, args=(src, dst),
                                 daemon=True).start()

    def close(self) -> None:
        """Close every socket now, not when the garbage collector gets to
        them: later tests count this process's descriptors."""
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def _close_after_banner(conn: socket.socket) -> None:
    """Close once the client's version line is read (see the module's
    docstring)."""
    conn.settimeout(10)
    seen = b''
    with contextlib.suppress(OSError):
        while b'\n' not in seen:
            data = conn.recv(256)
            if not data:
                break
            seen += data
    conn.close()


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)
