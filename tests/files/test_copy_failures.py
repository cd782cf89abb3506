"""File copies that go wrong part-way: a source that changes or fails to
read, a link lost, a message limit, a context that does not answer.  Each
fails clearly (naming the file and the context) or copies what the file
was, and leaves no temporary file behind."""
from __future__ import annotations

import os
import signal
import time
from typing import Any, Callable, Iterator, Optional

import pytest

import plasmid
from plasmid.files import remote, transfer
from testbed.copies import leftovers
from testbed.procs import stopped
from testbed.pythons import require_python

CHUNK = 64 * 1024


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


class Meddling:
    """Stands in for a context: passes calls on, and runs *meddle* once,
    when the first call of *func_name* (None: of any function) has been
    sent (*when* 'sent') or its answer collected ('answered'): something
    done to the copy at a known step, with the real context doing the
    rest."""

    def __init__(self, context: plasmid.Context, func_name: Optional[str],
                 when: str, meddle: Callable[[], Any]) -> None:
        self.context = context
        self.router = context.router  # its message limit sizes chunks
        self.name = context.name
        self.func_name = func_name
        self.when = when
        self.meddle = meddle
        self.meddled = False

    def call_async(self, func, *args: Any) -> Any:
        future = self.context.call_async(func, *args)
        if self.meddled or self.func_name not in (None, func.__name__):
            return future
        self.meddled = True
        if self.when == 'sent':
            self.meddle()
            return future
        meddle = self.meddle

        class Meddled:
            def result(self, timeout=None):
                try:
                    return future.result(timeout)
                finally:
                    meddle()
        return Meddled()

    def call_no_reply(self, func, *args: Any) -> None:
        self.context.call_no_reply(func, *args)


def appending(path, data: bytes) -> Callable[[], None]:
    def append() -> None:
        with open(path, 'ab') as f:
            f.write(data)
    return append


def test_a_file_that_grows_is_copied_as_it_was_when_the_copy_began(
        router, tmp_path) -> None:
    """Both ways.  The copy read on to the file's end, wherever that had
    moved meanwhile: a file written faster than the link carried it (a
    busy log; /proc/self/pagemap) was never done copying, and filled the
    target's disk."""
    ctx = router.local()
    data = os.urandom(4 * CHUNK + 5)
    source = tmp_path / 'source'
    source.write_bytes(data)
    growing = Meddling(ctx, 'write', 'sent',
                       appending(source, b'later' * CHUNK))
    assert plasmid.put_file(growing, source, str(tmp_path / 'put'),
                            chunk_size=CHUNK) == len(data)
    assert (tmp_path / 'put').read_bytes() == data
    there = tmp_path / 'there'
    there.write_bytes(data)
    growing = Meddling(ctx, None, 'answered',  # the first read
                       appending(there, b'later' * CHUNK))
    assert plasmid.fetch_file(growing, str(there), tmp_path / 'fetched',
                              chunk_size=CHUNK, window=1) == len(data)
    assert (tmp_path / 'fetched').read_bytes() == data
    assert leftovers(tmp_path) == []


def test_a_file_without_a_size_is_read_to_its_end(router, tmp_path) -> None:
    """/proc's files say they have none; copied whole all the same."""
    ctx = router.local()
    mine = _environ()
    assert plasmid.put_file(ctx, '/proc/self/environ',
                            str(tmp_path / 'put'), chunk_size=100) == \
        len(mine)
    assert (tmp_path / 'put').read_bytes() == mine
    size = plasmid.fetch_file(ctx, '/proc/self/environ',
                              tmp_path / 'fetched', chunk_size=100)
    theirs = ctx.call(remote.read, '/proc/self/environ', 0, 1 << 20)
    assert size == len(theirs) > 100
    assert (tmp_path / 'fetched').read_bytes() == theirs


def _environ() -> bytes:
    with open('/proc/self/environ', 'rb') as f:
        return f.read()


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_fetch_of_a_file_replaced_meanwhile_fails(router, tmp_path,
                                                    version) -> None:
    """A log rotated, a file updated by a rename (as a put does): each
    read opens the file anew, and the copy was made of the old file's
    start and the new one's end, a file that never was, without a word."""
    ctx = router.local(python_path=version and require_python(version))
    there = tmp_path / 'there'
    there.write_bytes(b'o' * (4 * CHUNK))
    (tmp_path / 'new').write_bytes(b'n' * (4 * CHUNK))
    here = tmp_path / 'here'
    here.write_bytes(b'kept')

    def replace() -> None:
        os.rename(tmp_path / 'new', there)
    replacing = Meddling(ctx, None, 'answered', replace)  # the first read
    with pytest.raises(plasmid.CallError) as caught:
        plasmid.fetch_file(replacing, str(there), here, chunk_size=CHUNK,
                           window=1)
    assert caught.value.type_name == 'OSError'
    assert 'it was replaced during the copy' in caught.value.message
    assert repr(str(there)) in caught.value.message
    assert here.read_bytes() == b'kept'
    assert sorted(os.listdir(tmp_path)) == ['here', 'there']
    # The file that took its place is copied, by the next fetch.
    assert plasmid.fetch_file(ctx, str(there), here, chunk_size=CHUNK) == \
        4 * CHUNK
    assert here.read_bytes() == b'n' * (4 * CHUNK)


