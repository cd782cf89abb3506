"""The broker's own parts, without ansible-core."""
from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import plasmid
from plasmid.ansible import broker, client, target, wire
from testbed.pythons import require_python

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_an_unreaped_process_counts_as_gone():
    """ansible-playbook's parent may wait for the broker before it reaps
    ansible-playbook (a profiler following children does): a zombie must
    not keep the broker alive."""
    child = subprocess.Popen([sys.executable, '-c', 'pass'])
    deadline = time.monotonic() + 30
    while client.process_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Not reaped yet: still in the process table, as a zombie.
    os.kill(child.pid, 0)
    assert not client.process_alive(child.pid)
    child.wait()
    assert not client.process_alive(child.pid)


def test_watch_fires_once_the_process_ended():
    child = subprocess.Popen([sys.executable, '-c',
                              'import sys; sys.stdin.read()'],
                             stdin=subprocess.PIPE)
    fired = threading.Event()
    broker.watch(child.pid, fired.set)
    assert client.process_alive(child.pid)
    assert not fired.wait(0.5)
    child.stdin.close()
    assert fired.wait(30)
    child.wait()


def test_a_broker_whose_starter_left_serves_and_ends_normally(tmp_path):
    """A run with no remote task may end before its early-started broker
    writes ``ready``: the broker must not die of the closed pipe, but run
    until the watched process ends and write its counters as usual."""
    run = subprocess.Popen([sys.executable, '-c',
                            'import sys; sys.stdin.read()'],
                           stdin=subprocess.PIPE)
    path = str(tmp_path / 'broker.sock')
    stats = tmp_path / 'stats.json'
    log = tmp_path / 'broker.log'
    with open(log, 'wb') as err:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'plasmid.ansible.broker', path,
             str(run.pid)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
            env=dict(os.environ, PLASMID_ANSIBLE_STATS=str(stats)))
    proc.stdout.close()     # the starter is gone before the broker is up
    try:
        sock = _connect_when_listening(path, proc)
        with sock:
            wire.send(sock, ('ping', ()))
            assert wire.receive(sock) == ('ok', 'pong')
        run.stdin.close()
        assert proc.wait(30) == 0
        assert json.loads(stats.read_text())['client_processes'] == 1
        assert 'Traceback' not in log.read_text()
    finally:
        for child in (run, proc):
            if child.poll() is None:
                child.kill()
            child.wait()


def _connect_when_listening(path: str, proc) -> socket.socket:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, 'the broker died'
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            # Give the ready write its chance to fail before we talk.
            time.sleep(0.3)
            return sock
        except OSError:
            sock.close()
            time.sleep(0.05)
    raise AssertionError('the broker never listened')


def test_a_fetched_file_takes_the_place_of_the_old_one_only_when_whole(
        tmp_path):
    dest = tmp_path / 'fetched'
    dest.write_bytes(b'old, whole')
    dest.chmod(0o600)
    with broker.replacing(str(dest)) as out:
        out.write(b'new, ')
        out.flush()
        assert dest.read_bytes() == b'old, whole'  # a reader sees no half
        out.write(b'whole too')
    assert dest.read_bytes() == b'new, whole too'
    assert dest.stat().st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ['fetched']


def test_a_fetch_through_a_symlink_replaces_its_target(tmp_path):
    (tmp_path / 'real').write_bytes(b'old')
    (tmp_path / 'link').symlink_to('real')
    with broker.replacing(str(tmp_path / 'link')) as out:
        out.write(b'new')
    assert (tmp_path / 'link').is_symlink()
    assert (tmp_path / 'real').read_bytes() == b'new'


def test_a_failed_fetch_leaves_the_old_file_and_no_partial_one(tmp_path):
    dest = tmp_path / 'fetched'
    dest.write_bytes(b'old')
    try:
        with broker.replacing(str(dest)) as out:
            out.write(b'half')
            raise ConnectionError('the target went away')
    except ConnectionError:
        pass
    assert dest.read_bytes() == b'old'
    assert os.listdir(tmp_path) == ['fetched']


def test_a_new_fetched_file_gets_the_mode_the_umask_gives(tmp_path):
    old = os.umask(0o027)
    try:
        with broker.replacing(str(tmp_path / 'new')) as out:
            out.write(b'x')
    finally:
        os.umask(old)
    assert (tmp_path / 'new').stat().st_mode & 0o777 == 0o640


