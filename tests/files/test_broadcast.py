"""plasmid.broadcast_file: one file to many contexts, each link carrying
it once, each target getting it whole or keeping what it had, and the
failures of some not stopping the others."""
from __future__ import annotations

import os
import time
from typing import Iterator

import pytest

import plasmid
from plasmid.files import broadcast
from testbed.copies import leftovers, timed_out_waits
from testbed.procs import stopped
from testbed.pythons import require_python

CHUNK = 64 * 1024


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


def working_in(context: plasmid.Context, directory) -> plasmid.Context:
    """*context*, its working directory made *directory*: a relative
    destination is then its own although the targets share this machine's
    file system."""
    os.makedirs(directory, exist_ok=True)
    context.call(os.chdir, str(directory))
    return context


def test_each_link_carries_the_file_once(router, tmp_path) -> None:
    """Four targets behind one link (a Python 2.7 intermediary, itself one
    of them, and its children on 2.7, 3.13 and the master's Python, which
    get their bytes from a Python 2 str) and one more beside it."""
    middle = router.local(name='middle', python_path=require_python('2.7'))
    pythons = [require_python('2.7'), require_python('3.13'), None]
    below = [router.local(via=middle, name='below%d' % i, python_path=python)
             for i, python in enumerate(pythons)]
    beside = router.local(name='beside')
    targets = [middle] + below + [beside]
    for i, context in enumerate(targets):
        working_in(context, tmp_path / str(i))
    data = bytes(range(256)) * 1024 + os.urandom(CHUNK * 4)  # 6 chunks
    (tmp_path / 'source').write_bytes(data)
    sent = middle.stream.bytes_out
    assert plasmid.broadcast_file(targets, tmp_path / 'source', 'copy',
                                  mode=0o640, chunk_size=CHUNK) == len(data)
    for i in range(len(targets)):
        assert (tmp_path / str(i) / 'copy').read_bytes() == data
        assert os.stat(tmp_path / str(i) / 'copy').st_mode & 0o777 == 0o640
        assert leftovers(tmp_path / str(i)) == []
    # Four copies would be 4 * 393,216 bytes; framing adds a few percent.
    assert len(data) < middle.stream.bytes_out - sent < len(data) * 1.1


def test_through_an_ssh_login_to_its_sudo_accounts(sshd, router) -> None:
    """One copy over the ssh link, three files behind it, each owned by
    the account of its context."""
    import pwd
    import shutil
    import tempfile
    login = router.ssh(**sshd.ssh_kwargs())
    contexts = {'root': router.sudo(via=login),
                sshd.sudo_password_user: router.sudo(
                    username=sshd.sudo_password_user,
                    password=sshd.password, via=login),
                sshd.user: router.local(via=login)}
    shared = tempfile.mkdtemp(prefix='plasmid-broadcast-')
    try:
        os.chmod(shared, 0o755)
        for account, context in contexts.items():
            working_in(context, os.path.join(shared, account))
            os.chmod(os.path.join(shared, account), 0o777)
        source = os.path.join(shared, 'source')
        data = os.urandom(2 * CHUNK + 3)
        with open(source, 'wb') as f:
            f.write(data)
        sent = login.stream.bytes_out
        plasmid.broadcast_file(list(contexts.values()), source, 'copy',
                               chunk_size=CHUNK)
        assert len(data) < login.stream.bytes_out - sent < len(data) * 1.2
        for account in contexts:
            copy = os.path.join(shared, account, 'copy')
            with open(copy, 'rb') as f:
                assert f.read() == data
            assert os.stat(copy).st_uid == pwd.getpwnam(account).pw_uid
    finally:
        shutil.rmtree(shared)


@pytest.mark.parametrize('size', [100, 3 * CHUNK + 1])
def test_the_failures_of_some_leave_the_others_whole(router, tmp_path,
                                                      size) -> None:
    """A target without the destination's directory, and two behind an
    intermediary shut down before the copy, are named with their errors;
    the rest get the file, the failed keep no temporary file."""
    middle = router.local(name='middle')
    fine = [working_in(router.local(via=middle, name='fine'),
                       tmp_path / 'fine'),
            working_in(router.local(name='fine too'), tmp_path / 'fine too')]
    (tmp_path / 'fine' / 'sub').mkdir()
    (tmp_path / 'fine too' / 'sub').mkdir()
    no_dir = working_in(router.local(via=middle, name='no dir'),
                        tmp_path / 'no dir')
    lost_hop = router.local(name='lost hop')
    lost = [router.local(via=lost_hop, name='lost %d' % i) for i in range(2)]
    lost_hop.shutdown()
    data = os.urandom(size)
    (tmp_path / 'source').write_bytes(data)
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.broadcast_file(fine + [no_dir] + lost, tmp_path / 'source',
                               'sub/copy', chunk_size=CHUNK)
    failures = caught.value.failures
    assert set(failures) == {no_dir} | set(lost)
    assert isinstance(failures[no_dir], plasmid.CallError)
    assert failures[no_dir].type_name == 'FileNotFoundError'
    assert all(isinstance(failures[c], plasmid.ContextLost) for c in lost)
    assert caught.value.copied == {context: size for context in fine}
    text = str(caught.value)
    assert '3 of 5 copies failed' in text and 'no dir: CallError' in text
    assert 'lost 0: ContextLost' in text
    for name in 'fine', 'fine too':
        assert (tmp_path / name / 'sub' / 'copy').read_bytes() == data
    assert os.listdir(tmp_path / 'no dir') == []


