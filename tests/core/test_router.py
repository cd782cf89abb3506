"""The core Router as a pure object: where messages may come from and go
to, which handles take whose messages, and what happens to waiting
replies when contexts go away.

Topologies used (ids):
  master view:  M(0) --A--> 5 (--> 6 behind it),  M(0) --B--> 7
  child view:   parent(0) --P--> C(5) --D--> 8
Streams are FakeStream objects (they record what is sent), except in the
last tests, which use real Streams over os.pipe().
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable, Iterator

import pytest

from plasmid.core.context import Context
from plasmid.core.errors import ContextLost, ProtocolError
from plasmid.core.framing import FrameReader, Message
from plasmid.core.loop import Latch, Loop
from plasmid.core.router import (ADD_ROUTE, CALL, DEL_ROUTE, FROM_CHILD,
                                 FROM_PARENT, GET_MODULE, LOAD_MODULE,
                                 LOG_RECORD, SHUTDOWN, Router)
from plasmid.core.stream import Stream


class FakeStream:
    """Stands in for a Stream: records the frames the router sends on it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.on_close: list[Callable] = []
        self.sent: list[bytes] = []
        self.error_output = None  # no program at the other end
        self.broken = ''  # not closed for a malformed frame
        self.held: list = []  # sources the router asked it to hold

    def hold(self, source) -> None:
        """Recorded: the real Stream stops reading *source* while it is
        congested (tests/core/test_logs_forwarding.py)."""
        self.held.append(source)

    def __repr__(self) -> str:
        return 'FakeStream(%s)' % self.name

    def send(self, data: bytes) -> bool:
        if self.closed:
            return False
        self.sent.append(data)
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for callback in self.on_close:
                callback(self)

    def messages(self) -> list[Message]:
        return FrameReader().feed(b''.join(self.sent))


class Recorder:
    """A handler that remembers the messages it ran for."""

    def __init__(self) -> None:
        self.got: list[Message] = []

    def __call__(self, msg: Message) -> None:
        self.got.append(msg)


@pytest.fixture
def loop() -> Iterator[Loop]:
    loop = Loop()
    yield loop
    loop.close()


@pytest.fixture
def master(loop: Loop) -> Router:
    router = Router(loop, 0)
    router.a = FakeStream('A')
    router.b = FakeStream('B')
    router.add_child(router.a, 5)
    router.add_route(6, router.a)
    router.add_child(router.b, 7)
    return router


@pytest.fixture
def child(loop: Loop) -> Router:
    router = Router(loop, 5)
    router.p = FakeStream('P')
    router.d = FakeStream('D')
    router.set_parent(router.p, 0)
    router.add_child(router.d, 8)
    return router


def arrive(router: Router, stream: FakeStream, dst: int, src: int,
           handle: int, value: object = None, reply_to: int = 0) -> Message:
    """Let *stream* deliver a message to *router*, and settle deferred work."""
    msg = Message.encoding(dst, src, handle, value, reply_to)
    msg.stream = stream
    router.receive(msg)
    router.loop.run_once(0)
    return msg


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.ERROR]


# ------------------------------------------------------- anti-spoofing

def test_children_may_speak_for_themselves_and_their_subtree(
        master: Router) -> None:
    seen = Recorder()
    master.add_handler(GET_MODULE, seen, FROM_CHILD)
    arrive(master, master.a, 0, 5, GET_MODULE, 'x')
    arrive(master, master.a, 0, 6, GET_MODULE, 'y')   # grandchild via A
    arrive(master, master.b, 0, 7, GET_MODULE, 'z')
    assert [(m.src, m.value()) for m in seen.got] == [
        (5, 'x'), (6, 'y'), (7, 'z')]


@pytest.mark.parametrize('src', [7, 0, 99], ids=['sibling', 'master',
                                                   'unknown'])
def test_a_child_cannot_speak_for_anyone_else(
        master: Router, caplog: pytest.LogCaptureFixture, src: int) -> None:
    seen = Recorder()
    master.add_handler(GET_MODULE, seen, FROM_CHILD)
    arrive(master, master.a, 0, src, GET_MODULE, 'x', reply_to=1234)
    assert seen.got == []
    assert any('source does not match' in e for e in errors(caplog))
    # Dropped silently towards the sender: no reply tells it anything.
    assert master.a.sent == [] and master.b.sent == []


