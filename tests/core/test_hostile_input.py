"""A child cannot make its parent execute code or import anything through a
message, and a malformed, truncated or oversized frame closes that stream
with a logged error without touching the others.

End to end: a master Router with a real local context, plus a "hostile
child" (tests/core/hostile_fns.py run as a plain process, wired to the
master's router exactly as a real child's pipes are) that sends hand-made
frames.  In process: hypothesis feeds random and mutated frame streams
through a real Stream into the master's router.
"""
from __future__ import annotations

import itertools
import logging
import os
import struct
import subprocess
import sys
import zlib
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import plasmid
from plasmid.core import codec
from plasmid.core.errors import ContextLost, StreamError
from plasmid.core.framing import HEADER, MAGIC, FrameReader, Message
from plasmid.core.loop import Latch
from plasmid.core.router import (ADD_ROUTE, BOOT, CALL, DEL_ROUTE,
                                 FROM_PARENT, GET_MODULE, HELLO, LOAD_MODULE,
                                 LOG_RECORD, SHUTDOWN)
from plasmid.core.importer import ModuleEntry
from plasmid.core.stream import Stream

import hostile_fns

HOSTILE_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               'hostile_fns.py')
# Handle numbers a reply to the hostile child's requests would come back on.
REPLY_HANDLE = 1000


class HostileChild:
    """A plain process attached to *router* as if it were a child context."""

    def __init__(self, router: plasmid.Router, payload: bytes, then: bytes,
                 mode: str, record: str) -> None:
        self.router = router
        self.context_id = next(router.ids)
        self.record = record
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, HOSTILE_PROGRAM, payload.hex(), then.hex(), mode,
             record],
            stdin=to_child_r, stdout=from_child_w)
        os.close(to_child_r)
        os.close(from_child_w)
        # As connect.spawn.connect() does for a freshly booted child.
        self.stream = Stream(router.core, from_child_r, to_child_w,
                             'hostile')
        router.core.add_child(self.stream, self.context_id)
        router.loop.defer(self.stream.start)

    def hang_up(self) -> bytes:
        """Close the stream (if the master has not), reap the process and
        return what the master sent it."""
        loop = self.router.loop
        if not self.stream.closed:
            loop.defer(self.stream.close)  # streams close on the loop
            assert loop.run_until(lambda: self.stream.closed, 10)
        assert self.proc.wait(timeout=30) == 0
        with open(self.record, 'rb') as handle:
            return handle.read()


@pytest.fixture
def master() -> Iterator[tuple[plasmid.Router, plasmid.Context]]:
    with plasmid.Router() as router:
        here = router.local(name='victim')
        assert here.call(os.getpid) == here.info['pid']
        yield router, here


@pytest.fixture
def attack(master: tuple[plasmid.Router, plasmid.Context],
           tmp_path: Any) -> Iterator[Callable[..., HostileChild]]:
    router, _ = master
    started: list[HostileChild] = []

    def start(payload: bytes, mode: str = 'stay',
              then: bytes = b'') -> HostileChild:
        """Send *payload*, then (once answered) *then*."""
        child = HostileChild(router, payload, then, mode,
                             str(tmp_path / ('record%d' % len(started))))
        started.append(child)
        return child
    yield start
    for child in started:   # no process left behind, even on failure
        if child.proc.poll() is None:
            child.proc.kill()
            child.proc.wait()


def frame(dst: int, src: int, handle: int, value: Any,
          reply_to: int = 0) -> bytes:
    return Message.encoding(dst, src, handle, value, reply_to).to_bytes()


def module_request(hid: int, name: str) -> bytes:
    """A GET_MODULE frame as a real child's importer sends it."""
    return frame(0, hid, GET_MODULE, ([name], None))


def served(answers: list[Message]) -> dict[str, Any]:
    """{module name: source text or None} of the LOAD_MODULE answers."""
    entries = [ModuleEntry(*m.value()) for m in answers
               if m.handle == LOAD_MODULE]
    return {e.name: e.source and zlib.decompress(e.source).decode('utf-8')
            for e in entries if e.for_name == e.name}


def error_records(caplog: pytest.LogCaptureFixture,
                  text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records
            if r.levelno >= logging.ERROR and text in r.getMessage()]


def wait_for(router: plasmid.Router, condition: Callable[[], Any]) -> None:
    assert router.loop.run_until(condition, 30)


def still_serves(router: plasmid.Router, here: plasmid.Context) -> None:
    assert here.call(os.getpid) == here.info['pid']
    assert here.is_alive() and here.context_id in router.core.routes


