"""A context's logging, print() and subprocess output reach the master's
logger 'plasmid.ctx.<name>', in order, and none is lost at shutdown."""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import Iterator

import pytest

import plasmid
from plasmid.core.stream import BURST_SIZE, HIGH_WATER

# The remote functions live with the master tests; contexts fetch them
# from this process by module name.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, 'master'))
import local_fns  # noqa: E402
import logger_fns  # noqa: E402


@pytest.fixture(autouse=True)
def capture_everything(caplog: pytest.LogCaptureFixture) -> None:
    # Before any context starts: a context forwards from the level its
    # logger had when it was started.
    caplog.set_level(logging.DEBUG, logger='plasmid.ctx')


def from_context(caplog: pytest.LogCaptureFixture, name: str,
                 origins: tuple[str, ...] = ()) -> list[tuple[str, int, str]]:
    """(origin, level, text) of the records context *name* sent, but for
    plasmid's own (debug records of its internals may come and go)."""
    return [(r.plasmid_origin, r.levelno, r.getMessage())
            for r in caplog.records
            if r.name == 'plasmid.ctx.' + name and
            not r.plasmid_origin.startswith('plasmid') and
            (not origins or r.plasmid_origin in origins)]


def test_records_and_prints_arrive_in_order_before_the_result(
        caplog: pytest.LogCaptureFixture) -> None:
    with plasmid.Router() as router:
        ctx = router.local(name='order')
        assert ctx.call(local_fns.chatter, 50, 'a') == 50
        # Everything the call emitted was handled before call() returned.
        got = from_context(caplog, 'order')
        want = []
        for i in range(50):
            want.append(('local_fns.chatter', logging.WARNING,
                         'a record %d' % i))
            want.append(('stdout', logging.INFO, 'a line %d' % i))
        assert got == want
        # A second call's output follows the first's.
        ctx.call(local_fns.chatter, 1, 'b')
        assert from_context(caplog, 'order')[-2:] == [
            ('local_fns.chatter', logging.WARNING, 'b record 0'),
            ('stdout', logging.INFO, 'b line 0')]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_bytes_written_to_stdouts_buffer_arrive(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """sys.stdout had no buffer nor closed: such code failed remotely."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='binary', python_path=require_python(version))
        assert ctx.call(logger_fns.write_bytes_to_stdout,
                        b'caf\xc3\xa9 bytes\n') == 'written'
        assert ('stdout', logging.INFO, u'caf\u00e9 bytes') in \
            from_context(caplog, 'binary')


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_character_written_in_pieces_arrives_whole(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """Each piece was decoded alone: a character cut in two arrived as
    two replacement characters."""
    from testbed.pythons import require_python
    text = u'h\u00e9 \u2713 \U0001f600 end\n'
    with plasmid.Router() as router:
        ctx = router.local(name='pieces', python_path=require_python(version))
        ctx.call(logger_fns.write_bytes_to_stdout_a_byte_at_a_time, text)
    assert from_context(caplog, 'pieces') == [
        ('stdout', logging.INFO, text[:-1])]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_output_without_line_ends_goes_in_pieces(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """It was all held until a line end or flush: memory without bound,
    and one record that a large enough flood made too big to send."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='flood', python_path=require_python(version))
        ctx.call(logger_fns.write_without_line_ends, u'12345678\r', 30000)
    pieces = [text for origin, level, text in from_context(caplog, 'flood')]
    assert u''.join(pieces) == u'12345678\r' * 30000
    assert len(pieces) > 2
    assert max(len(piece) for piece in pieces) < 2 * 65536


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_lines_two_threads_print_arrive_in_the_order_written(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """A line was sent after sys.stdout's lock was let go: a second
    thread's line, written later, could reach the master first."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='threads', python_path=require_python(version))
        ctx.call(logger_fns.print_from_two_threads_the_first_slow_to_send)
    assert from_context(caplog, 'threads') == [
        ('stdout', logging.INFO, 'first'), ('stdout', logging.INFO, 'second')]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_stdout_answers_as_a_text_stream_does(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """reconfigure, name, mode, writable... raised AttributeError."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='stream', python_path=require_python(version))
        assert ctx.call(logger_fns.use_stdout_as_a_text_stream) is False
        # Closing flushes; the stream stays open for the next call.
        ctx.call(local_fns.print_lines, 1, 'next call')
    assert from_context(caplog, 'stream') == [
        ('stdout', logging.INFO, '<stdout> w True False False'),
        ('stdout', logging.INFO, 'inside with, no line end'),
        ('stdout', logging.INFO, 'after close'),
        ('stdout', logging.INFO, 'next call 0')]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_stdout_buffer_takes_what_a_buffer_takes(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """A memoryview broke every later print; a bytearray raised; write()
    counted characters, not bytes, so a loop on its count sent again."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='views', python_path=require_python(version))
        assert ctx.call(logger_fns.write_bytes_like_to_stdout_buffer) == \
            [5, 6, 11]
    assert from_context(caplog, 'views') == [
        ('stdout', logging.INFO, u'view array h\u00e9llo \u2713'),
        ('stdout', logging.INFO, 'printed after')]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_a_record_that_cannot_be_formatted_does_not_fail_the_call(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """The handler raised into the logging call (the call failed), where
    logging reports it on stderr and goes on."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='badrec', python_path=require_python(version))
        assert ctx.call(logger_fns.log_what_cannot_be_formatted) == 'logged'
    got = from_context(caplog, 'badrec')
    assert ('app', logging.WARNING, 'after') in got
    said = [text for origin, _, text in got if origin == 'stderr']
    assert said.count('ValueError: no str') == 2, got  # a traceback each


def test_a_line_over_the_message_size_arrives_cut_with_a_note(
        caplog: pytest.LogCaptureFixture) -> None:
    """It was dropped without a word."""
    with plasmid.Router(max_message_size=64 * 1024) as router:
        ctx = router.local(name='huge')
        ctx.call(logger_fns.print_text_of, 100000)
        ctx.call(local_fns.print_lines, 1, 'then')
    (origin, level, text), after = from_context(caplog, 'huge')
    assert text.startswith('x' * 1024 + ' [plasmid: 98976 more characters '
                           'not sent: ') and origin == 'stdout'
    assert after == ('stdout', logging.INFO, 'then 0')


def test_record_attributes(caplog: pytest.LogCaptureFixture) -> None:
    with plasmid.Router() as router:
        ctx = router.local(name='attrs')
        ctx.call(local_fns.log_levels, 'x')
        ctx.call(local_fns.print_to_stderr, 'to stderr')
        ctx.call(local_fns.log_exception, 'oops')
    records = [r for r in caplog.records if r.name == 'plasmid.ctx.attrs']
    assert records
    assert all(r.plasmid_context == 'attrs' for r in records)
    got = from_context(caplog, 'attrs')
    assert len(got) == 6
    assert got[:5] == [
        ('local_fns.levels', logging.DEBUG, 'x debug'),
        ('local_fns.levels', logging.INFO, 'x info'),
        ('local_fns.levels', logging.WARNING, 'x warning'),
        ('local_fns.levels', logging.ERROR, 'x error'),
        ('stderr', logging.INFO, 'to stderr'),
    ]
    origin, level, text = got[5]
    # The remote traceback travels with the record.
    assert (origin, level) == ('local_fns.exc', logging.ERROR)
    assert text.startswith('oops caught\nTraceback')
    assert "KeyError: 'oops'" in text


def test_level_set_before_start_filters(
        caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger('plasmid.ctx.quiet')
    logger.setLevel(logging.ERROR)
    try:
        with plasmid.Router() as router:
            ctx = router.local(name='quiet')
            ctx.call(local_fns.log_levels, 'q')
    finally:
        logger.setLevel(logging.NOTSET)
    assert from_context(caplog, 'quiet') == [
        ('local_fns.levels', logging.ERROR, 'q error')]


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_fd_output_arrives_before_the_calls_result(
        caplog: pytest.LogCaptureFixture, version: str) -> None:
    """What a call (or its subprocess) wrote to fd 1 or 2 before it
    returned is forwarded before its reply.  It was left to the loop,
    which nobody runs during a quick call: the line trailed the reply and
    reached a threadless master only at its next wait."""
    from testbed.pythons import require_python
    with plasmid.Router() as router:
        ctx = router.local(name='sub', python_path=require_python(version))
        for i in range(20):
            ctx.call(logger_fns.write_to_fd_1, b'quick %d\n' % i)
            assert from_context(caplog, 'sub')[-1] == (
                'stdout', logging.INFO, 'quick %d' % i)
        assert ctx.call(local_fns.system_echo, 'out-from-echo') == 0
        assert from_context(caplog, 'sub')[-1] == (
            'stdout', logging.INFO, 'out-from-echo')
        assert ctx.call(local_fns.system_echo, 'err-from-echo', True) == 0
        assert from_context(caplog, 'sub')[-1] == (
            'stderr', logging.INFO, 'err-from-echo')


def test_fd_output_without_line_ends_is_forwarded_in_pieces(
        caplog: pytest.LogCaptureFixture) -> None:
    """The reader kept what had no line end yet and copied it whole at
    each read: quadratic time (32 MiB: ~20 s), memory without bound, and
    one record of it all at the end (dropped if over the message size)."""
    size = 4 << 20
    with plasmid.Router() as router:
        ctx = router.local(name='unended')
        assert ctx.call(logger_fns.fd_output_without_line_ends, size) == 0
    pieces = [text for origin, _, text in from_context(caplog, 'unended')
              if origin == 'stdout']
    assert sum(map(len, pieces)) == size
    assert len(pieces) > 20 and max(map(len, pieces)) <= 2 * 65536


def test_fd_output_in_pieces_keeps_its_characters_whole(
        caplog: pytest.LogCaptureFixture) -> None:
    """A piece of a long line was decoded alone: where it cut a
    character's UTF-8 bytes, both halves arrived as replacement marks."""
    text = u'x' + u'\u00e9' * 300000  # each character's bytes at odd offsets
    with plasmid.Router() as router:
        ctx = router.local(name='cut')
        ctx.call(logger_fns.write_to_fd_1, text.encode('utf-8'))
    pieces = [text for origin, _, text in from_context(caplog, 'cut')
              if origin == 'stdout']
    assert len(pieces) > 1
    assert u''.join(pieces) == text


@pytest.mark.parametrize('func', [local_fns.print_lines,
                                  local_fns.system_lines],
                         ids=['print', 'subprocess'])
def test_no_output_lost_at_shutdown(caplog: pytest.LogCaptureFixture,
                                    func) -> None:
    with plasmid.Router() as router:
        ctx = router.local(name='burst')
        ctx.call_no_reply(func, 500, 'burst')
        # Leave at once: shutdown must let the call finish and drain it.
    lines = [text for origin, _, text in
             from_context(caplog, 'burst', ('stdout',))]
    assert lines == ['burst %d' % i for i in range(500)]


class _SlowAtFirst(logging.Handler):
    """Takes 1.5 s over the first record it sees (a slow disk, terminal
    or log server), then counts the lines it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not self.lines:
            time.sleep(1.5)
        if getattr(record, 'plasmid_origin', None) == 'stdout':
            self.lines.append(record.getMessage())


@contextlib.contextmanager
def _slow_at_first(name: str) -> Iterator[_SlowAtFirst]:
    """A _SlowAtFirst on the records of context *name*, for the block."""
    handler = _SlowAtFirst()
    ctx_logger = logging.getLogger('plasmid.ctx.' + name)
    ctx_logger.addHandler(handler)
    try:
        yield handler
    finally:
        ctx_logger.removeHandler(handler)


def _queue_a_flood(context: plasmid.Context) -> None:
    """*context* prints 2000 lines of 4 KiB while the master reads nothing
    for a second: most of them queue on the way."""
    context.call_no_reply(local_fns.print_lines, 2000, 'x' * 4096)
    time.sleep(1)


def test_output_queued_at_shutdown_waits_for_a_master_that_reads_slowly(
        ) -> None:
    """A context exiting gave what it had queued for the master a second,
    whatever the master's shutdown timeout: 8 MiB printed before a
    shutdown, read by a master busy for 1.5 s with its first record, lost
    about half.  SHUTDOWN now says how long the master waits."""
    with _slow_at_first('slow-reader') as handler:
        router = plasmid.Router()
        ctx = router.local(name='slow-reader')
        _queue_a_flood(ctx)
        router.shutdown(timeout=60)
    assert len(handler.lines) == 2000
    assert handler.lines[-1] == 'x' * 4096 + ' 1999'


def test_an_intermediary_shut_down_gives_its_children_its_flush_time(
        ) -> None:
    """An intermediary told to shut down told its own children to with no
    flush time (a second): a child's output queued behind a slow master
    was lost, half of it.  It now passes on most of the time it got."""
    with _slow_at_first('slow-below') as handler:
        router = plasmid.Router()
        top = router.local(name='slow-top')
        below = router.local(name='slow-below', via=top)
        _queue_a_flood(below)
        top.shutdown(timeout=60)
        router.shutdown()
    assert len(handler.lines) == 2000
    assert handler.lines[-1] == 'x' * 4096 + ' 1999'


def test_a_context_shutting_its_child_down_without_limit_lets_it_flush(
        ) -> None:
    """Context.shutdown(timeout=None) from a context told the child it had
    no time at all to flush (None was sent as the seconds): output queued
    behind a slow master was cut.  No limit is now a long flush."""
    with _slow_at_first('slow-child') as handler:
        router = plasmid.Router()
        top = router.local(name='slow-parent')
        below = router.local(name='slow-child', via=top)
        _queue_a_flood(below)
        assert top.call(local_fns.shut_down, below, None) is False
        router.shutdown()
    assert len(handler.lines) == 2000
    assert handler.lines[-1] == 'x' * 4096 + ' 1999'


def test_output_of_via_contexts(caplog: pytest.LogCaptureFixture) -> None:
    with plasmid.Router() as router:
        top = router.local(name='top')
        below = router.local(name='below', via=top)
        assert below.call(local_fns.chatter, 3, 'deep') == 3
        got = from_context(caplog, 'below')
        assert got == [item for i in range(3) for item in (
            ('local_fns.chatter', logging.WARNING, 'deep record %d' % i),
            ('stdout', logging.INFO, 'deep line %d' % i))]
        assert from_context(caplog, 'top', ('local_fns.chatter',)) == []


@pytest.mark.parametrize('source', ['itself', 'a child'])
def test_a_flood_on_fd_1_waits_while_the_master_reads_nothing(
        caplog: pytest.LogCaptureFixture, tmp_path, source: str) -> None:
    """Output that outran the master (reading nothing between calls, or a
    slow link) piled up in memory without bound: 400 MiB from a child grew
    its intermediary by ~480 MiB.  Now what the loop reads into a link, a
    capture pipe or a child's link, waits once HIGH_WATER bytes are queued
    on it (a child's read may add one burst); nothing is lost."""
    lines = 48 * 1024  # 48 MiB, far above HIGH_WATER
    with plasmid.Router() as router:
        top = router.local(name='flooded')
        writer = router.local(via=top, name='below') \
            if source == 'a child' else top
        watched = str(tmp_path / 'most-queued')
        top.call(logger_fns.watch_queued, watched, 2.0)
        flooding = writer.call_async(logger_fns.flood, lines)
        time.sleep(1.5)  # the master reads nothing meanwhile
        most = int(open(watched).read())
        assert HIGH_WATER < most <= HIGH_WATER + BURST_SIZE + 2 ** 20, most
        assert flooding.result(timeout=120) == lines
    written = [r for r in caplog.records
               if r.name == 'plasmid.ctx.' + writer.name and
               r.plasmid_origin == 'stdout']
    assert len(written) == lines


def test_a_signal_handler_may_print_in_the_middle_of_a_print(
        caplog: pytest.LogCaptureFixture) -> None:
    """sys.stdout's lock did not let the thread that held it in: a signal
    handler that printed while the main thread was writing waited for
    ever (so did the call, and every later one)."""
    with plasmid.Router() as router:
        ctx = router.local(name='signalled')
        assert ctx.call_async(
            logger_fns.print_in_a_signal_handler_during_a_write).result(
                timeout=10) == 'returned'
    assert ('stdout', logging.INFO, 'printed by the handler') in \
        from_context(caplog, 'signalled')