@pytest.mark.parametrize('src', [5, 8], ids=['itself', 'its own child'])
def test_the_parent_cannot_speak_for_this_context_or_its_children(
        child: Router, caplog: pytest.LogCaptureFixture, src: int) -> None:
    seen = Recorder()
    child.add_handler(CALL, seen, FROM_PARENT)
    arrive(child, child.p, 5, src, CALL, ('os', 'system', ('true',), {}))
    assert seen.got == []
    assert any('source does not match' in e for e in errors(caplog))


def test_the_parent_speaks_for_every_context_above(child: Router) -> None:
    seen = Recorder()
    child.add_handler(CALL, seen, FROM_PARENT)
    arrive(child, child.p, 5, 0, CALL, 'from master')
    arrive(child, child.p, 5, 42, CALL, 'from a context elsewhere')
    assert [m.src for m in seen.got] == [0, 42]


# ---------------------------------------------------- one-way routing

@pytest.mark.parametrize('dst', [7, 6], ids=['sibling', 'own grandchild'])
def test_a_child_cannot_address_contexts_below_its_parent(
        master: Router, caplog: pytest.LogCaptureFixture, dst: int) -> None:
    arrive(master, master.a, dst, 5, CALL, ('os', 'system', ('x',), {}),
           reply_to=1500)
    assert master.b.sent == []
    assert any('may not address' in e for e in errors(caplog))
    # The sender learns its message went nowhere, as a failed reply.
    [answer] = master.a.messages()
    assert (answer.dst, answer.src, answer.handle) == (5, 0, 1500)
    ok, err = answer.value()
    assert ok is False and isinstance(err, ContextLost)
    assert not [m for m in master.a.messages() if m.handle == CALL]


def test_unroutable_message_from_a_child_gets_a_context_lost_reply(
        master: Router) -> None:
    arrive(master, master.a, 99, 5, CALL, None, reply_to=1501)
    [answer] = master.a.messages()
    assert answer.handle == 1501
    assert answer.value()[0] is False
    assert isinstance(answer.value()[1], ContextLost)
    # No reply wanted, nothing sent.
    arrive(master, master.a, 99, 5, CALL, None)
    assert len(master.a.messages()) == 1


def test_child_traffic_goes_up_and_parent_traffic_goes_down(
        child: Router) -> None:
    up = arrive(child, child.d, 0, 8, LOG_RECORD, ('stdout', 20, 'hi'))
    assert [m.to_bytes() for m in child.p.messages()] == [up.to_bytes()]
    # Passed up: the parent's link may pause the child's if congested.
    assert child.p.held == [child.d]
    down = arrive(child, child.p, 8, 0, CALL, ('os', 'getpid', (), {}))
    assert [m.to_bytes() for m in child.d.messages()] == [down.to_bytes()]
    assert child.d.held == []  # never the parent's: siblings would wait


# ----------------------------------------------------- handle policies

def test_from_parent_handles_refuse_children(
        child: Router, caplog: pytest.LogCaptureFixture) -> None:
    calls = Recorder()
    child.add_handler(CALL, calls, FROM_PARENT)
    arrive(child, child.d, 5, 8, CALL, ('os', 'system', ('touch x',), {}))
    assert calls.got == []
    assert any('refusing' in e and 'src=8' in e for e in errors(caplog))
    assert child.d.messages() == []  # no reply wanted, none sent
    arrive(child, child.p, 5, 0, CALL, ('os', 'getpid', (), {}))
    assert [m.src for m in calls.got] == [0]


def test_a_refused_call_is_answered(child: Router) -> None:
    """A child's call to its parent (or a context's to itself) is refused:
    the caller learns it at once instead of waiting for ever."""
    child.add_handler(CALL, Recorder(), FROM_PARENT)
    arrive(child, child.d, 5, 8, CALL, ('os', 'getpid', (), {}),
           reply_to=1502)
    [answer] = child.d.messages()
    assert (answer.dst, answer.src, answer.handle) == (8, 5, 1502)
    ok, err = answer.value()
    assert ok is False and isinstance(err, ContextLost)
    assert 'context 8 may not address context 5' in str(err)


def test_from_child_handles_refuse_the_parent(
        child: Router, caplog: pytest.LogCaptureFixture) -> None:
    requests = Recorder()
    child.add_handler(GET_MODULE, requests, FROM_CHILD)
    arrive(child, child.p, 5, 0, GET_MODULE, 'mod')
    assert requests.got == []
    assert errors(caplog)
    arrive(child, child.d, 5, 8, GET_MODULE, 'mod')
    assert [m.src for m in requests.got] == [8]