def shell_attack(marker: str) -> list[tuple]:
    """CALL bodies that would create *marker* if anything ran them."""
    return [('os', 'system', ('touch %s' % marker,), {}),
            ('builtins', 'exec', ("open(%r, 'w').close()" % marker,), {}),
            ('subprocess', 'call', (['touch', marker],), {})]


# ---------------------------------------------------------- end to end

def test_calls_from_a_child_never_run_in_the_master_or_a_sibling(
        master: tuple[plasmid.Router, plasmid.Context],
        attack: Callable[..., HostileChild], tmp_path: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    router, here = master
    marker = str(tmp_path / 'pwned')
    hid = _peek_next_id(router)
    calls = shell_attack(marker)
    payload = b''.join(
        # (1) to the master itself; (2) through the master to a sibling;
        # (3) to the master in the sibling's name.
        [frame(0, hid, CALL, body, REPLY_HANDLE) for body in calls] +
        [frame(here.context_id, hid, CALL, body, REPLY_HANDLE + 1)
         for body in calls] +
        [frame(0, here.context_id, CALL, body, REPLY_HANDLE + 2)
         for body in calls])
    child = attack(payload)
    assert child.context_id == hid
    wait_for(router, lambda: len(error_records(caplog, 'refusing')) +
             len(error_records(caplog, 'source does not match')) >= 9)
    assert len(error_records(caplog, 'takes no messages on handle 1')) == 3
    assert len(error_records(caplog, 'may not address')) == 3
    assert len(error_records(caplog, 'source does not match')) == 3
    # The sibling answers a call sent after the forged ones: had any of
    # them been forwarded, it would have run first (calls run in order).
    still_serves(router, here)
    assert not os.path.exists(marker)
    answers = FrameReader().feed(child.hang_up())
    # The calls to the sibling and to the master are answered, each with
    # ContextLost (the refusal): none ran.
    assert sorted(m.handle for m in answers) == \
        [REPLY_HANDLE] * 3 + [REPLY_HANDLE + 1] * 3
    for answer in answers:
        ok, err = answer.value()
        assert ok is False and isinstance(err, ContextLost)
    assert not os.path.exists(marker)


def _peek_next_id(router: plasmid.Router) -> int:
    """The id the next context (our hostile child) will get."""
    value = next(router.ids)
    router.ids = itertools.count(value)
    return value


def test_module_messages_never_import_in_the_master(
        master: tuple[plasmid.Router, plasmid.Context],
        attack: Callable[..., HostileChild], tmp_path: Any,
        caplog: pytest.LogCaptureFixture) -> None:
    router, here = master
    marker = str(tmp_path / 'imported')
    hid = _peek_next_id(router)
    evil = "open(%r, 'w').close()\n" % marker
    asked = ['plasmid.master.router', 'plasmid.cli', 'plasmid.master',
             '__main__', 'hostile_fns']
    modules_before = set(sys.modules)
    payload = b''.join(
        [module_request(hid, name) for name in asked] +
        # A module pushed at the master, and at the sibling through it.
        [frame(0, hid, LOAD_MODULE, ('evil_mod', False, evil, 'evil.py')),
         frame(here.context_id, hid, LOAD_MODULE,
               ('evil_mod', False, evil, 'evil.py'))])
    child = attack(payload)
    wait_for(router, lambda: error_records(caplog, 'may not address'))
    assert len(error_records(caplog, 'takes no messages on handle 4')) == 1
    assert here.call(hostile_fns.module_loaded, 'evil_mod') is False
    still_serves(router, here)
    sources = served(FrameReader().feed(child.hang_up()))
    assert set(sources) == set(asked)
    # Master-only code is never served...
    for name in asked[:4]:
        assert sources[name] is None
    # ...and serving a module's source does not import it here.
    assert 'def read_until_eof' in sources['hostile_fns']
    assert set(sys.modules) - modules_before == set()
    assert not os.path.exists(marker)


@pytest.mark.parametrize('bad,mode,logged', [
    (b'XX' + b'\x00' * 40, 'stay', 'bad frame magic'),
    (HEADER.pack(MAGIC, 0, 0, GET_MODULE, 0, 2 ** 32 - 1), 'stay',
     'exceeds'),
    (Message(0, 0, GET_MODULE, 0, b's' * 100).to_bytes()[:50], 'eof',
     'bytes into a frame'),
    (HEADER.pack(MAGIC, 0, 0, GET_MODULE, 0, 10)[:10], 'eof',
     'bytes into a frame'),
], ids=['bad magic', 'oversized length', 'truncated body',
        'truncated header'])
def test_a_bad_frame_closes_only_that_stream(
        master: tuple[plasmid.Router, plasmid.Context],
        attack: Callable[..., HostileChild], caplog: pytest.LogCaptureFixture,
        bad: bytes, mode: str, logged: str) -> None:
    router, here = master
    hid = _peek_next_id(router)
    # A good request first: the stream works until the bad frame.
    child = attack(module_request(hid, 'hostile_fns'), mode, then=bad)
    wait_for(router, lambda: child.stream.closed)
    [record] = [r for r in caplog.records if r.name == 'plasmid.stream']
    assert record.levelno == logging.ERROR
    assert logged in record.getMessage()
    assert 'hostile' in record.getMessage()
    assert hid in router.core.lost and hid not in router.core.routes
    still_serves(router, here)
    assert list(served(FrameReader().feed(child.hang_up()))) == [
        'hostile_fns']


def test_the_oversized_frame_is_refused_before_its_body_arrives(
        master: tuple[plasmid.Router, plasmid.Context],
        attack: Callable[..., HostileChild],
        caplog: pytest.LogCaptureFixture) -> None:
    router, here = master
    hid = _peek_next_id(router)
    # The header claims 100 MiB, then the child just waits: the master must
    # not wait for (or buffer) the body before refusing.
    child = attack(HEADER.pack(MAGIC, 0, hid, LOG_RECORD, 0, 100 << 20))
    wait_for(router, lambda: child.stream.closed)
    assert error_records(caplog, 'exceeds')
    assert child.stream.reader.pending() < 100
    still_serves(router, here)
    child.hang_up()


def test_undecodable_bodies_are_refused_and_logged(
        master: tuple[plasmid.Router, plasmid.Context],
        attack: Callable[..., HostileChild],
        caplog: pytest.LogCaptureFixture) -> None:
    router, here = master
    hid = _peek_next_id(router)
    bad_bodies = [b'\xff', b'', codec.encode('x')[:-1],
                  codec.encode(['deep']) + b'N',
                  (b'l' + struct.pack('>I', 1)) * 500 + b'N']
    payload = b''.join(Message(0, hid, handle, 0, body).to_bytes()
                       for body in bad_bodies
                       for handle in (GET_MODULE, LOG_RECORD, DEL_ROUTE))
    child = attack(payload + module_request(hid, 'hostile_fns'))
    wait_for(router, lambda: len(error_records(caplog, 'malformed')) >= 15)
    # Framing was intact, so the link stays: each bad message is refused
    # on its own (a body is end-to-end, and may come from further down).
    assert not child.stream.closed
    still_serves(router, here)
    assert list(served(FrameReader().feed(child.hang_up()))) == [
        'hostile_fns']


def test_values_over_the_size_limit_are_refused_by_their_sender() -> None:
    # Every router on the way would refuse such a frame and drop the link
    # (see the oversized-header tests above), so the sender refuses it and
    # says why: the context and its link survive.
    with plasmid.Router(max_message_size=64 * 1024) as router:
        big = router.local(name='big')
        assert len(big.call(os.urandom, 1000)) == 1000
        with pytest.raises(plasmid.CallError, match='exceeds the 65536'):
            big.call(os.urandom, 100 * 1024)
        with pytest.raises(StreamError, match='exceeds the 65536'):
            big.call(len, b'x' * (100 * 1024))
        assert big.is_alive()
        assert big.call(os.getpid) == big.info['pid']


# ------------------------------------------------------------ fuzzing

# Handles a hostile frame may name, and bodies shaped for their handlers
# (so that fuzzing reaches past the first type check) or not.
HANDLES = [CALL, LOG_RECORD, GET_MODULE, LOAD_MODULE, DEL_ROUTE, ADD_ROUTE,
           SHUTDOWN, HELLO, BOOT, 10, 1000, 1001, 2 ** 32 - 1]
FUZZ_ID, SIBLING_ID = 50, 51
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() |
    st.text(max_size=12) | st.binary(max_size=12),
    lambda inner: st.lists(inner, max_size=4) |
    st.lists(inner, max_size=4).map(tuple) |
    st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=10)
