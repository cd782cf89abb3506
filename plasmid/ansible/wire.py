"""Messages between Ansible worker processes and the broker.

One request and one answer per round, each a length-prefixed value of
plasmid's closed codec, over a UNIX socket that only the same user can
open.  Answers are ``('ok', value)`` or ``('error', kind, message)``.
"""
from __future__ import annotations

import socket
import struct

from plasmid.core import codec

_LENGTH = struct.Struct('>I')
MAX_MESSAGE = 1 << 30


class BrokerGone(Exception):
    """The broker closed the socket or sent something unreadable."""


def send(sock: socket.socket, value) -> None:
    data = codec.encode(value)
    sock.sendall(_LENGTH.pack(len(data)) + data)


def receive(sock: socket.socket):
    size, = _LENGTH.unpack(_read_exactly(sock, _LENGTH.size))
    if size > MAX_MESSAGE:
        raise BrokerGone('message of %d bytes refused' % size)
    try:
        return codec.decode(_read_exactly(sock, size))
    except Exception as exc:
        raise BrokerGone('unreadable message: %s' % exc) from exc


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise BrokerGone('connection closed')
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)