def test_the_master_refuses_calls_from_children(
        master: Router, caplog: pytest.LogCaptureFixture) -> None:
    # The master serves no CALL handle at all: a child's CALL is refused
    # and logged, whatever it asks for; a sender that waits is told (a
    # child's shutdown of the master waited its whole timeout), others not.
    arrive(master, master.a, 0, 5, CALL, ('os', 'system', ('touch x',), {}),
           reply_to=1600)
    arrive(master, master.a, 0, 5, LOAD_MODULE, ('evil', False, 'x=1', 'f'))
    arrive(master, master.a, 0, 5, SHUTDOWN, None)
    arrive(master, master.a, 0, 5, SHUTDOWN, None, reply_to=1601)
    refused = [e for e in errors(caplog) if 'takes no messages' in e]
    assert len(refused) == 4
    answers = master.a.messages()
    assert [(m.dst, m.handle) for m in answers] == [(5, 1600), (5, 1601)]
    for answer in answers:
        ok, err = answer.value()
        assert ok is False and isinstance(err, ContextLost)
        assert 'context 0 takes no messages on handle' in str(err)


def test_a_late_reply_is_dropped_quietly(
        master: Router, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger='plasmid.router')
    arrive(master, master.a, 0, 5, 4321, (True, 1))
    assert errors(caplog) == []
    assert any('no handler' in r.getMessage() for r in caplog.records)


def test_a_call_to_itself_is_refused_and_answered(child: Router) -> None:
    """A context runs its calls one at a time: a call it sent itself from
    inside a call would wait for ever (and block every later call)."""
    calls, answers = Recorder(), Recorder()
    child.add_handler(CALL, calls, FROM_PARENT)
    child.add_handler(1503, answers, 5)
    child.send(Message.encoding(5, 5, CALL, 'self', 1503))
    child.loop.run_once(0)
    child.loop.run_once(0)
    assert calls.got == []
    [answer] = answers.got
    ok, err = answer.value()
    assert ok is False and isinstance(err, ContextLost)


def test_handler_failures_are_logged_not_raised(
        master: Router, caplog: pytest.LogCaptureFixture) -> None:
    def malformed(msg: Message) -> None:
        raise ProtocolError('bad body')

    def broken(msg: Message) -> None:
        raise KeyError('bug')
    master.add_handler(GET_MODULE, malformed, FROM_CHILD)
    master.add_handler(LOG_RECORD, broken, FROM_CHILD)
    arrive(master, master.a, 0, 5, GET_MODULE)
    arrive(master, master.a, 0, 5, LOG_RECORD)
    assert any('bad body' in e for e in errors(caplog))
    assert any('failed' in e for e in errors(caplog))


# ----------------------------------------------------------- replies

def test_replies_are_accepted_only_from_the_awaited_context(
        master: Router, caplog: pytest.LogCaptureFixture) -> None:
    latch = Latch(master.loop)
    handle = master.expect_reply(7, latch)
    arrive(master, master.a, 0, 5, handle, (True, 'forged'))
    arrive(master, master.a, 0, 6, handle, (True, 'forged'))
    assert not latch.is_set
    assert errors(caplog)
    real = arrive(master, master.b, 0, 7, handle, (True, 'real'))
    assert latch.is_set and latch.value is real
    # One reply per handle: a second one finds nobody waiting.
    arrive(master, master.b, 0, 7, handle, (True, 'again'))
    assert latch.value is real
    assert handle not in master.pending and handle not in master.handlers


def test_a_router_on_the_way_may_answer_for_the_awaited_context(
        master: Router, child: Router) -> None:
    # The master awaits 6, behind 5: 5 says it could not pass the call on.
    latch = Latch(master.loop)
    handle = master.expect_reply(6, latch)
    arrive(master, master.a, 0, 5, handle, (False, ContextLost('no route')))
    assert latch.is_set
    # A context awaits 42, somewhere above: its parent refused to route
    # the call (a sibling's child, say) and answers instead.  Before, the
    # answer was dropped and the caller waited for ever.
    latch = Latch(child.loop)
    handle = child.expect_reply(42, latch)
    arrive(child, child.p, 5, 0, handle, (False, ContextLost('refused')))
    assert latch.is_set
    ok, err = latch.value.value()
    assert ok is False and isinstance(err, ContextLost)


