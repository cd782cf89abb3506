"""Messages between workers and the broker (plasmid/ansible/wire.py), over
real socket pairs."""
from __future__ import annotations

import socket
import threading

import pytest

from plasmid.ansible import wire


class CountingSocket(socket.socket):
    """A socket that counts the system calls wire makes on it."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(fileno=sock.detach())
        self.calls: list[str] = []

    def sendmsg(self, buffers, *args):
        self.calls.append('sendmsg')
        return super().sendmsg(buffers, *args)

    def sendall(self, data, *args):
        self.calls.append('sendall')
        return super().sendall(data, *args)

    def recv(self, size, *args):
        self.calls.append('recv')
        return super().recv(size, *args)


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    ours, theirs = CountingSocket(ours), CountingSocket(theirs)
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_task_sized_message_costs_one_call_each_way(pair):
    """The request of a task and its answer: one send and one receive,
    each a moment a threaded worker gives up the GIL."""
    ours, theirs = pair
    request = ('run-module', ('host', {'args': 'x' * 2000}, b'\0' * 3000))
    wire.send(ours, request)
    assert wire.receive(theirs) == request
    assert ours.calls == ['sendmsg']
    assert theirs.calls == ['recv']


def test_a_large_message_arrives_whole(pair):
    """Beyond one read and beyond the socket's buffer: the reader takes it
    in pieces; the sender, whose socket has a time-out (so a send may take
    part of it), sends the rest after its first call."""
    ours, theirs = pair
    ours.settimeout(30)
    answer = ('ok', (0, b'\x01\x02' * (3 << 20), b''))
    received = []
    reader = threading.Thread(target=lambda: received.append(
        wire.receive(theirs)))
    reader.start()
    wire.send(ours, answer)
    reader.join(30)
    assert received == [answer]
    assert theirs.calls.count('recv') > 1
    assert ours.calls[0] == 'sendmsg' and 'sendall' in ours.calls


def test_messages_alternating_on_one_socket_stay_apart(pair):
    ours, theirs = pair
    for n in range(50):
        wire.send(ours, ('ping', (n,)))
        assert wire.receive(theirs) == ('ping', (n,))
        wire.send(theirs, ('ok', n))
        assert wire.receive(ours) == ('ok', n)


def test_a_length_in_pieces_is_waited_for(pair):
    """A peer may write the length in more than one piece."""
    ours, theirs = pair
    data = wire.codec.encode(('ok', 'pong'))
    header = wire._LENGTH.pack(len(data))
    ours.sendall(header[:3])
    writer = threading.Timer(0.05, ours.sendall, (header[3:] + data,))
    writer.start()
    assert wire.receive(theirs) == ('ok', 'pong')
    writer.join()


def test_bytes_after_a_message_are_refused(pair):
    """Nothing follows a message before its answer: bytes that do mean a
    peer that does not speak this protocol, not a second message to
    lose."""
    ours, theirs = pair
    data = wire.codec.encode(('ok', 'pong'))
    ours.sendall(wire._LENGTH.pack(len(data)) + data + b'more')
    with pytest.raises(wire.BrokerGone, match='4 bytes after a message'):
        wire.receive(theirs)


def test_a_closed_peer_and_a_garbled_length_end_the_connection(pair):
    ours, theirs = pair
    ours.sendall(wire._LENGTH.pack(wire.MAX_MESSAGE + 1))
    with pytest.raises(wire.BrokerGone, match='refused'):
        wire.receive(theirs)
    ours.close()
    with pytest.raises(wire.BrokerGone, match='closed'):
        wire.receive(theirs)


def test_an_unsendable_value_sends_nothing(pair):
    ours, theirs = pair
    with pytest.raises(wire.Unsendable):
        wire.send(ours, ('ok', object()))
    assert ours.calls == []