@pytest.mark.parametrize('copy', ['put_file', 'broadcast_file'])
def test_a_local_file_that_fails_to_read_is_named(router, tmp_path,
                                                  copy) -> None:
    """/proc/self/mem: it opens, and its read fails (EIO), as a failing
    disk's would: that said "[Errno 5] Input/output error" alone."""
    ctx = router.local()
    with pytest.raises(OSError) as caught:
        if copy == 'put_file':
            plasmid.put_file(ctx, '/proc/self/mem', str(tmp_path / 'x'))
        else:
            plasmid.broadcast_file([ctx], '/proc/self/mem',
                                   str(tmp_path / 'x'))
    assert caught.value.filename == '/proc/self/mem'
    assert "'/proc/self/mem'" in str(caught.value)
    assert os.listdir(tmp_path) == []
    assert ctx.call(os.getpid) == ctx.info['pid']  # still answers


def test_copies_to_many_fit_a_small_message_limit(tmp_path) -> None:
    """As put_file and fetch_file do: at a Router(max_message_size=4096)
    every copy failed, a broadcast's with "a message of 50175 bytes exceeds
    the 4096 byte limit", a gather's as "the result could not be sent"."""
    data = os.urandom(50000)
    (tmp_path / 'src').write_bytes(data)
    with plasmid.Router(max_message_size=4096) as small:
        contexts = [small.local(name='a'), small.local(name='b')]
        assert plasmid.broadcast_file(contexts, tmp_path / 'src',
                                      str(tmp_path / 'copy')) == len(data)
        assert (tmp_path / 'copy').read_bytes() == data
        assert plasmid.gather_file(contexts, str(tmp_path / 'copy'),
                                   tmp_path / 'back-{name}') == \
            {context: len(data) for context in contexts}
    for name in ('a', 'b'):
        assert (tmp_path / ('back-' + name)).read_bytes() == data
    assert leftovers(tmp_path) == []


def _wait_for_no_leftovers(directory, seconds: float) -> list[str]:
    """The temporary files still in *directory* once they are all gone or
    *seconds* have passed."""
    give_up = time.monotonic() + seconds
    while leftovers(directory) and time.monotonic() < give_up:
        time.sleep(0.05)
    return leftovers(directory)


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_target_that_loses_its_parent_removes_its_temporary_file(
        router, tmp_path, version) -> None:
    """The intermediary killed mid-put: the target, cut off, ended and
    left the copy's temporary file for good, though it was still there to
    remove it (the master cannot: its link to the target is gone)."""
    middle = router.local(name='middle')
    target = router.local(name='target', via=middle,
                          python_path=version and require_python(version))
    (tmp_path / 'source').write_bytes(os.urandom(64 * CHUNK))
    (tmp_path / 'dest').mkdir()
    killing = Meddling(target, 'write', 'answered',
                       lambda: os.kill(middle.info['pid'], signal.SIGKILL))
    with pytest.raises(plasmid.ContextLost) as caught:
        plasmid.put_file(killing, tmp_path / 'source',
                         str(tmp_path / 'dest' / 'file'), chunk_size=CHUNK)
    assert _wait_for_no_leftovers(tmp_path / 'dest', 10) == []
    assert os.listdir(tmp_path / 'dest') == []
    assert 'put_file to target' in str(caught.value)


@pytest.mark.parametrize('copy', ['put_file', 'fetch_file'])
def test_a_lost_context_or_a_timeout_names_the_copy(router, tmp_path,
                                                    copy) -> None:
    """They said "context 1 is gone: it was shut down" (an id, no name)
    and "no result within 0.5s", naming neither the file nor the
    context."""
    (tmp_path / 'source').write_bytes(os.urandom(3 * CHUNK))
    path = str(tmp_path / 'source' if copy == 'fetch_file'
               else tmp_path / 'copy')
    local = tmp_path / ('back' if copy == 'fetch_file' else 'source')
    words = '%s %s web1 (%r): ' % (copy, 'from' if copy == 'fetch_file'
                                   else 'to', path)

    def copied(context, **kwargs) -> None:
        if copy == 'fetch_file':
            plasmid.fetch_file(context, path, local, **kwargs)
        else:
            plasmid.put_file(context, local, path, **kwargs)
    ctx = router.local(name='web1')
    for chunk_size in (CHUNK, 4 * CHUNK):  # streamed, then in one call
        with stopped([ctx]):
            with pytest.raises(plasmid.TimeoutError) as timed_out:
                copied(ctx, chunk_size=chunk_size, timeout=0.5)
        assert str(timed_out.value) == words + 'no result within 0.5s'
    ctx.call(os.getpid)  # after what the copies left queued
    ctx.shutdown()
    with pytest.raises(plasmid.ContextLost) as lost:
        copied(ctx)
    assert str(lost.value) == words + 'context %d is gone: it was shut ' \
        'down' % ctx.context_id
    assert leftovers(tmp_path) == []


def test_many_copies_failures_name_the_file(router, tmp_path) -> None:
    (tmp_path / 'source').write_bytes(b'data')
    gone = router.local(name='gone')
    gone.shutdown()
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.broadcast_file([gone], tmp_path / 'source',
                               str(tmp_path / 'copy'))
    assert str(caught.value).startswith(
        "broadcast_file to %r: 1 of 1 copies failed:\n  gone: ContextLost: "
        % str(tmp_path / 'copy'))
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.gather_file([gone], str(tmp_path / 'source'),
                            tmp_path / 'back')
    assert str(caught.value).startswith(
        "gather_file from %r: 1 of 1 copies failed:\n  gone: ContextLost: "
        % str(tmp_path / 'source'))
    assert caught.value.copy == 'gather_file from %r' % str(
        tmp_path / 'source')
    assert transfer.CopyFailures({}, {}).copy == ''
