"""plasmid.put_file and plasmid.fetch_file: files stream to and from
contexts in chunks, a bounded number on their way, and appear whole or not
at all."""
from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

import pytest

import plasmid
from plasmid.files import remote, transfer
from testbed.copies import leftovers
from testbed.disks import small_disk
from testbed.pythons import require_python

CHUNK = 64 * 1024  # small chunks: a 1 MiB file takes many


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


class CountingContext:
    """Stands in for a context: passes calls on, and counts them and the
    answers not yet collected."""

    def __init__(self, context: plasmid.Context) -> None:
        self.context = context
        self.router = context.router  # its message limit sizes chunks
        self.calls: list[str] = []
        self.unanswered = 0
        self.most_unanswered = 0

    def call(self, func, *args: Any) -> Any:
        self.calls.append(func.__name__)
        return self.context.call(func, *args)

    def call_async(self, func, *args: Any) -> Any:
        self.calls.append(func.__name__)
        self.unanswered += 1
        self.most_unanswered = max(self.most_unanswered, self.unanswered)
        future = self.context.call_async(func, *args)
        counter = self

        class Counted:
            def result(self, timeout=None):
                counter.unanswered -= 1
                return future.result(timeout)
        return Counted()


def mode_of(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize('version', [None, '2.7', '3.6', '3.13'])
def test_a_file_goes_and_comes_back_whole(router, tmp_path, version,
                                          monkeypatch) -> None:
    """Bytes of every value, a name beyond ASCII (Python 2 and 3.6 in the
    C locale, which the context inherits here, encode paths as ASCII), many
    chunks with at most a window of them unanswered."""
    python = version and require_python(version)
    monkeypatch.setenv('LC_ALL', 'C')
    counted = CountingContext(router.local(python_path=python))
    data = bytes(range(256)) * 4096 + b'tail'  # 1 MiB and a bit
    source = tmp_path / 'source.bin'
    source.write_bytes(data)
    there = tmp_path / 'th\u00e9re.bin'
    assert plasmid.put_file(counted, source, str(there), chunk_size=CHUNK,
                            window=3) == len(data)
    assert there.read_bytes() == data
    chunks = len(data) // CHUNK + 1
    assert counted.calls == ['write'] * chunks + ['commit']
    assert counted.most_unanswered == 3 + 1  # the window, then the commit
    counted.calls[:] = []
    counted.most_unanswered = 0
    back = tmp_path / 'back.bin'
    assert plasmid.fetch_file(counted, str(there), back, chunk_size=CHUNK,
                              window=3) == len(data)
    assert back.read_bytes() == data
    # None past the end: the first answer said where it is.
    assert counted.calls == ['read_chunk'] * chunks
    assert counted.most_unanswered == 3
    assert leftovers(tmp_path) == []


def test_chunks_fit_a_small_message_limit(tmp_path) -> None:
    """The default 4 MiB chunk under Router(max_message_size=4096) failed
    with "a message of 4194460 bytes exceeds the 4096 byte limit"."""
    data = os.urandom(50000)
    (tmp_path / 'src').write_bytes(data)
    with plasmid.Router(max_message_size=4096) as small:
        ctx = small.local()
        assert plasmid.put_file(ctx, tmp_path / 'src',
                                str(tmp_path / 'dst')) == len(data)
        assert plasmid.fetch_file(ctx, str(tmp_path / 'dst'),
                                  tmp_path / 'back') == len(data)
    assert (tmp_path / 'back').read_bytes() == data


def test_a_small_file_costs_one_round_trip(router, tmp_path) -> None:
    counted = CountingContext(router.local())
    source = tmp_path / 'small'
    source.write_bytes(b'x' * 1000)
    assert plasmid.put_file(counted, source, str(tmp_path / 'copy')) == 1000
    assert counted.calls == ['put_whole']
    counted.calls[:] = []
    assert plasmid.fetch_file(counted, str(source), tmp_path / 'back') == 1000
    # One round trip: the window's reads go at once, three past the end.
    assert counted.calls == ['read_chunk'] * transfer.WINDOW
    assert counted.most_unanswered == transfer.WINDOW
    empty = tmp_path / 'empty'
    empty.write_bytes(b'')
    assert plasmid.put_file(counted, empty, str(tmp_path / 'empty2')) == 0
    assert (tmp_path / 'empty2').read_bytes() == b''


@pytest.mark.parametrize('size', [100, 3 * CHUNK + 5])
def test_modes_given_kept_or_as_a_new_files(router, tmp_path, size) -> None:
    ctx = router.local()
    umask = ctx.call(os.umask, 0o027)  # the context's umask from now on
    source = tmp_path / 'source'
    source.write_bytes(b'y' * size)
    os.chmod(source, 0o755)
    given = tmp_path / 'given'
    plasmid.put_file(ctx, source, str(given), mode=0o4711, chunk_size=CHUNK)
    assert mode_of(given) == 0o4711  # exactly: no umask applies
    new = tmp_path / 'new'
    plasmid.put_file(ctx, source, str(new), chunk_size=CHUNK)
    assert mode_of(new) == 0o640  # 0o666 less the context's umask
    kept = tmp_path / 'kept'
    kept.write_bytes(b'old')
    os.chmod(kept, 0o604)
    plasmid.put_file(ctx, source, str(kept), chunk_size=CHUNK)
    assert mode_of(kept) == 0o604 and kept.read_bytes() == b'y' * size
    os.chmod(kept, 0o600)
    plasmid.fetch_file(ctx, str(given), kept, chunk_size=CHUNK)
    assert mode_of(kept) == 0o600
    ctx.call(os.umask, umask)


def test_a_failed_copy_leaves_the_destination_and_no_temporary(
        router, tmp_path) -> None:
    ctx = router.local()
    source = tmp_path / 'source'
    source.write_bytes(b'z' * (2 * CHUNK))
    missing = tmp_path / 'no-such-dir' / 'file'
    for chunk_size in (CHUNK, 4 * CHUNK):  # streamed, then in one call
        with pytest.raises(plasmid.CallError) as caught:
            plasmid.put_file(ctx, source, str(missing), chunk_size=chunk_size)
        assert caught.value.type_name == 'FileNotFoundError'
        assert str(missing) in caught.value.message  # not the temporary's
    with pytest.raises(plasmid.CallError) as caught:
        plasmid.fetch_file(ctx, str(missing), tmp_path / 'fetched')
    assert caught.value.type_name == 'FileNotFoundError'
    assert not (tmp_path / 'fetched').exists()
    # A directory where the file should go: the rename fails.
    (tmp_path / 'a-dir').mkdir()
    (tmp_path / 'a-dir' / 'inside').write_bytes(b'')
    with pytest.raises(plasmid.CallError):
        plasmid.put_file(ctx, source, str(tmp_path / 'a-dir'),
                         chunk_size=CHUNK)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize('version', [None, '2.7', '3.6'])
def test_a_destination_that_is_a_directory_is_named_alone(
        router, tmp_path, version) -> None:
    """The rename fails: before, Python 3 said "'<dest>' -> None" and
    Python 2 named no path at all."""
    ctx = router.local(python_path=version and require_python(version))
    source = tmp_path / 'source'
    source.write_bytes(b'small')
    folder = tmp_path / 'a-dir'
    folder.mkdir()
    expected = "Is a directory: '%s'" % folder
    for chunk_size in (CHUNK, 2):  # in one call, then streamed
        with pytest.raises(plasmid.CallError) as caught:
            plasmid.put_file(ctx, source, str(folder), chunk_size=chunk_size)
        assert caught.value.message.endswith(expected)
    with pytest.raises(IsADirectoryError) as fetched:
        plasmid.fetch_file(ctx, str(source), folder)
    assert str(fetched.value).endswith(expected)
    assert os.listdir(folder) == []
    # Named with a slash, or as '.': the same words (the rename said "Not
    # a directory" and "Device or resource busy").
    here = ctx.call(os.getcwd)
    for name in (str(folder) + '/', '.'):
        expected = "Is a directory: '%s'" % name
        with pytest.raises(plasmid.CallError) as caught:
            plasmid.put_file(ctx, source, name)
        assert caught.value.message.endswith(expected), caught.value
        with pytest.raises(IsADirectoryError) as fetched:
            plasmid.fetch_file(ctx, str(source), name)
        assert str(fetched.value).endswith(expected)
    assert os.listdir(folder) == [] and ctx.call(os.getcwd) == here


def _special_files(folder) -> dict:
    """A named pipe, a socket and (as root) a character device like
    /dev/null, in *folder*: each path and its mode."""
    os.mkfifo(folder / 'pipe')
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(folder / 'socket'))
    listening.close()
    if os.geteuid() == 0:
        os.mknod(folder / 'null', 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return {path: os.lstat(path).st_mode for path in folder.iterdir()}


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_device_pipe_or_socket_is_left_as_it_is(
        router, tmp_path, version) -> None:
    """The copy renamed a file over them: as root, a put to /dev/null
    replaced the machine's device with a file."""
    ctx = router.local(python_path=version and require_python(version))
    source = tmp_path / 'source'
    source.write_bytes(b'small')
    folder = tmp_path / 'special'
    folder.mkdir()
    before = _special_files(folder)
    for path in before:
        for chunk_size in (CHUNK, 2):  # in one call, then streamed
            with pytest.raises(plasmid.CallError,
                               match='not a regular file'):
                plasmid.put_file(ctx, source, str(path),
                                 chunk_size=chunk_size)
        with pytest.raises(FileExistsError, match='not a regular file'):
            plasmid.fetch_file(ctx, str(source), path)
    assert {path: os.lstat(path).st_mode for path in folder.iterdir()} == \
        before


def test_a_symbolic_link_is_replaced_not_followed(router, tmp_path) -> None:
    """As ansible's copy does by default: the file it named is kept."""
    ctx = router.local()
    source = tmp_path / 'source'
    source.write_bytes(b'new')
    named = tmp_path / 'named'
    named.write_bytes(b'old')
    link = tmp_path / 'link'
    link.symlink_to(named)
    plasmid.put_file(ctx, source, str(link))
    assert not link.is_symlink() and link.read_bytes() == b'new'
    assert named.read_bytes() == b'old'


def test_a_fetch_into_a_missing_folder_names_the_path_given(
        router, tmp_path) -> None:
    """Not the hidden temporary file's (before: .got.plasmid-<hex>)."""
    (tmp_path / 'there').write_bytes(b'x')
    ctx = router.local()
    wanted = tmp_path / 'no-such-dir' / 'got'
    with pytest.raises(FileNotFoundError) as caught:
        plasmid.fetch_file(ctx, str(tmp_path / 'there'), wanted)
    assert caught.value.filename == str(wanted)


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_fetch_of_a_directory_names_it(router, tmp_path, version) -> None:
    """It opens, and the read fails: that said "[Errno 21] Is a
    directory" and no path, where every other failure names one."""
    ctx = router.local(python_path=version and require_python(version))
    folder = tmp_path / 'a-dir'
    folder.mkdir()
    with pytest.raises(plasmid.CallError) as caught:
        plasmid.fetch_file(ctx, str(folder), tmp_path / 'fetched')
    assert caught.value.type_name == ('OSError' if version == '2.7'
                                      else 'IsADirectoryError')
    assert "Is a directory: '%s'" % folder in caught.value.message
    assert sorted(os.listdir(tmp_path)) == ['a-dir']


@pytest.mark.parametrize('copy', ['put_file', 'fetch_file'])
def test_a_local_path_may_be_bytes(router, tmp_path, copy) -> None:
    """As open() takes it, and decoded as the system does (a name beyond
    UTF-8 too); a fetch failed with "'bytes' object has no attribute
    'encode'" (making its temporary file's name)."""
    ctx = router.local()
    there = tmp_path / 'there'
    there.write_bytes(b'data')
    here = os.fsencode(tmp_path) + b'/h\xffre'
    if copy == 'put_file':
        with open(here, 'wb') as f:
            f.write(b'data')
        assert plasmid.put_file(ctx, here, str(tmp_path / 'copy')) == 4
        assert (tmp_path / 'copy').read_bytes() == b'data'
    else:
        assert plasmid.fetch_file(ctx, str(there), here) == 4
        with open(here, 'rb') as f:
            assert f.read() == b'data'
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize('copy', ['put_file', 'fetch_file'])
def test_a_nul_in_a_path_is_refused_before_anything_is_sent(
        router, tmp_path, copy) -> None:
    """In a remote path too, as open() refuses it in a local one: sent to
    Python 2 it failed as the clean-up's TypeError ("remove() argument 1
    must be encoded string without null bytes")."""
    counted = CountingContext(router.local(python_path=require_python('2.7')))
    (tmp_path / 'source').write_bytes(b'small')
    nul = str(tmp_path / 'a\x00b')
    for side in ('remote', 'local'):
        paths = {'local': tmp_path / 'source', 'remote': str(tmp_path / 'b')}
        paths[side] = nul
        with pytest.raises(ValueError, match='a %s path may not contain a '
                           'NUL byte' % side):
            if copy == 'put_file':
                plasmid.put_file(counted, paths['local'], paths['remote'])
            else:
                plasmid.fetch_file(counted, paths['remote'], paths['local'])
    assert counted.calls == []
    assert sorted(os.listdir(tmp_path)) == ['source']


def test_a_failed_clean_up_leaves_the_failure_as_it_was(router,
                                                        tmp_path) -> None:
    """A name the system refuses (a NUL, past the master's check): the
    write's error, not the discard's (Python 2: "remove() argument 1 must
    be encoded string without null bytes"; here a ValueError, as a fetch's
    clean-up)."""
    ctx = router.local(python_path=require_python('2.7'))
    nul = str(tmp_path / 'a\x00b')
    with pytest.raises(plasmid.CallError) as caught:
        ctx.call(remote.put_whole, nul + '.temp', nul, b'data', None)
    assert caught.value.type_name == 'TypeError'
    assert caught.value.message.startswith('lstat()')  # the check's
    assert ctx.call(remote.discard, nul + '.temp') is None
    assert remote.discard(nul + '.temp') is None
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_name_as_long_as_the_system_allows(router, tmp_path,
                                             version) -> None:
    """A temporary name made of the whole destination's name (42 bytes
    more) failed with ENAMETOOLONG for names over 213 bytes."""
    ctx = router.local(python_path=version and require_python(version))
    long_name = 'n' * 200 + 'é' * 27  # 254 bytes in UTF-8
    source = tmp_path / 'source'
    for size in (10, 3 * CHUNK):  # in one call, then streamed
        source.write_bytes(b's' * size)
        plasmid.put_file(ctx, source, str(tmp_path / long_name),
                         chunk_size=CHUNK)
        assert (tmp_path / long_name).read_bytes() == b's' * size
        plasmid.fetch_file(ctx, str(tmp_path / long_name),
                           tmp_path / (long_name[:-1] + 'f'),
                           chunk_size=CHUNK)
        assert (tmp_path / (long_name[:-1] + 'f')).read_bytes() == \
            b's' * size
        plasmid.broadcast_file([ctx], source, str(tmp_path / long_name),
                               chunk_size=CHUNK)
        assert (tmp_path / long_name).read_bytes() == b's' * size
    assert leftovers(tmp_path) == []


def test_a_new_files_mode_leaves_the_umask_alone(monkeypatch,
                                                 tmp_path) -> None:
    """Reading the umask by setting it (to 0, back a moment later) gave
    files other threads made meanwhile mode 0o666."""
    umask = os.umask(0o027)
    try:
        def refused(mask: int) -> int:
            raise AssertionError('the umask was changed to %o' % mask)
        monkeypatch.setattr(os, 'umask', refused)
        assert remote.mode_for(str(tmp_path / 'new')) == 0o640
    finally:
        monkeypatch.undo()
        os.umask(umask)


def test_a_chunk_that_failed_is_never_committed(tmp_path) -> None:
    """Chunks go ahead of their answers: one that failed (a full disk)
    must keep the file from being renamed into place, although the
    chunks after it landed and the size adds up."""
    path = str(tmp_path / 'file')
    temp = str(tmp_path / '.file.plasmid-test')
    remote.write(temp, path, b'a' * 10, 0)
    with pytest.raises(TypeError):
        remote.write(temp, path, None, 10)  # fails as a full disk would
    remote.write(temp, path, b'c' * 10, 20)
    with pytest.raises(IOError, match='one of its chunks failed'):
        remote.commit(temp, path, None, 30)
    assert os.listdir(tmp_path) == []
    remote.write(temp, path, b'a' * 10, 0)
    with pytest.raises(IOError, match='10 of its 30 bytes arrived'):
        remote.commit(temp, path, None, 30)
    assert os.listdir(tmp_path) == []


def test_through_an_intermediary(router, tmp_path) -> None:
    below = router.local(via=router.local(name='middle'),
                         python_path=require_python('2.7'))
    data = os.urandom(3 * CHUNK + 1)
    (tmp_path / 'source').write_bytes(data)
    plasmid.put_file(below, tmp_path / 'source', str(tmp_path / 'there'),
                     chunk_size=CHUNK)
    plasmid.fetch_file(below, str(tmp_path / 'there'), tmp_path / 'back',
                       chunk_size=CHUNK)
    assert (tmp_path / 'back').read_bytes() == data


@pytest.mark.parametrize('kwargs, error', [
    ({'mode': '0644'}, ValueError), ({'mode': 0o10000}, ValueError),
    ({'mode': True}, ValueError), ({'chunk_size': 0}, ValueError),
    ({'window': 1.5}, ValueError), ({'remote_path': ''}, TypeError),
    ({'remote_path': b'/tmp/x'}, TypeError),
    ({'remote_path': '/tmp/a\x00b'}, ValueError), ({'timeout': 0}, ValueError),
    ({'timeout': -1}, ValueError), ({'timeout': '1'}, ValueError),
    ({'timeout': True}, ValueError),
])
@pytest.mark.parametrize('copy', ['put_file', 'broadcast_file'])
def test_bad_arguments_are_refused_before_anything_moves(
        router, tmp_path, kwargs, error, copy) -> None:
    ctx = router.local()
    (tmp_path / 'source').write_bytes(b'data')
    arguments = dict(remote_path=str(tmp_path / 'there'))
    arguments.update(kwargs)
    with pytest.raises(error):
        if copy == 'put_file':
            transfer.put_file(ctx, tmp_path / 'source', **arguments)
        else:
            plasmid.broadcast_file([ctx], tmp_path / 'source', **arguments)
    assert sorted(os.listdir(tmp_path)) == ['source']


@pytest.mark.parametrize('copy', ['put_file', 'fetch_file'])
def test_what_is_no_context_is_refused_by_name(tmp_path, copy) -> None:
    """A host name where the context goes: it failed with an
    AttributeError from inside the copy."""
    with pytest.raises(TypeError, match="%s takes a context, not 'web1'"
                       % copy):
        getattr(plasmid, copy)('web1', str(tmp_path / 'a'),
                               str(tmp_path / 'b'))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('size', [100, 3 * CHUNK + 5])
def test_a_context_that_does_not_answer_in_time_raises_timeout(
        router, tmp_path, size) -> None:
    """Both ways; a fetch leaves nothing here; the put's steps queued
    there still run (the file appears whole, or not at all)."""
    ctx = router.local()
    (tmp_path / 'source').write_bytes(os.urandom(size))
    nap = ctx.call_async(time.sleep, 1.5)
    with pytest.raises(plasmid.TimeoutError):
        plasmid.fetch_file(ctx, str(tmp_path / 'source'), tmp_path / 'back',
                           chunk_size=CHUNK, timeout=0.2)
    assert sorted(os.listdir(tmp_path)) == ['source']
    with pytest.raises(plasmid.TimeoutError):
        plasmid.put_file(ctx, tmp_path / 'source', str(tmp_path / 'there'),
                         chunk_size=CHUNK, timeout=0.2)
    nap.result()
    ctx.call(os.getpid)  # after the steps queued before it
    assert leftovers(tmp_path) == []
    there = tmp_path / 'there'
    assert not there.exists() or \
        there.read_bytes() == (tmp_path / 'source').read_bytes()


def test_a_file_is_written_as_the_contexts_account(router, tmp_path) -> None:
    """Through sudo: the file belongs to the account the context runs as,
    and a directory that account may not write to refuses the copy."""
    import pwd
    import shutil
    import tempfile
    if os.geteuid() != 0:
        pytest.skip('needs root to sudo to nobody')
    nobody = router.sudo(username='nobody')
    (tmp_path / 'source').write_bytes(b'data' * CHUNK)
    shared = tempfile.mkdtemp(prefix='plasmid-files-')  # pytest's: 0o700
    try:
        os.chmod(shared, 0o755)
        open_dir = os.path.join(shared, 'open')
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        plasmid.put_file(nobody, tmp_path / 'source',
                         os.path.join(open_dir, 'mine'), chunk_size=CHUNK)
        assert os.stat(os.path.join(open_dir, 'mine')).st_uid == \
            pwd.getpwnam('nobody').pw_uid
        with pytest.raises(plasmid.CallError) as caught:
            plasmid.put_file(nobody, tmp_path / 'source',
                             os.path.join(shared, 'not'), chunk_size=CHUNK)
        assert caught.value.type_name == 'PermissionError'
        assert leftovers(shared) == [] and leftovers(open_dir) == []
    finally:
        shutil.rmtree(shared)


INTERRUPTED_PUT = r'''
import os, signal, sys, threading, time
import plasmid
source, there = sys.argv[1], sys.argv[2]
with plasmid.Router() as router:
    ctx = router.local()
    pid = ctx.info['pid']
    os.kill(pid, signal.SIGSTOP)
    # If the put waited for the stopped context, it wakes it after 30 s
    # (so this script ends either way) and the state read below says so.
    for delay, target, signum in ((30, pid, signal.SIGCONT),
                                  (0.5, os.getpid(), signal.SIGINT)):
        timer = threading.Timer(delay, os.kill, (target, signum))
        timer.daemon = True
        timer.start()
    try:
        plasmid.put_file(ctx, source, there, chunk_size=4096)
        print('not interrupted')
    except KeyboardInterrupt:
        with open('/proc/%d/stat' % pid) as handle:
            print('interrupted; context state', handle.read().split()[2])
    os.kill(pid, signal.SIGCONT)
    ctx.call(os.getpid)  # after the removal the put left queued
    print('left', sorted(os.listdir(os.path.dirname(there))))
'''


def test_an_interrupted_put_to_a_context_that_does_not_answer_returns(
        tmp_path) -> None:
    """Ctrl-C in a put without timeout to a stopped context: its clean-up
    waited for the context's answer, so the interrupt did not return
    until the context woke; now the removal is sent, not waited for."""
    from testbed.procs import interruptible
    (tmp_path / 'source').write_bytes(os.urandom(16 * 4096))
    (tmp_path / 'dest').mkdir()
    done = subprocess.run(
        [sys.executable, '-c', INTERRUPTED_PUT, str(tmp_path / 'source'),
         str(tmp_path / 'dest' / 'file')], capture_output=True, text=True,
        timeout=120, preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        'interrupted; context state T', 'left []'], done.stdout


def test_a_fetch_onto_a_full_disk_names_it_and_leaves_no_temporary(
        router, tmp_path) -> None:
    """The write failed with ENOSPC; the clean-up's close() flushed what
    was buffered, failed again and raised before the temporary file was
    removed: it stayed, and the error named no path."""
    ctx = router.local()
    (tmp_path / 'big').write_bytes(os.urandom(3 << 19))
    with small_disk(tmp_path / 'disk') as disk:
        with pytest.raises(OSError) as caught:
            # Chunks smaller than the file object's buffer, and not a
            # part of it: some are still in it when the disk is full.
            plasmid.fetch_file(ctx, str(tmp_path / 'big'), disk / 'big',
                               chunk_size=1000)
        assert caught.value.errno == errno.ENOSPC
        assert caught.value.filename == str(disk / 'big')
        assert os.listdir(disk) == []


@pytest.mark.parametrize('version', [None, '2.7'])
@pytest.mark.parametrize('chunk_size', [4 << 20, CHUNK])
def test_a_full_disk_on_the_target_names_the_destination(
        router, tmp_path, version, chunk_size) -> None:
    """In one call and streamed: it said "[Errno 28] No space left on
    device" alone, where a failure to open names the path."""
    ctx = router.local(python_path=version and require_python(version))
    (tmp_path / 'big').write_bytes(os.urandom(2 << 20))
    with small_disk(tmp_path / 'disk') as disk:
        with pytest.raises(plasmid.CallError) as caught:
            plasmid.put_file(ctx, tmp_path / 'big', str(disk / 'big'),
                             chunk_size=chunk_size)
        assert caught.value.type_name == 'OSError'
        assert "No space left on device: '%s'" % (disk / 'big') in \
            caught.value.message, caught.value.message
        assert os.listdir(disk) == []


def _unblock(pipe) -> None:
    """Let a reader stuck opening *pipe* go on (it then reads its end)."""
    try:
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # no reader there: nothing is stuck
        pass


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_fetch_of_a_pipe_or_a_device_is_refused_naming_it(
        router, tmp_path, version) -> None:
    """Its open() waited for a writer for ever: the fetch timed out and
    every later call to the context queued behind it.  /dev/null was
    copied as an empty file (/dev/zero would never end)."""
    ctx = router.local(python_path=version and require_python(version))
    pipe = tmp_path / 'pipe'
    os.mkfifo(pipe)
    try:
        for source, kind in ((pipe, 'a named pipe'),
                             ('/dev/null', 'a character device')):
            with pytest.raises(plasmid.CallError) as caught:
                plasmid.fetch_file(ctx, str(source), tmp_path / 'got',
                                   timeout=30)
            assert caught.value.type_name == 'OSError'
            assert "it is %s, not a regular file: not copied: '%s'" % (
                kind, source) in caught.value.message, caught.value
            # The context still answers.
            assert ctx.call_async(os.getpid).result(30) == ctx.info['pid']
        assert sorted(os.listdir(tmp_path)) == ['pipe']
    finally:
        _unblock(pipe)


@pytest.mark.parametrize('copy', ['put_file', 'broadcast_file'])
def test_a_local_pipe_or_device_is_refused_before_anything_moves(
        router, tmp_path, copy) -> None:
    """A named pipe without a writer held the copy in open() for ever,
    its timeout notwithstanding; /dev/null was copied as an empty file.
    A directory still fails as open() says it."""
    ctx = router.local()
    pipe = tmp_path / 'pipe'
    os.mkfifo(pipe)
    (tmp_path / 'dir').mkdir()
    there = tmp_path / 'there'
    there.mkdir()
    copied = getattr(plasmid, copy)
    target = ctx if copy == 'put_file' else [ctx]
    for source, error, words in (
            (pipe, OSError, 'it is a named pipe, not a regular file'),
            ('/dev/null', OSError,
             'it is a character device, not a regular file'),
            (tmp_path / 'dir', IsADirectoryError, 'Is a directory')):
        caught: list[BaseException] = []

        def run() -> None:
            try:
                copied(target, source, str(there / 'file'), timeout=5)
            except BaseException as exc:
                caught.append(exc)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(60)  # a guard only: refused, it returns at once
        if thread.is_alive():
            _unblock(pipe)
            thread.join()
            pytest.fail('%s from %s did not return' % (copy, source))
        assert len(caught) == 1 and type(caught[0]) is error, caught
        assert caught[0].filename == str(source)
        assert words in str(caught[0])
    assert os.listdir(there) == []