def test_a_chunk_that_failed_keeps_its_target_from_committing(
        router, tmp_path) -> None:
    """The destination replaced by a directory after the first chunk
    failed nowhere else: that target's first error is the one named."""
    targets = [working_in(router.local(name=str(i)), tmp_path / str(i))
               for i in range(2)]
    os.mkdir(tmp_path / '1' / 'copy')  # rename over a directory fails
    (tmp_path / 'source').write_bytes(os.urandom(2 * CHUNK))
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.broadcast_file(targets, tmp_path / 'source', 'copy',
                               chunk_size=CHUNK)
    assert list(caught.value.failures) == [targets[1]]
    assert caught.value.failures[targets[1]].type_name == 'IsADirectoryError'
    assert (tmp_path / '0' / 'copy').read_bytes() == \
        (tmp_path / 'source').read_bytes()
    assert leftovers(tmp_path / '1') == []


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_target_that_does_not_answer_fails_alone(router, tmp_path,
                                                   version) -> None:
    """Targets busy past the timeout, one behind an intermediary (on the
    master's Python, on 2.7) and one not, fail with TimeoutError; their
    siblings get the file, and the busy ones, once free, remove what they
    wrote and commit nothing."""
    middle = router.local(name='middle',
                          python_path=version and require_python(version))
    busy = working_in(router.local(via=middle, name='busy'), tmp_path / 'b')
    fine = working_in(router.local(via=middle, name='fine'), tmp_path / 'f')
    busy_top = working_in(router.local(name='busy top'), tmp_path / 't')
    data = os.urandom(3 * CHUNK + 1)
    (tmp_path / 'source').write_bytes(data)
    naps = [context.call_async(time.sleep, 2) for context in (busy, busy_top)]
    with pytest.raises(plasmid.CopyFailures) as caught:
        plasmid.broadcast_file([busy, fine, busy_top], tmp_path / 'source',
                               'copy', chunk_size=CHUNK, timeout=0.3)
    assert set(caught.value.failures) == {busy, busy_top}
    assert all(isinstance(error, plasmid.TimeoutError)
               for error in caught.value.failures.values())
    assert (tmp_path / 'f' / 'copy').read_bytes() == data
    for nap, context, directory in zip(naps, (busy, busy_top), 'bt'):
        nap.result()
        context.call(os.getpid)  # after the steps queued before it
        assert os.listdir(tmp_path / directory) == []


@pytest.mark.parametrize('size', [100, 3 * CHUNK + 1])
def test_stopped_targets_wait_out_one_timeout_together(
        router, tmp_path, size, monkeypatch) -> None:
    """Three stopped targets, and two behind an intermediary beside a
    running one, fail with TimeoutError naming the time they had; the
    running targets get the file, and the master waits for the stopped
    roots until one moment: the waits overlap.  Before, each stopped root
    was waited for the whole timeout after the one before it gave up
    (three times it), and the second stopped branch's error named the
    moment left to it.  (The intermediary's own waits, for the two below
    it, are its own: had they not overlapped, its answer would have come
    after the master's wait for it and failed the running one too.)"""
    timed_out = timed_out_waits(monkeypatch, broadcast)
    timeout = 2
    frozen = [working_in(router.local(name='stopped %d' % i),
                         tmp_path / str(i)) for i in range(3)]
    middle = router.local(name='middle')
    frozen_below = [working_in(router.local(via=middle, name='below %d' % i),
                               tmp_path / ('b%d' % i)) for i in range(2)]
    running = [working_in(router.local(via=middle, name='fine'),
                          tmp_path / 'fine'),
               working_in(router.local(name='fine too'),
                          tmp_path / 'fine too')]
    data = os.urandom(size)
    (tmp_path / 'source').write_bytes(data)
    with stopped(frozen + frozen_below):
        with pytest.raises(plasmid.CopyFailures) as caught:
            plasmid.broadcast_file(frozen + frozen_below + running,
                                   tmp_path / 'source', 'copy',
                                   chunk_size=CHUNK, timeout=timeout)
    # One wait for each stopped root, all until the same moment (the
    # time no clock measures here: a busy machine may make the call
    # itself slow).
    assert len(timed_out) == 3
    assert len({deadline for deadline, _ in timed_out}) == 1
    assert {wait for _, wait in timed_out} == {timeout}
    failures = caught.value.failures
    assert all(isinstance(error, plasmid.TimeoutError)
               for error in failures.values())
    assert {context.name: str(error) for context, error in
            failures.items()} == {context.name: 'no result within 2s'
                                  for context in frozen + frozen_below}
    assert caught.value.copied == {context: size for context in running}
    for name in 'fine', 'fine too':
        assert (tmp_path / name / 'copy').read_bytes() == data
    for context in frozen + frozen_below:
        context.call(os.getpid)  # after the steps queued before it
    for i in range(3):  # a whole file of one step may appear: never a part
        assert leftovers(tmp_path / str(i)) == []
    for i in range(2):
        assert leftovers(tmp_path / ('b%d' % i)) == []


