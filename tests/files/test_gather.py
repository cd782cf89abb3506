"""plasmid.gather_file: one file from each of many contexts, each to a
local file of its own, all of them reading at once; the failures of some
do not stop the others."""
from __future__ import annotations

import errno
import os
import time
from typing import Iterator

import pytest

import plasmid
from plasmid.files import transfer
from testbed.copies import leftovers, timed_out_waits
from testbed.procs import stopped
from testbed.disks import small_disk
from testbed.pythons import require_python

CHUNK = 64 * 1024


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def serving(context: plasmid.Context, directory, data: bytes):
    """*context* working in *directory*, which holds *data* as 'data'."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, 'data'), 'wb') as f:
        f.write(data)
    context.call(os.chdir, str(directory))
    return context


def test_each_file_lands_in_a_file_of_its_own(router, tmp_path) -> None:
    """Contexts on Python 2.7, 3.13 and the master's, one behind an
    intermediary; files of several chunks, one empty; the destination
    named by each context's name or id."""
    contexts = [router.local(name='old', python_path=require_python('2.7')),
                router.local(name='new', python_path=require_python('3.13')),
                router.local(name='below', via=router.local(name='middle')),
                router.local(name='empty')]
    data = {context: os.urandom(CHUNK * i + 7) for i, context in
            enumerate(contexts[:3])}
    data[contexts[3]] = b''
    for context in contexts:
        serving(context, tmp_path / 'there' / context.name, data[context])
    (tmp_path / 'here').mkdir()
    sizes = plasmid.gather_file(contexts, 'data',
                                str(tmp_path / 'here' / '{name}-{id}'),
                                chunk_size=CHUNK)
    assert sizes == {context: len(data[context]) for context in contexts}
    for context in contexts:
        path = tmp_path / 'here' / ('%s-%d' % (context.name,
                                               context.context_id))
        assert path.read_bytes() == data[context]
    assert leftovers(tmp_path / 'here') == []


def test_a_function_may_name_the_destinations(router, tmp_path) -> None:
    contexts = [serving(router.local(), tmp_path / str(i), b'%d' % i)
                for i in range(2)]
    plasmid.gather_file(contexts, 'data',
                        lambda context: tmp_path / ('from-%d' %
                                                    contexts.index(context)))
    assert [(tmp_path / ('from-%d' % i)).read_bytes() for i in range(2)] == \
        [b'0', b'1']


@pytest.mark.parametrize('size', [100, 3 * CHUNK + 1])
def test_the_failures_of_some_leave_the_others_whole(router, tmp_path,
                                                      size) -> None:
    """A context without the file, one lost before the copy and one busy
    past the timeout are named with their errors; the others' files are
    in place, and no temporary file is left here."""
    fine = [serving(router.local(name='fine %d' % i), tmp_path / str(i),
                    os.urandom(size)) for i in range(2)]
    missing = serving(router.local(name='missing'), tmp_path / 'm', b'')
    os.unlink(tmp_path / 'm' / 'data')
    lost = router.local(name='lost')
    lost.shutdown()
    busy = serving(router.local(name='busy'), tmp_path / 'b', b'x')
    nap = busy.call_async(time.sleep, 1.5)
    (tmp_path / 'here').mkdir()
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.gather_file([missing] + fine + [lost, busy], 'data',
                            tmp_path / 'here' / '{name}', chunk_size=CHUNK,
                            timeout=0.3)
    failures = caught.value.failures
    assert list(failures) == [missing, lost, busy]
    assert failures[missing].type_name == 'FileNotFoundError'
    assert isinstance(failures[lost], plasmid.ContextLost)
    assert isinstance(failures[busy], plasmid.TimeoutError)
    assert caught.value.copied == {context: size for context in fine}
    assert '3 of 5 copies failed' in str(caught.value)
    assert sorted(os.listdir(tmp_path / 'here')) == ['fine 0', 'fine 1']
    for i, context in enumerate(fine):
        assert (tmp_path / 'here' / context.name).read_bytes() == \
            (tmp_path / str(i) / 'data').read_bytes()
    nap.result()


def test_stopped_contexts_wait_out_one_timeout_together(
        router, tmp_path, monkeypatch) -> None:
    """Three stopped contexts fail with TimeoutError naming the timeout,
    the running one's file is in place, and the master waits for them
    until one moment: their waits overlap.  Before, each was waited for
    the whole timeout after the one before it gave up: three times it."""
    timed_out = timed_out_waits(monkeypatch, transfer)
    timeout = 2
    frozen = [serving(router.local(name='stopped %d' % i), tmp_path / str(i),
                      b'x') for i in range(3)]
    running = serving(router.local(name='running'), tmp_path / 'r', b'data')
    (tmp_path / 'here').mkdir()
    with stopped(frozen):
        with pytest.raises(plasmid.CopyFailures) as caught:
            plasmid.gather_file(frozen + [running], 'data',
                                tmp_path / 'here' / '{name}',
                                timeout=timeout)
    # One wait each, all until the same moment (the time no clock
    # measures here: a busy machine may make the call itself slow).
    assert len(timed_out) == 3
    assert len({deadline for deadline, _ in timed_out}) == 1
    assert {wait for _, wait in timed_out} == {timeout}
    failures = caught.value.failures
    assert list(failures) == frozen
    assert all(isinstance(error, plasmid.TimeoutError)
               for error in failures.values())
    assert [str(error) for error in failures.values()] == \
        ['no result within 2s'] * 3
    assert caught.value.copied == {running: 4}
    assert os.listdir(tmp_path / 'here') == ['running']