MODULE_NAMES = st.sampled_from([
    'plasmid.master.router', 'hostile_fns', 'os', 'no.such.module', '',
    '..', '.hostile_fns', '\x00', '\ud800', 'plasmid.core.codec'])
SHAPED = st.one_of(
    st.tuples(st.sampled_from(['stdout', 'stderr', 'x']),
              st.integers(-5, 60), st.text(max_size=20)),      # LOG_RECORD
    st.tuples(st.lists(MODULE_NAMES, max_size=3),
              st.none() | MODULE_NAMES),                       # GET_MODULE
    st.tuples(st.lists(st.sampled_from([0, FUZZ_ID, SIBLING_ID, 99])),
              st.text(max_size=5)),                              # DEL_ROUTE
    st.tuples(st.integers(0, 100), st.integers(0, 100)),         # ADD_ROUTE
    st.tuples(st.text(max_size=8), st.text(max_size=8), st.tuples(),
              st.dictionaries(st.text(max_size=3), st.integers(),
                              max_size=2)),                      # CALL
)
BODIES = (st.one_of(VALUES, SHAPED).map(codec.encode) |
          st.binary(max_size=40))
FRAMES = st.builds(
    lambda dst, src, handle, reply_to, body: Message(
        dst, src, handle, reply_to, body).to_bytes(),
    st.sampled_from([0, 0, 0, SIBLING_ID, 99]),
    st.sampled_from([FUZZ_ID, FUZZ_ID, FUZZ_ID, SIBLING_ID, 0, 7]),
    st.sampled_from(HANDLES), st.sampled_from([0, 0, 1000, 7]), BODIES)