def test_a_fetch_onto_a_read_only_file_is_refused_as_open_would_be(
        ansible_account):
    _as_account(ansible_account, '''
dest = os.path.join(folder, 'read-only')
open(dest, 'w').write('old')
os.chmod(dest, 0o444)
try:
    with broker.replacing(dest) as out:
        out.write(b'new')
except PermissionError:
    print('refused', open(dest).read())
''', 'refused old')


def test_a_writable_file_in_a_closed_folder_is_written_in_place(
        ansible_account):
    _as_account(ansible_account, '''
dest = os.path.join(folder, 'writable')
open(dest, 'w').write('old')
os.chmod(folder, 0o555)
with broker.replacing(dest) as out:
    out.write(b'new')
print(open(dest).read(), sorted(os.listdir(folder)))
''', "new ['writable']")


def _as_account(account: str, body: str, expected: str) -> None:
    """Run *body* as *account* (root may write anywhere), in a folder of
    its own; its output must be *expected*."""
    folder = tempfile.mkdtemp(prefix='plasmid-replacing-')
    try:
        shutil.chown(folder, account)
        code = ('import os, sys\nsys.path.insert(0, %r)\n'
                'from plasmid.ansible import broker\nfolder = %r\n%s'
                % (REPO, folder, body))
        out = subprocess.run(['sudo', '-u', account, sys.executable, '-c',
                              code], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)
    assert out.strip() == expected