def test_two_contexts_to_one_path_are_refused_before_anything_moves(
        router, tmp_path) -> None:
    contexts = [serving(router.local(), tmp_path / str(i), b'x')
                for i in range(2)]
    with pytest.raises(ValueError, match='put {name} or {id}'):
        plasmid.gather_file(contexts, 'data', tmp_path / 'one')
    assert sorted(os.listdir(tmp_path)) == ['0', '1']


@pytest.mark.parametrize('template', ['{host}.log', '{0}.log', '{name'])
def test_a_destination_naming_other_fields_is_refused(
        router, tmp_path, template) -> None:
    """It failed with a bare KeyError ('host') from inside the copy."""
    source = serving(router.local(), tmp_path / 'src', b'x')
    with pytest.raises(ValueError, match='may name {name} and {id} only'):
        plasmid.gather_file([source], 'data', str(tmp_path / template))
    assert os.listdir(tmp_path) == ['src']


@pytest.mark.parametrize('named_by', ['template', 'function'])
def test_a_destination_may_be_bytes(router, tmp_path, named_by) -> None:
    """As fetch_file's, put_file's and open()'s: a template of bytes was
    refused, and a function's bytes failed each copy with an
    AttributeError ("'bytes' object has no attribute 'encode'")."""
    source = serving(router.local(name='src'), tmp_path / 'src', b'x')
    here = os.fsencode(tmp_path) + b'/got-'
    if named_by == 'template':
        destination = here + b'{name}'
    else:
        destination = lambda context: here + context.name.encode()
    assert plasmid.gather_file([source], 'data', destination) == {source: 1}
    assert (tmp_path / 'got-src').read_bytes() == b'x'
    assert sorted(os.listdir(tmp_path)) == ['got-src', 'src']


@pytest.mark.parametrize('destination, error', [
    (42, TypeError), (lambda context: None, TypeError),
    ('/tmp/a\x00{name}', ValueError), (lambda context: b'a\x00b', ValueError)])
def test_a_destination_that_is_no_path_is_refused(router, tmp_path,
                                                  destination, error) -> None:
    """Before anything moves: a function's answer too."""
    source = serving(router.local(), tmp_path / 'src', b'x')
    with pytest.raises(error):
        plasmid.gather_file([source], 'data', destination)
    assert os.listdir(tmp_path) == ['src']


def test_a_nul_in_the_remote_path_is_refused(router, tmp_path) -> None:
    source = serving(router.local(), tmp_path / 'src', b'x')
    with pytest.raises(ValueError, match='a remote path may not contain'):
        plasmid.gather_file([source], 'da\x00ta', str(tmp_path / '{name}'))
    assert os.listdir(tmp_path) == ['src']


def test_no_contexts_copy_nothing(tmp_path) -> None:
    assert plasmid.gather_file([], 'data', tmp_path / '{name}') == {}
    assert os.listdir(tmp_path) == []


def test_a_full_disk_here_fails_that_copy_alone(router, tmp_path) -> None:
    """A copy that filled the disk raised a bare OSError (its clean-up's
    close() failed again), not CopyFailures, and left its temporary file;
    the others' clean-ups stopped at the first that raised."""
    small = [serving(router.local(name='small %d' % i), tmp_path / str(i),
                     os.urandom(10000)) for i in range(2)]
    big = serving(router.local(name='big'), tmp_path / 'b',
                  os.urandom(3 << 19))
    with small_disk(tmp_path / 'disk') as disk:
        with pytest.raises(plasmid.CopyFailures) as caught:
            plasmid.gather_file([small[0], big, small[1]], 'data',
                                disk / '{name}', chunk_size=1000)
        assert list(caught.value.failures) == [big]
        error = caught.value.failures[big]
        assert isinstance(error, OSError) and error.errno == errno.ENOSPC
        assert error.filename == str(disk / 'big')
        assert caught.value.copied == {context: 10000 for context in small}
        assert sorted(os.listdir(disk)) == ['small 0', 'small 1']


def test_a_pipe_to_read_fails_that_copy_alone(router, tmp_path) -> None:
    """Its open() waited for a writer for ever: that context's copy timed
    out, and every later call to it queued behind the open."""
    fine = serving(router.local(name='fine'), tmp_path / 'f', b'data')
    piped = router.local(name='piped')
    os.makedirs(tmp_path / 'p')
    os.mkfifo(tmp_path / 'p' / 'data')
    piped.call(os.chdir, str(tmp_path / 'p'))
    (tmp_path / 'here').mkdir()
    try:
        with pytest.raises(plasmid.CopyFailures) as caught:
            plasmid.gather_file([fine, piped], 'data',
                                tmp_path / 'here' / '{name}', timeout=30)
        error = caught.value.failures[piped]
        assert isinstance(error, plasmid.CallError), error
        assert "it is a named pipe, not a regular file: not copied: " \
            "'data'" in error.message
        assert caught.value.copied == {fine: 4}
        assert os.listdir(tmp_path / 'here') == ['fine']
        assert piped.call_async(os.getpid).result(30) == piped.info['pid']
    finally:
        try:  # a reader stuck opening it goes on
            os.close(os.open(tmp_path / 'p' / 'data',
                             os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