def test_own_undeliverable_message_answers_with_context_lost(
        master: Router) -> None:
    latch = Latch(master.loop)
    handle = master.expect_reply(99, latch)
    master.send(Message.encoding(99, 0, CALL, None, handle))
    master.loop.run_once(0)
    assert latch.is_set
    ok, err = latch.value.value()
    assert ok is False and isinstance(err, ContextLost)


# ---------------------------------------------------- lost contexts

def test_lose_fails_pending_replies_and_tells_the_parent(
        child: Router) -> None:
    lost_ids: list = []
    child.on_lost.append(lost_ids.append)
    waiting = Latch(child.loop)
    other = Latch(child.loop)
    child.expect_reply(8, waiting)
    child.expect_reply(0, other)
    child.lose([8], 'it crashed')
    assert isinstance(waiting.error, ContextLost)
    assert 'it crashed' in str(waiting.error)
    assert not other.is_set
    assert lost_ids == [[8]]
    assert 8 not in child.routes and 8 in child.lost
    [note] = child.p.messages()
    assert (note.dst, note.src, note.handle) == (0, 5, DEL_ROUTE)
    assert note.value() == ([8], 'it crashed')
    # Waiting on a context already gone fails at once.
    late = Latch(child.loop)
    child.expect_reply(8, late)
    assert isinstance(late.error, ContextLost)
    with pytest.raises(ContextLost):
        late.wait(0)


def test_a_call_without_reply_to_a_lost_context_says_why(
        child: Router) -> None:
    """As a call's ContextLost does (it said only 'context ctx8 is
    gone', without the reason)."""
    child.lose([8], 'it crashed')
    with pytest.raises(ContextLost) as info:
        Context(child, 8, 'ctx8').call_no_reply(os.getpid)
    assert str(info.value) == 'context 8 is gone: it crashed'
    assert child.d.messages() == []  # nothing sent


def test_a_closed_stream_loses_every_context_behind_it(
        master: Router) -> None:
    behind_a = [Latch(master.loop), Latch(master.loop)]
    behind_b = Latch(master.loop)
    master.expect_reply(5, behind_a[0])
    master.expect_reply(6, behind_a[1])
    master.expect_reply(7, behind_b)
    master.a.close()
    assert all(isinstance(latch.error, ContextLost) for latch in behind_a)
    assert not behind_b.is_set
    assert set(master.routes) == {7}
    assert master.lost == {5, 6}


def test_losing_the_parent_runs_the_parent_lost_callbacks(
        child: Router) -> None:
    called: list = []
    child.on_parent_lost.append(lambda: called.append(True))
    child.p.close()
    assert called == [True]
    child.d.close()   # no parent left to tell: nothing is sent, no error
    assert child.p.sent == []


def test_del_route_from_a_child_only_removes_routes_via_that_child(
        master: Router) -> None:
    on_b = Latch(master.loop)
    on_a = Latch(master.loop)
    master.expect_reply(7, on_b)
    master.expect_reply(6, on_a)
    arrive(master, master.a, 0, 5, DEL_ROUTE, ([6, 7, 0, 99], 'lies'))
    assert 6 not in master.routes and 6 in master.lost
    assert master.routes[7] is master.b and master.routes[5] is master.a
    assert master.lost == {6}
    assert isinstance(on_a.error, ContextLost)
    assert not on_b.is_set


def test_del_route_from_the_parent_is_refused(child: Router) -> None:
    arrive(child, child.p, 5, 0, DEL_ROUTE, ([8], 'no'))
    assert child.routes[8] is child.d


def test_add_route_only_from_the_parent(master: Router,
                                        child: Router) -> None:
    arrive(master, master.a, 0, 5, ADD_ROUTE, (50, 5))
    assert 50 not in master.routes
    arrive(child, child.p, 5, 0, ADD_ROUTE, (9, 8))
    assert child.routes[9] is child.d
    # ...and never to redirect an existing route.
    arrive(child, child.p, 5, 0, ADD_ROUTE, (8, 9))
    assert child.routes[8] is child.d


# ------------------------------------------------ over real pipes

class PipeLink:
    """A real Stream in *router* whose other end the test holds."""

    def __init__(self, router: Router, name: str, context_id: int) -> None:
        stream_r, self.peer_w = os.pipe()
        self.peer_r, stream_w = os.pipe()
        self.stream = Stream(router, stream_r, stream_w, name)
        router.add_child(self.stream, context_id)
        router.loop.defer(self.stream.start)

    def write(self, data: bytes) -> None:
        os.write(self.peer_w, data)

    def close(self) -> None:
        for fd in (self.peer_w, self.peer_r):
            os.close(fd)
        if not self.stream.closed:
            self.stream.close()


