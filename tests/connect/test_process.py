"""plasmid.connect.process.Process: real child programs, pipes and ptys."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys

import pytest

from plasmid.connect.process import Process
from plasmid.core.errors import ConnectError
from testbed.fds import new_since, open_files


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: a pty whose other side is gone
            break
        if not data:
            break
        chunks.append(data)
    return b''.join(chunks)


def _run(code: str, tty: bool = False, stdin: bytes = b''):
    """Run Python *code* in a Process; -> (status, stdout, stderr, proc)."""
    proc = Process([sys.executable, '-c', code], tty=tty)
    try:
        if stdin:
            os.write(proc.stdin, stdin)
        os.close(proc.stdin)
        proc.stdin = None
        out = _read_all(proc.stdout)
        err = _read_all(proc.stderr)
        status = proc.popen.wait(30)
    finally:
        proc.close_all()
    return status, out, err, proc


@pytest.mark.parametrize('tty', [False, True])
def test_missing_program_is_a_connect_error(tty: bool) -> None:
    before = open_files()
    with pytest.raises(ConnectError) as info:
        Process(['/nonexistent/plasmid-program', '-c', 'x'], tty=tty)
    assert str(info.value) == ('cannot run /nonexistent/plasmid-program: '
                               '[Errno 2] No such file or directory')
    # Every pipe (and pty) end opened for it was closed again.
    assert not new_since(before)


def test_pipes_carry_stdin_stdout_stderr() -> None:
    code = ('import sys; data = sys.stdin.read(); '
            'sys.stdout.write(data.upper()); sys.stderr.write("err:" + data)')
    status, out, err, _ = _run(code, stdin=b'abc')
    assert (status, out, err) == (0, b'ABC', b'err:abc')


@pytest.mark.parametrize('tty', [False, True])
def test_child_runs_in_its_own_session(tty: bool) -> None:
    # Its own session keeps it off our terminal: a Ctrl-C there is the
    # master's business (it shuts contexts down itself).
    code = ('import os, sys; '
            'sys.stdout.write("%d %d" % (os.getsid(0), os.getpid()))')
    status, out, _, proc = _run(code, tty=tty)
    sid, pid = out.decode().split()
    assert status == 0
    assert int(sid) == int(pid) == proc.pid
    assert os.getsid(0) != proc.pid


def test_without_tty_no_python_runs_in_a_forked_copy(monkeypatch) -> None:
    # A preexec_fn makes Popen fork this whole process and run Python in
    # the copy, where a lock held by another thread at the fork stays held;
    # without one, Python 3.10+ starts the child by vfork.
    seen = []
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        seen.append(kwargs)
        return real_popen(*args, **kwargs)
    monkeypatch.setattr(subprocess, 'Popen', recording_popen)
    status, out, _, _ = _run('print("ran")')
    assert (status, out) == (0, b'ran\n')
    assert seen[0].get('preexec_fn') is None
    assert seen[0]['start_new_session'] is True


def test_without_tty_there_is_no_terminal_to_prompt_on() -> None:
    code = ('import os\ntry:\n    os.open("/dev/tty", os.O_RDWR)\n'
            '    print("tty")\nexcept OSError:\n    print("no tty")\n')
    status, out, _, proc = _run(code)
    assert (status, out) == (0, b'no tty\n')
    assert proc.tty_fd is None


def test_with_tty_prompts_go_to_the_pty_with_echo_off() -> None:
    # What a program writes to /dev/tty (a password prompt) arrives on
    # tty_fd, and echo is off so an answer would not come back.
    code = ('import os, termios\nfd = os.open("/dev/tty", os.O_RDWR)\n'
            'echo = termios.tcgetattr(fd)[3] & termios.ECHO\n'
            'os.write(fd, b"Password: ")\n'
            'print("echo" if echo else "no echo")\n')
    proc = Process([sys.executable, '-c', code], tty=True)
    try:
        assert proc.tty_fd is not None
        out = _read_all(proc.stdout)
        assert proc.popen.wait(30) == 0
        proc.close_tty_slave()
        prompt = _read_all(proc.tty_fd)
    finally:
        proc.close_all()
    assert out == b'no echo\n'
    assert prompt == b'Password: '


def test_kill_and_terminate() -> None:
    for stop, signum in ((Process.kill, signal.SIGKILL),
                         (Process.terminate, signal.SIGTERM)):
        proc = Process(['sleep', '60'])
        try:
            assert proc.poll() is None
            stop(proc)
            assert proc.popen.wait(30) == -signum
            stop(proc)  # a second time on an exited process is harmless
        finally:
            proc.close_all()


def test_kill_takes_what_the_program_started_too(tmp_path) -> None:
    """A "python" that is a wrapper running a child and waiting (or a
    start that never speaks): killing it killed the wrapper alone, and
    its child lived on under init."""
    pidfile = tmp_path / 'child.pid'
    proc = Process(['/bin/sh', '-c', 'sleep 60 & echo $! > %s; wait'
                    % pidfile])
    try:
        for _ in range(300):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            subprocess.run(['sleep', '0.01'])
        child = int(pidfile.read_text())
        proc.kill()
        assert proc.popen.wait(30) == -signal.SIGKILL
        for _ in range(300):
            try:
                os.kill(child, 0)
            except ProcessLookupError:
                break
            with open('/proc/%d/stat' % child) as stat:
                if stat.read().split(') ')[1].startswith('Z'):
                    break  # killed; init has yet to reap it
            subprocess.run(['sleep', '0.01'])
        else:
            os.kill(child, signal.SIGKILL)
            raise AssertionError('the wrapper\'s child outlived kill()')
    finally:
        proc.close_all()


def test_close_all_closes_every_fd() -> None:
    before = open_files()
    proc = Process(['sleep', '60'], tty=True)
    assert new_since(before)
    proc.kill()
    proc.popen.wait(30)
    proc.close_all()
    assert not new_since(before)
    assert (proc.stdin, proc.stdout, proc.stderr, proc.tty_fd) == \
        (None, None, None, None)


# Run in a process of its own: it lowers its limits, which cannot be undone.
MANY_PROCESSES = r'''
import json, os, resource, sys
from plasmid.connect.process import Process
from plasmid.core.errors import ConnectError
soft, hard, count = map(int, sys.argv[1:])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
fds_before = len(os.listdir('/proc/self/fd'))
procs, error = [], None
try:
    for _ in range(count):
        procs.append(Process(['sleep', '60']))
except ConnectError as exc:
    error = str(exc)
raised_to = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
for proc in procs:
    proc.kill()
    proc.popen.wait()
    proc.close_all()
print(json.dumps(dict(started=len(procs), error=error, soft=raised_to,
                      leaked=len(os.listdir('/proc/self/fd')) - fds_before)))
'''


def _many_processes(soft: int, hard: int, count: int) -> dict:
    _, our_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if our_hard != resource.RLIM_INFINITY and our_hard < hard:
        pytest.skip('the hard limit on open files (%d) is too low' % our_hard)
    result = subprocess.run(
        [sys.executable, '-c', MANY_PROCESSES, str(soft), str(hard),
         str(count)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_soft_limit_on_descriptors_rises_as_processes_need() -> None:
    # 80 processes hold 240 descriptors, far past a soft limit of 96.
    outcome = _many_processes(96, 1024, 80)
    assert outcome == dict(started=80, error=None, soft=outcome['soft'],
                           leaked=0)
    assert 240 < outcome['soft'] <= 1024


def test_out_of_descriptors_is_a_connect_error_that_says_so() -> None:
    outcome = _many_processes(96, 96, 80)
    assert 20 < outcome['started'] < 32
    assert outcome['error'] == (
        'cannot run sleep: this process has used up its open file '
        'descriptors (limit 96, hard limit 96; each context started from '
        'here holds four): raise the hard limit (ulimit -Hn) or start '
        'contexts through intermediaries')
    assert (outcome['soft'], outcome['leaked']) == (96, 0)