def test_a_broker_out_of_descriptors_raises_its_limit_and_accepts(tmp_path):
    """A worker that connects when the broker has no descriptor left must
    be served once the limit is raised, not end the broker (and every
    host's context) with an EMFILE."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(tmp_path / 'sock'))
        server.listen(1)
        client.connect(str(tmp_path / 'sock'))
        lowest_free = os.dup(0)
        os.close(lowest_free)
        if hard != resource.RLIM_INFINITY and hard <= lowest_free + 1:
            pytest.skip('the hard limit on open files is too low')
        # The next descriptor would be numbered at the limit: EMFILE.
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))
        conn = broker.accept(server)
        try:
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] > \
                lowest_free
            client.sendall(b'x')
            assert conn.recv(1) == b'x'
        finally:
            conn.close()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        client.close()
        server.close()


@pytest.mark.parametrize('username, password, kind', [
    ('sudo_password_user', 'not-the-password', 'become-password-refused'),
    ('sudo_password_user', None, 'become-password-missing'),
    ('nobody', 'the password', 'become'),  # sudo: not allowed
])
def test_a_failed_become_start_is_classified_for_the_worker(
        sshd, username, password, kind):
    """The broker tells the worker why a become interpreter did not start
    by kind, not by words it would have to match: a refused or missing
    password (vanilla names these), or anything else (the worker then
    runs the command as given, so its failure is vanilla's)."""
    username = getattr(sshd, username, username)
    if password == 'the password':
        password = sshd.password  # sudo checks it before its rules
    elif password is not None:
        password = password + sshd.password
    spec = {'login': dict(sshd.ssh_kwargs(), method='ssh'),
            'become': {'method': 'sudo', 'username': username,
                       'password': password}}
    with plasmid.Router() as router:
        serving = broker.Broker(router)
        answer = serving.answer(
            ('shell', (spec, None, 'id -un', None, None, None, None)))
        assert answer[:2] == ('error', kind), answer
        spec['become'] = None  # the login itself is unharmed
        assert serving.answer(
            ('shell', (spec, None, 'id -un', None, None, None, None))
        ) == ('ok', (0, sshd.user.encode() + b'\n', b'')), 'login'


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_result_beyond_hold_above_comes_over_in_pieces(sshd, version):
    """The context holds output beyond the broker's hold_above and the
    broker reads it in FILE_CHUNK pieces, so no result is too large for
    one message.  The answer is the one the output would have made whole,
    even from a Python 2 context (whose str arrives as text, and a
    character here straddles each piece's end), and the context lets the
    result go once read."""
    python = version and require_python(version)
    spec = {'login': dict(sshd.ssh_kwargs(), method='ssh'), 'become': None}
    # 9,000,000 bytes of 'é\n' (3 bytes; a piece is 3 * 1398101 + 1)
    command = ('yes "$(printf \'\\303\\251\')" | head -n 3000000; '
               'seq 1 1000 >&2')
    request = ('shell', (spec, python, command, None, None, None, None))
    with plasmid.Router() as router:
        whole = broker.Broker(router).answer(request)
        assert whole[0] == 'ok', whole[:3]
        assert len(whole[1][1]) in (9000000, 6000000), 'bytes or text'
        serving = broker.Broker(router, hold_above=1 << 20)
        assert serving.answer(request) == whole
        chunks = -(-9000000 // broker.FILE_CHUNK) + 1
        assert serving.counts['result_chunks'] == chunks, serving.counts
        context = serving.pool.get(spec, python).context
        assert context.call(target.held_count) == 0
        # Output within the bound travels as it always did.
        serving.answer(('shell', (spec, python, 'seq 1 10', None, None,
                                  None, None)))
        assert serving.counts['result_chunks'] == chunks


def test_an_answer_the_codec_refuses_reaches_the_worker_as_an_error():
    """A worker must get an answer, never a closed socket."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        broker.Broker._send_answer(ours, ('ok', object()))
        answer = wire.receive(theirs)
    assert answer[:2] == ('error', 'broker'), answer
    assert answer[2].startswith('the result could not be sent: '), answer


@pytest.mark.parametrize('text, expected', [
    (None, broker.HOLD_ABOVE), ('1048576', 1 << 20),
    ('0', broker.HOLD_ABOVE), ('-5', broker.HOLD_ABOVE),
    ('lots', broker.HOLD_ABOVE)])
def test_hold_above_comes_from_the_environment(text, expected):
    environ = {} if text is None else {'PLASMID_ANSIBLE_HOLD_ABOVE': text}
    assert broker.hold_above_from(environ) == expected


@pytest.mark.parametrize('text, expected', [
    (None, broker.LANE_IDLE), ('2.5', 2.5), ('0', 0.0),
    ('inf', float('inf')), ('-1', broker.LANE_IDLE),
    ('nan', broker.LANE_IDLE), ('soon', broker.LANE_IDLE)])
def test_lane_idle_comes_from_the_environment(text, expected):
    environ = {} if text is None else {'PLASMID_ANSIBLE_LANE_IDLE': text}
    assert broker.lane_idle_from(environ) == expected


@pytest.mark.parametrize('text, expected', [
    (None, True), ('off', False), ('0', False), (' No ', False),
    ('on', True), ('true', True), ('sometimes', True)])
def test_staying_comes_from_the_environment(text, expected):
    environ = {} if text is None else {'PLASMID_ANSIBLE_STAYING': text}
    assert broker.staying_from(environ) is expected


def test_hold_above_stays_under_the_bound_on_one_message():
    with plasmid.Router() as router:
        serving = broker.Broker(router, hold_above=1 << 40)
        assert serving.hold_above == broker.CONTEXT_MAX_MESSAGE // 2


def test_workers_of_one_login_at_once_lose_no_call_sent_ahead(sshd):
    """Tasks of many hosts delegated to one host reach its login at once:
    each task gets a context of its own (a lane, kept for later tasks),
    and each clean-up it sent ahead is collected once: none lost, none
    warned twice, no task failed for another's.  Threads switch far more
    often than usual here, so that the workers interleave in the broker."""
    spec = {'login': dict(sshd.ssh_kwargs(), method='ssh'), 'become': None}
    shell = ('shell', (spec, None, 'true', None, None, None, None))
    answers = []
    interval = sys.getswitchinterval()
    with plasmid.Router(threaded=True) as router:
        serving = broker.Broker(router)
        assert serving.answer(shell)[0] == 'ok'
        serving.pool.release()

        def worker() -> None:
            for _ in range(25):  # a task: its clean-up, then the next call
                answers.append(serving.answer(('cleanup', (spec, 'exit 3'))))
                answers.append(serving.answer(shell))
                serving.pool.release()
        threads = [threading.Thread(target=worker) for _ in range(8)]
        sys.setswitchinterval(1e-6)
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
        finally:
            sys.setswitchinterval(interval)
        contexts = serving.stats()['contexts']
    assert len(answers) == 8 * 50
    assert [a for a in answers if a[0] != 'ok'] == []
    # A task's clean-up is collected by its own next call, on its lane.
    warned = [w for a in answers if len(a) == 3 for w in a[2]]
    assert warned == ['Error deleting remote temporary files '
                      '(rc: 3, stderr: })'] * 200
    assert serving.counts['cleanups_failed'] == 200
    assert 1 <= contexts <= 8, contexts


def test_a_taken_private_directory_name_falls_back_to_another(
        tmp_path, monkeypatch):
    """Another user who makes $TMPDIR/plasmid-ansible-UID first (open to
    all, or a symlink) must not stop every accelerated run of ours."""
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    monkeypatch.setattr(client, 'SHORTEST_TEMP', str(tmp_path))
    taken = tmp_path / ('plasmid-ansible-%d' % os.getuid())
    taken.mkdir()
    taken.chmod(0o777)
    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path / 'run'))
    (tmp_path / 'run').mkdir(mode=0o700)
    assert client.private_dir() == str(tmp_path / 'run' / 'plasmid-ansible')
    monkeypatch.delenv('XDG_RUNTIME_DIR')
    monkeypatch.setenv('HOME', str(tmp_path / 'home'))
    chosen = client.private_dir()
    assert chosen.startswith(str(tmp_path / 'home' / '.ansible' / 'plasmid-'))
    assert os.stat(chosen).st_mode & 0o777 == 0o700
    shutil.rmtree(tmp_path / 'home' / '.ansible')
    (tmp_path / 'home' / '.ansible').write_text('a file in the way')
    with pytest.raises(client.BrokerError, match='no private directory'):
        client.private_dir()
    assert taken.stat().st_mode & 0o777 == 0o777  # left as it was


def test_a_temporary_directory_too_deep_for_a_socket_is_passed_over(
        tmp_path, monkeypatch):
    """A $TMPDIR a few characters too deep for the broker's socket
    (sun_path holds 108 bytes) failed every task "AF_UNIX path too long",
    where vanilla ran: a directory where the socket fits is taken."""
    deep = tmp_path / ('d' * 100)
    deep.mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(deep))
    monkeypatch.delenv('XDG_RUNTIME_DIR', raising=False)
    monkeypatch.setenv('HOME', str(deep))
    short = tmp_path / 's'
    short.mkdir()
    monkeypatch.setattr(client, 'SHORTEST_TEMP', str(short))
    path = client.Client(pid=4194304).path
    assert path == str(short / ('plasmid-ansible-%d' % os.getuid())
                       / 'broker-4194304.sock')
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(path)  # it fits
    monkeypatch.setattr(client, 'SHORTEST_TEMP', str(deep))
    with pytest.raises(client.BrokerError,
                       match='too long a path for a socket'):
        client.Client(pid=4194304)


def test_the_broker_removes_its_files_where_they_are(tmp_path):
    """At the run's end it looked for its directory again: on a $TMPDIR
    filled meanwhile, tempfile chose another, and the files stayed."""
    ended = client.Client(pid=4194304, base=str(tmp_path))
    for path in (ended.path, ended.lock_path, ended.log_path):
        open(path, 'w').close()
    ended.remove_run_files()
    assert list(tmp_path.iterdir()) == []


def test_a_broker_that_never_says_it_is_ready_is_killed(
        tmp_path, monkeypatch):
    """START_TIMEOUT was never used: a broker that stalled before its
    "ready" held the start-up lock, and every worker of the run, for
    ever.  It is killed at the timeout and the start fails."""
    stalled = tmp_path / 'stalled-python'
    stalled.write_text('#!/bin/sh\necho $$ > "%s"\nexec sleep 60\n'
                       % (tmp_path / 'pid'))
    stalled.chmod(0o755)
    monkeypatch.setattr(sys, 'executable', str(stalled))
    monkeypatch.setattr(client, 'START_TIMEOUT', 1.0)
    starting = client.Client(pid=os.getpid(), base=str(tmp_path))
    with pytest.raises(client.BrokerError, match='did not start'):
        starting.connect()
    pid = int((tmp_path / 'pid').read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(pid, 0)


def test_a_worker_of_an_ended_run_starts_no_broker(tmp_path):
    """An orphaned worker of a killed run started a broker, which began
    its login before it saw the run gone."""
    ended = subprocess.Popen(['true'])
    ended.wait()
    orphan = client.Client(pid=ended.pid, base=str(tmp_path))
    with pytest.raises(client.BrokerError, match='has ended'):
        orphan.connect()
    assert list(tmp_path.iterdir()) == [tmp_path / ('broker-%d.lock'
                                                    % ended.pid)]


def test_only_the_newest_logs_of_earlier_runs_are_kept(tmp_path):
    """A log with anything in it was kept for good: 170 piled up in one
    private directory here.  The LOGS_KEPT newest stay, and the log of a
    run still going (its socket is there)."""
    for n in range(client.LOGS_KEPT + 5):
        log = tmp_path / ('broker-%d.log' % n)
        log.write_text('Connection to 127.0.0.1 closed by remote host.\n')
        os.utime(log, (1000 + n, 1000 + n))
    (tmp_path / 'broker-0.sock').write_text('')  # run 0 still goes
    client.Client(pid=4194304, base=str(tmp_path)).remove_run_files()
    kept = sorted(int(p.name[len('broker-'):-len('.log')])
                  for p in tmp_path.glob('broker-*.log'))
    assert kept == [0] + list(range(5, client.LOGS_KEPT + 5))


def test_runs_in_another_pid_namespace_name_their_files_apart():
    """Two containers sharing /tmp, each running ansible-playbook as pid 1,
    shared one broker, which read one run's files for the other's tasks:
    a run outside the machine's pid namespace adds that namespace's number
    to its files' names."""
    assert client.run_name(1) == '1'  # the tests run in the machine's
    named = subprocess.run(
        ['unshare', '--pid', '--fork', '--mount-proc', sys.executable, '-c',
         'from plasmid.ansible import client; print(client.run_name(1))'],
        capture_output=True, text=True, timeout=60)
    if named.returncode and 'Operation not permitted' in named.stderr:
        pytest.skip('unshare needs root here: %s' % named.stderr.strip())
    assert named.returncode == 0, named.stderr
    pid, namespace = named.stdout.strip().split('-')
    assert pid == '1'
    assert int(namespace) != client.MACHINES_PID_NAMESPACE


class _Counted:
    def stats(self) -> dict:
        return {'module_runs': 3}


def test_stats_go_to_the_file_named_or_one_per_broker_in_a_folder(tmp_path):
    """The compat harness names a folder for a script of many runs: one
    shared file kept the last run's counters alone."""
    broker.write_stats(_Counted(), str(tmp_path / 'one.json'))
    assert json.loads((tmp_path / 'one.json').read_text()) == \
        {'module_runs': 3}
    folder = tmp_path / 'many'
    folder.mkdir()
    broker.write_stats(_Counted(), str(folder))
    assert json.loads((folder / ('broker-%d.json' % os.getpid()))
                      .read_text()) == {'module_runs': 3}
    broker.write_stats(_Counted(), None)  # not asked: nothing written


NO_THREAD_TO_BE_HAD = r"""
import resource, sys, threading
threading.stack_size(1 << 30)  # more than the address space left below
resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))
from plasmid.ansible import client
try:
    threading.Thread(target=lambda: None).start()
except RuntimeError:
    pass
else:
    sys.exit('a thread started: the limit did not hold')
client.start_broker_if_missing()
print('left to the task')
"""


def test_an_early_start_without_a_thread_leaves_the_start_to_the_task(
        tmp_path):
    """ansible-core 2.19+ asks the connection whether it pipelines, which
    starts the broker on a thread: a worker that can have no more threads
    ("can't start new thread") failed its task there with a RuntimeError,
    where the task's own call would have started the broker."""
    done = subprocess.run([sys.executable, '-c', NO_THREAD_TO_BE_HAD],
                          env=dict(os.environ, TMPDIR=str(tmp_path)),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == 'left to the task\n', done.stderr
    made = [name for _, _, names in os.walk(tmp_path) for name in names]
    assert made == []  # no broker started: no socket, lock or log