def test_the_plan_leaves_out_contexts_that_only_pass_a_copy_on(
        router) -> None:
    """A hop leading to one target is not in the plan (its router
    forwards the calls anyway); one where the routes branch is, and so is
    a target with targets below it."""
    hop = router.local(name='hop')
    lone = router.local(via=router.local(via=hop, name='hop 2'), name='lone')
    fork = router.local(name='fork')
    left, right = (router.local(via=fork, name=n) for n in ('left', 'right'))
    top = router.local(name='top')
    under = router.local(via=top, name='under')
    plan = broadcast.plan_for([lone, left, right, top, under])
    assert plan == [
        [lone, lone.context_id, []],
        [fork, 0, [[left, left.context_id, []],
                   [right, right.context_id, []]]],
        [top, top.context_id, [[under, under.context_id, []]]],
    ]


def test_wide_trees_get_smaller_chunks() -> None:
    """The chunks on their way in one process stay within the budget: the
    master's window per root, or a hop's one per branch and its window."""
    def leaves(count):
        return [[None, 1, []] for _ in range(count)]
    mib = 1 << 20
    assert broadcast.chunk_for(leaves(3), 4 * mib, 4) == 4 * mib
    assert broadcast.chunk_for(leaves(100), 4 * mib, 4) == (64 * mib) // 400
    bastion = [[None, 0, leaves(200)], [None, 1, leaves(2)]]
    assert broadcast.chunk_for(bastion, 4 * mib, 4) == (64 * mib) // 204
    deep = [[None, 0, [[None, 0, leaves(60)]]]]
    assert broadcast.chunk_for(deep, 4 * mib, 2) == (64 * mib) // 62
    assert broadcast.chunk_for(leaves(5000), 4 * mib, 4) == 64 << 10
    assert broadcast.chunk_for(leaves(5000), 1000, 4) == 1000


def test_no_contexts_copies_nothing(tmp_path) -> None:
    (tmp_path / 'source').write_bytes(b'12345')
    assert plasmid.broadcast_file([], tmp_path / 'source', 'copy') == 5
    with pytest.raises(FileNotFoundError):
        plasmid.broadcast_file([], tmp_path / 'missing', 'copy')


def test_a_local_path_may_be_bytes(router, tmp_path) -> None:
    """As for put_file, fetch_file and gather_file (a name beyond UTF-8
    too)."""
    target = working_in(router.local(), tmp_path / 'there')
    source = os.fsencode(tmp_path) + b'/h\xffre'
    with open(source, 'wb') as f:
        f.write(b'data')
    assert plasmid.broadcast_file([target], source, 'copy') == 4
    assert (tmp_path / 'there' / 'copy').read_bytes() == b'data'


@pytest.mark.parametrize('contexts', ['a context', ['a name']])
def test_anything_but_a_list_of_contexts_is_refused(router, tmp_path,
                                                    contexts) -> None:
    """(The arguments it shares with put_file: test_transfer.py.)"""
    if contexts == 'a context':
        contexts = router.local()
    (tmp_path / 'source').write_bytes(b'data')
    with pytest.raises(TypeError, match='contexts'):
        plasmid.broadcast_file(contexts, tmp_path / 'source', 'copy')


def test_contexts_of_two_routers_are_refused(router, tmp_path) -> None:
    (tmp_path / 'source').write_bytes(b'data')
    with plasmid.Router() as other:
        with pytest.raises(ValueError, match='one router'):
            plasmid.broadcast_file([router.local(), other.local()],
                                   tmp_path / 'source', 'copy')
