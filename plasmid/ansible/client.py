"""The worker's side of the broker: find it, start it if need be, ask it.

The broker serves one ansible-playbook process (the *run*): workers are
its children, and the run's pid names the socket.  Starting is guarded by
a lock file, so concurrent workers start one broker between them.
"""
from __future__ import annotations

import fcntl
import glob
import multiprocessing
import os
import select
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Optional

from plasmid.ansible import wire

# How long a broker may take to say it is ready: one that stalls before
# that would hold the start-up lock, and every worker of the run with it.
START_TIMEOUT = 30.0
# The logs of earlier runs kept in the private directory (a log is kept
# when something was written there), the newest.
LOGS_KEPT = 20


class BrokerError(Exception):
    """The broker answered with an error: ``kind`` says which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def run_pid() -> int:
    """The ansible process whose run this is: a worker's parent, or
    ourselves when the plugin is used in the main process."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None else os.getpid()


# A unix socket's path fits in sun_path's 108 bytes, its NUL included.
LONGEST_SOCKET_PATH = 107
# Where the private directory goes when the others will not do: the
# shortest temporary directory there is.
SHORTEST_TEMP = '/tmp'
# The number Linux gives the machine's own pid namespace (PROC_PID_INIT_INO).
MACHINES_PID_NAMESPACE = 0xEFFFFFFC


def run_name(pid: int) -> str:
    """What names the run's files: its pid, and its pid namespace's number
    where that is not the machine's own.  Pids repeat across namespaces:
    two containers sharing /tmp, each with ansible-playbook as pid 1,
    shared one broker, which read one run's files for the other's tasks."""
    try:
        namespace = os.stat('/proc/self/ns/pid').st_ino
    except OSError:
        return str(pid)
    if namespace == MACHINES_PID_NAMESPACE:
        return str(pid)
    return '%d-%d' % (pid, namespace)


def private_dir(room: int = 0) -> str:
    """A directory only this user can enter, where the run's broker
    listens: the temporary directory's ``plasmid-ansible-UID``, or, where
    another user has taken that name first (which would stop every run of
    ours), or where a file name of *room* characters in it would make too
    long a path for a socket (a deep $TMPDIR), one in $XDG_RUNTIME_DIR,
    under ~/.ansible or in /tmp.  Every process of a run finds the same
    one."""
    uid = os.getuid()
    places = [os.path.join(tempfile.gettempdir(), 'plasmid-ansible-%d' % uid)]
    if os.environ.get('XDG_RUNTIME_DIR'):
        places.append(os.path.join(os.environ['XDG_RUNTIME_DIR'],
                                   'plasmid-ansible'))
    places.append(os.path.join(os.path.expanduser('~'), '.ansible',
                               'plasmid-%s' % socket.gethostname()))
    shortest = os.path.join(SHORTEST_TEMP, 'plasmid-ansible-%d' % uid)
    if shortest not in places:
        places.append(shortest)
    refused = []
    for path in places:
        if len(os.fsencode(path)) + 1 + room > LONGEST_SOCKET_PATH:
            refused.append('%s (too long a path for a socket)' % path)
        elif _made_private(path):
            return path
        else:
            refused.append(path)
    raise BrokerError('broker', 'no private directory of this user for the '
                      'plasmid broker: %s' % ', '.join(refused))


def _made_private(path: str) -> bool:
    """Whether *path* is (now) a directory of this user's that no one
    else may enter: made if missing, never changed if not ours."""
    try:
        os.makedirs(os.path.dirname(path), 0o700, exist_ok=True)
    except OSError:  # a file in the way, a place we may not write
        return False
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and \
        not info.st_mode & 0o077