@st.composite
def hostile_streams(draw: Callable) -> tuple[bytes, list[int]]:
    """Frames, then a few byte-level mutations, then read sizes."""
    data = bytearray(b''.join(draw(st.lists(FRAMES, max_size=6))))
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(['flip', 'insert', 'delete']))
        if op == 'flip' and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == 'insert':
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == 'delete':
            del data[at:at + draw(st.integers(1, 8))]
    cuts = draw(st.lists(st.integers(1, 64), max_size=6))
    return bytes(data), cuts


class Watch:
    """Records imports, code execution and process spawning while on."""

    # Not 'compile' or 'marshal.loads': the master may compile a module's
    # source (or load its .pyc) to list its imports, without running it.
    EVENTS = ('import', 'exec', 'os.system', 'os.exec', 'os.posix_spawn',
              'os.spawn', 'os.fork', 'subprocess.Popen', 'ctypes',
              'pickle.find_class')
    on = False
    seen: list = []

    @classmethod
    def hook(cls, event: str, args: tuple) -> None:
        if cls.on and event.startswith(cls.EVENTS):
            cls.seen.append(event)


sys.addaudithook(Watch.hook)  # audit hooks stay for the session


class FakeSibling:
    """Another child's link: nothing the fuzzer sends may reach it."""

    name = 'sibling'
    closed = False

    def __init__(self) -> None:
        self.on_close: list = []
        self.sent: list[bytes] = []

    def send(self, data: bytes) -> bool:
        self.sent.append(data)
        return True


def test_fuzzed_frames_are_refused_or_handled_never_executed(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.CRITICAL)  # thousands of expected errors
    with plasmid.Router() as router:
        core = router.core
        executed: list = []
        core.add_handler(CALL, executed.append, FROM_PARENT)
        sibling = FakeSibling()
        core.add_child(sibling, SIBLING_ID)
        sibling_reply = Latch(router.loop)
        core.expect_reply(SIBLING_ID, sibling_reply)

        @settings(max_examples=200, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(hostile_streams())
        def feed(case: tuple[bytes, list[int]]) -> None:
            data, cuts = case
            theirs_r, ours_w = os.pipe()     # fuzz bytes -> router
            ours_r, theirs_w = os.pipe()     # router's answers -> drained
            stream = Stream(core, theirs_r, theirs_w, 'fuzz')
            core.add_child(stream, FUZZ_ID)
            router.loop.defer(stream.start)
            modules = set(sys.modules)
            Watch.seen = []
            Watch.on = True
            try:
                pos = 0
                for size in cuts + [len(data)]:
                    chunk = data[pos:pos + size]
                    pos += len(chunk)
                    if chunk and not stream.closed:
                        os.write(ours_w, chunk)
                        # Any exception out of the stream or router fails
                        # the test right here.
                        router.loop.run_until(
                            lambda: stream.closed or
                            stream.bytes_in == pos, 10)
                event('closed on a bad frame' if stream.closed
                      else 'all frames read')
                event('answered' if stream.bytes_out else 'never answered')
                os.close(ours_w)
                assert router.loop.run_until(lambda: stream.closed, 10)
            finally:
                Watch.on = False
                os.close(ours_r)
            assert Watch.seen == []
            assert set(sys.modules) == modules
            assert executed == []
            assert sibling.sent == [] and not sibling_reply.is_set
            assert core.routes[SIBLING_ID] is sibling
        feed()