def test_bad_frame_closes_only_its_own_stream(
        loop: Loop, caplog: pytest.LogCaptureFixture) -> None:
    router = Router(loop, 0)
    seen = Recorder()
    router.add_handler(GET_MODULE, seen, FROM_CHILD)
    good = PipeLink(router, 'good', 5)
    bad = PipeLink(router, 'bad', 7)
    waiting = Latch(loop)
    router.expect_reply(7, waiting)
    try:
        bad.write(Message.encoding(0, 7, GET_MODULE, 'before').to_bytes())
        assert loop.run_until(lambda: len(seen.got) == 1, 10)
        bad.write(b'XX' + b'\x00' * 40)
        assert loop.run_until(lambda: bad.stream.closed, 10)
        good.write(Message.encoding(0, 5, GET_MODULE, 'after').to_bytes())
        assert loop.run_until(lambda: len(seen.got) == 2, 10)
        assert [m.value() for m in seen.got] == ['before', 'after']
        assert not good.stream.closed
        assert isinstance(waiting.error, ContextLost)
        records = [r for r in caplog.records if r.name == 'plasmid.stream']
        assert [r.levelno for r in records] == [logging.ERROR]
        assert 'malformed frame' in records[0].getMessage()
        assert set(router.routes) == {5}
    finally:
        good.close()
        bad.close()


def test_eof_inside_a_frame_closes_with_an_error(
        loop: Loop, caplog: pytest.LogCaptureFixture) -> None:
    router = Router(loop, 0)
    link = PipeLink(router, 'cut', 5)
    other = PipeLink(router, 'other', 7)
    try:
        link.write(Message(0, 5, GET_MODULE, 0, b'x' * 100).to_bytes()[:60])
        os.close(link.peer_w)
        link.peer_w = os.open(os.devnull, os.O_WRONLY)  # for close()
        assert loop.run_until(lambda: link.stream.closed, 10)
        assert any('bytes into a frame' in r.getMessage()
                   for r in caplog.records if r.name == 'plasmid.stream')
        assert not other.stream.closed and set(router.routes) == {7}
    finally:
        link.close()
        other.close()


def test_clean_eof_between_frames_logs_no_error(
        loop: Loop, caplog: pytest.LogCaptureFixture) -> None:
    router = Router(loop, 0)
    link = PipeLink(router, 'clean', 5)
    try:
        link.write(Message(0, 5, 4321, 0, b'N').to_bytes())
        os.close(link.peer_w)
        link.peer_w = os.open(os.devnull, os.O_WRONLY)
        assert loop.run_until(lambda: link.stream.closed, 10)
        assert errors(caplog) == []
        assert router.lost == {5}
    finally:
        link.close()


def test_large_frames_leave_a_full_pipe_whole_and_in_order(
        loop: Loop) -> None:
    """Frames many times a pipe's buffer leave in pieces, the next frames
    queued behind them; the far end reads every byte, in order."""
    router = Router(loop, 0)
    link = PipeLink(router, 'bulk', 5)
    frames = [Message(5, 0, 4321, 0, os.urandom(3 << 20)).to_bytes(),
              Message(5, 0, 4321, 0, b'small').to_bytes(),
              Message(5, 0, 4321, 0, os.urandom((2 << 20) + 7)).to_bytes()]
    expected = sum(len(f) for f in frames)
    received = bytearray()

    def drain() -> None:
        while len(received) < expected:
            piece = os.read(link.peer_r, 16 << 10)
            if not piece:
                return
            received.extend(piece)
    reader = threading.Thread(target=drain)
    try:
        loop.run_until(lambda: link.stream.wfd is not None, 10)
        for frame in frames:
            assert link.stream.send(frame)
        assert link.stream.pending_output() > 0   # the pipe was full
        reader.start()
        # The reader's progress wakes nobody: look again every 50 ms.
        deadline = time.monotonic() + 30
        while len(received) < expected and time.monotonic() < deadline:
            loop.run_until(lambda: len(received) >= expected, 0.05)
        assert len(received) == expected
        assert link.stream.pending_output() == 0
        got = FrameReader(8 << 20).feed(bytes(received))
        assert [m.to_bytes() for m in got] == frames
    finally:
        reader.join(10)
        link.close()