class Client:
    """One worker's connection to its run's broker."""

    def __init__(self, pid: Optional[int] = None,
                 base: Optional[str] = None) -> None:
        """*base*: the run's private directory, where the broker knows it
        (looked for again at the run's end, on a full disk, the temporary
        directory may no longer be the one it was)."""
        self.pid = pid or run_pid()
        name = 'broker-' + run_name(self.pid)
        base = base or private_dir(room=len(name + '.sock'))
        self.path = os.path.join(base, name + '.sock')
        self.lock_path = os.path.join(base, name + '.lock')
        self.log_path = os.path.join(base, name + '.log')
        self.sock: Optional[socket.socket] = None
        # What the broker's answers told the worker to show; it takes them.
        self.warnings: list[str] = []

    def connect(self) -> None:
        if self.sock is not None:
            return
        sock = self._try_connect()
        if sock is None:
            with _START_LOCK, open(self.lock_path, 'w') as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                sock = self._try_connect() or self._start()
        self.sock = sock

    def _try_connect(self) -> Optional[socket.socket]:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            return None
        return sock

    def _start(self) -> socket.socket:
        if not process_alive(self.pid):
            # A worker of a killed run, orphaned: a broker for it would
            # log in to its host for nothing before it saw the run gone.
            raise BrokerError('broker', 'the run (pid %d) has ended: no '
                              'plasmid broker is started for it' % self.pid)
        try:
            os.unlink(self.path)  # left by a run whose pid came back
        except FileNotFoundError:
            pass
        with open(self.log_path, 'ab') as log:
            os.utime(self.log_path)  # the newest: no other run prunes it
            # -P: not the working directory (the play's) first on its
            # sys.path, from where targets could import and read what
            # vanilla never sends them (the broker serves what it imports).
            proc = subprocess.Popen(
                [sys.executable, '-P', '-m', 'plasmid.ansible.broker',
                 self.path, str(self.pid)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True, close_fds=True)
        ready = _said_ready(proc)
        proc.stdout.close()
        sock = self._try_connect() if ready else None
        if sock is None:
            raise BrokerError('broker', 'the plasmid broker did not start; '
                              'see %s' % self.log_path)
        return sock

    def call(self, op: str, *args: Any) -> Any:
        self.connect()
        try:
            wire.send(self.sock, (op, args))
            answer = wire.receive(self.sock)
        except (OSError, wire.BrokerGone) as exc:
            self.close()
            raise BrokerError('broker', 'lost the plasmid broker (%s); its '
                              'log: %s' % (exc, self.log_path))
        except BaseException:
            # Interrupted mid-call (a task's timeout raises in here): the
            # answer must not be read as the next call's.  Hanging up also
            # tells the broker that nobody waits for this one.
            self.close()
            raise
        ok = answer[0] == 'ok'
        told = answer[2:] if ok else answer[3:]  # the warnings, if any
        if told:
            self.warnings.extend(told[0])
        if ok:
            return answer[1]
        raise BrokerError(answer[1], answer[2])

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def remove_run_files(self) -> None:
        """For the broker, once the run is over: its socket and lock file
        go, and so does its log unless something was written there (one of
        each per run would pile up in the private directory); of the logs
        kept, those beyond the LOGS_KEPT newest go too."""
        for path, only_if_empty in ((self.path, False),
                                    (self.lock_path, False),
                                    (self.log_path, True)):
            try:
                if not only_if_empty or os.path.getsize(path) == 0:
                    os.unlink(path)
            except OSError:
                pass
        _prune_logs(os.path.dirname(self.path))


def process_alive(pid: int) -> bool:
    """Whether *pid* still runs.  A process that exited but was not yet
    reaped by its parent (a zombie) has ended: its parent may be waiting
    for us to end first (a profiler following its children does)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open('/proc/%d/stat' % pid) as handle:
            state = handle.read().rpartition(')')[2].split()[0]
    except (OSError, IndexError):
        return True     # no /proc here: kill() is all we know
    return state not in ('Z', 'X')


def _said_ready(proc: subprocess.Popen) -> bool:
    """Whether the starting broker wrote its ``ready`` line within
    START_TIMEOUT; killed if it has not."""
    deadline = time.monotonic() + START_TIMEOUT
    said = b''
    # poll, not select: a worker of many forks may hold fds past 1023.
    waiting = select.poll()
    waiting.register(proc.stdout.fileno(), select.POLLIN)
    while not said.endswith(b'\n'):
        left = deadline - time.monotonic()
        if left <= 0 or not waiting.poll(left * 1000):
            proc.kill()
            proc.wait()
            return False
        piece = os.read(proc.stdout.fileno(), 64)
        if not piece:
            break
        said += piece
    return said == b'ready\n'


def _prune_logs(base: str) -> None:
    """Remove all but the LOGS_KEPT newest broker logs in *base*, but for
    those of runs still going (their socket is there)."""
    logs = []
    for path in glob.glob(os.path.join(base, 'broker-*.log')):
        try:
            logs.append((os.path.getmtime(path), path))
        except OSError:
            pass
    for _, path in sorted(logs, reverse=True)[LOGS_KEPT:]:
        if not os.path.exists(path[:-len('.log')] + '.sock'):
            try:
                os.unlink(path)
            except OSError:
                pass


# Threads of one process start the broker one at a time.  A worker forked
# while a thread held the start-up file lock would inherit its descriptor,
# keep the lock held and wait for it: the strategy forks holding this.
_START_LOCK = threading.Lock()


def _fresh_start_lock() -> None:
    global _START_LOCK
    _START_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_fresh_start_lock)


def start_lock() -> threading.Lock:
    return _START_LOCK


def start_broker_early(wait_at_exit: bool = False,
                       client: Optional[Client] = None) -> None:
    """Start this run's broker on a thread of its own, so that the first
    task finds it listening: ansible-core prepares that task (templating,
    building the module's payload) for longer than the broker takes to
    start (both ~0.15-0.3 s here).  A broker that fails to start is
    reported by the first task that needs it; where no thread can be had
    ("can't start new thread"), that task starts it itself (the
    connection's is_pipelining_enabled asks for this early start, and
    must not fail the task for it).  *wait_at_exit*: the process waits
    for the start before it exits (a forked worker whose task ended
    first: the next worker would find the broker neither listening nor
    being started, and start a second one).  *client*: one made for this
    run already (its paths found), to start it with."""
    def start() -> None:
        starter = client or Client()
        try:
            starter.connect()
        except (BrokerError, OSError):
            pass
        finally:
            starter.close()
    try:
        threading.Thread(target=start, name='plasmid-broker-start',
                         daemon=not wait_at_exit).start()
    except RuntimeError:  # no thread to be had: the first task starts it
        pass


def start_broker_if_missing() -> None:
    """For a task about to build its module (ansible-core 2.19+ asks the
    connection whether it pipelines first, 2.18 reads its has_pipelining):
    the run's broker starts meanwhile, unless it is there or being started
    by this process."""
    if _START_LOCK.locked():
        return
    try:
        client = Client()
    except BrokerError:
        return  # the task's own call reports it
    if not os.path.exists(client.path):
        start_broker_early(wait_at_exit=True, client=client)
