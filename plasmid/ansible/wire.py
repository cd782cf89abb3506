"""Messages between Ansible worker processes and the broker.

One request and one answer per round, each a length-prefixed value of
plasmid's closed codec, over a UNIX socket that only the same user can
open.  Answers are ``('ok', value)`` or ``('error', kind, message)``,
either with a list of warnings after it when the broker met some that the
worker is to show (ansible-core's own words, as vanilla shows them).
The length takes 8 bytes: a command's output has no bound of its own, so
an answer may pass 4 GiB (the codec's bound is 4 GiB for one bytes value).
"""
from __future__ import annotations

import socket
import struct

from plasmid.core import codec
from plasmid.core.errors import StreamError

_LENGTH = struct.Struct('>Q')
# Not a limit on results (see above), a bound against a garbled length.
MAX_MESSAGE = 1 << 36
_FIRST_READ = 1 << 16  # a task's request and most answers fit


class BrokerGone(Exception):
    """The broker closed the socket or sent something unreadable."""


class Unsendable(Exception):
    """A value the codec cannot encode (a type it refuses, a bytes value
    of 4 GiB or more); nothing was sent."""


def send(sock: socket.socket, value) -> None:
    """Send *value* behind its length, in one system call when the socket
    takes it whole (nearly always): each call is a moment a thread of
    ansible-playbook's threaded strategy gives up the GIL."""
    try:
        data = codec.encode(value)
    except (StreamError, struct.error) as exc:
        raise Unsendable(str(exc)) from None
    header = _LENGTH.pack(len(data))
    sent = sock.sendmsg([header, data])
    if sent < len(header):
        sock.sendall(header[sent:])
        sent = len(header)
    if sent < len(header) + len(data):
        sock.sendall(memoryview(data)[sent - len(header):])


def receive(sock: socket.socket):
    """The next value from *sock*.  Requests and answers alternate, so
    nothing follows a message until it is answered: one recv() takes the
    length and, for a message up to _FIRST_READ, the whole of it."""
    first = sock.recv(_FIRST_READ)
    if not first:
        raise BrokerGone('connection closed')
    if len(first) < _LENGTH.size:
        first = _read_exactly(sock, _LENGTH.size, first)
    size, = _LENGTH.unpack_from(first)
    if size > MAX_MESSAGE:
        raise BrokerGone('message of %d bytes refused' % size)
    body = first[_LENGTH.size:]
    if len(body) > size:
        raise BrokerGone('%d bytes after a message' % (len(body) - size))
    if len(body) < size:
        body = _read_exactly(sock, size, body)
    try:
        return codec.decode(body)
    except Exception as exc:
        raise BrokerGone('unreadable message: %s' % exc) from exc


def _read_exactly(sock: socket.socket, size: int, start: bytes) -> bytes:
    """*start* and what follows it, *size* bytes in all (one copy)."""
    chunks, left = [start], size - len(start)
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise BrokerGone('connection closed')
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)
