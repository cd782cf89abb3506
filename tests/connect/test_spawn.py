"""plasmid.connect.spawn: the first stage, and clean failures of connect()."""
from __future__ import annotations

import logging
import os
import resource
import shlex
import subprocess
import sys
import time
import zlib

import pytest

import connect_fns
import plasmid
from plasmid.connect import local, spawn, ssh, sudo
from testbed.fds import new_since, open_files
from testbed.interposed import interposed
from testbed.ports import free_port
from testbed.procs import wait_gone
from testbed.pythons import require_python

# Python 2.7-compatible payload: the first stage runs it with exec().
PAYLOAD = (b"import os, sys\n"
           b"text = 'payload ran on %d.%d' % sys.version_info[:2]\n"
           b"os.write(1, text.encode('ascii'))\n")


def ready_line(version: str) -> bytes:
    """The first stage's ready marker on Python *version* ("X.Y")."""
    return spawn.READY + version.encode('ascii') + b'\n'


def _run_first_stage(python, stdin: bytes, blob_size: int):
    argv = spawn.boot_argv(python, blob_size)
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=60)


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13', 'master'])
def test_first_stage_runs_blob_from_stdin(version: str) -> None:
    python = require_python(version)
    expected = '%d.%d' % sys.version_info[:2] if version == 'master' \
        else version
    blob = zlib.compress(PAYLOAD)
    result = _run_first_stage(python, blob, len(blob))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ready_line(expected) + b'payload ran on ' + \
        expected.encode()


@pytest.mark.parametrize('version', ['2.7', '3.13'])
def test_first_stage_gives_up_on_short_input(version: str) -> None:
    # The parent went away mid-blob: exit, never exec a truncated blob.
    blob = zlib.compress(PAYLOAD)
    result = _run_first_stage(require_python(version), blob[:-3], len(blob))
    assert result.returncode == 1
    assert result.stdout == ready_line(version)


@pytest.mark.parametrize('version', ['2.7', '3.6', '3.13', 'master'])
def test_first_stage_carrying_runs_the_blob_from_its_argv(version: str
                                                          ) -> None:
    """The ssh and local form: core and BOOT are words of the command
    line; stdin is not read, and sys.argv is left as ['-c']."""
    python = require_python(version)
    payload = (b"import os, sys\n"
               b"os.write(1, f + repr(sys.argv).encode('ascii'))\n")
    argv = spawn.boot_argv_carrying(python, zlib.compress(payload),
                                    b'boot\x00frame ')
    result = subprocess.run(argv, stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    expected = '%d.%d' % sys.version_info[:2] if version == 'master' \
        else version
    assert result.stdout == ready_line(expected) + b"boot\x00frame ['-c']"


@pytest.mark.parametrize('output, python, rest', [
    (b'PLASMID-READY3.11\nhello', (3, 11), b'hello'),
    (b'motd\r\nPLASMID-READY2.7\n', (2, 7), b''),
    # Cut before the line ends: the line is kept for the next read.
    (b'banner PLASMID-READY3.1', None, b'PLASMID-READY3.1'),
    (b'PLASMID-', None, b'PLASMID-'),
    # The word elsewhere than in our line is passed over.
    (b'PLASMID-READY is up\nPLASMID-READY3.13\nx', (3, 13), b'x'),
    (b'PLASMID-READY' + b'9' * 40, None, b'9' * 13),
])
def test_the_ready_marker_gives_the_pythons_version(output, python,
                                                    rest) -> None:
    assert spawn.split_at_ready(output) == (python, rest)


def test_a_local_boot_needs_nothing_from_stdin() -> None:
    """Behind an interpreter whose stdin is held until it has answered, a
    local context boots (its core came on the command line) and then
    serves calls through that stdin; a sudo context, whose core follows on
    stdin, would wait there."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=interposed(sys.executable,
                                                  stdin_held=True))
        assert ctx.call(os.getpid) != os.getpid()


def test_boot_argv_shape() -> None:
    argv = spawn.boot_argv('python3', 1234)
    assert argv[:2] == ['python3', '-c']
    assert len(argv) == 3
    # A list python_path (an interpreter with options) is kept whole.
    argv = spawn.boot_argv(['env', 'python3', '-u'], 1234)
    assert argv[:4] == ['env', 'python3', '-u', '-c']
    # Plain ASCII: it travels through ssh and a remote shell.
    assert argv[-1].isascii()
    carrying = spawn.boot_argv_carrying('python3', b'\x00core', b'boot')
    assert carrying[:2] == ['python3', '-c'] and len(carrying) == 5
    assert all(word.isascii() for word in carrying)


def test_method_argv_ends_with_boot_argv() -> None:
    boot = spawn.boot_argv('python3', 10)
    assert local.argv({}, boot) == boot
    sudo_argv = sudo.argv({'username': 'plasmid-b'}, boot)
    assert sudo_argv[0] == 'sudo' and sudo_argv[-len(boot) - 1:] == \
        ['--'] + boot
    assert sudo_argv[sudo_argv.index('-u') + 1] == 'plasmid-b'
    ssh_argv = ssh.argv({'hostname': 'example.invalid', 'port': 2222,
                         'username': 'u'}, boot)
    assert ssh_argv[0] == 'ssh'
    assert ssh_argv[-2] == 'example.invalid'
    # The remote shell turns the command back into exactly boot_argv,
    # run in its own place.
    assert shlex.split(ssh_argv[-1]) == ['exec'] + boot
    # No password: ssh must fail instead of prompting.
    assert 'BatchMode=yes' in ssh_argv


# ----------------------------------------------- failed connects leak nothing

def _children() -> dict[int, str]:
    """{pid: state} of this process's children."""
    me = os.getpid()
    found = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found[int(name)] = fields[0]
    return found


FAILURES = {
    # Process() cannot even start the program.
    'no program': dict(python_path='/nonexistent/plasmid/python'),
    # The program starts, but exits without booting.
    'exits': dict(python_path=[sys.executable, '-c', 'raise SystemExit(3)']),
    # The program closes its stdout, but goes on running: killed.
    'closes its output': dict(python_path=[
        sys.executable, '-c', 'import os, time; os.close(1); time.sleep(30)']),
    # The program starts and never answers: killed at connect_timeout.
    'silent': dict(python_path=[sys.executable, '-c',
                                'import time; time.sleep(60)'],
                   connect_timeout=1),
}


@pytest.mark.parametrize('case', sorted(FAILURES))
def test_failed_local_connect_leaks_no_fd_and_no_zombie(case: str) -> None:
    with plasmid.Router() as router:
        fds = open_files()
        children = _children()
        with pytest.raises(plasmid.ConnectError):
            router.local(**FAILURES[case])
        assert not new_since(fds)
        assert _children() == children
        assert router.streams == []
        # The router is still fine for the next context.
        ctx = router.local()
        assert ctx.call(os.getpid) == ctx.info['pid']


def test_failed_ssh_connect_leaks_no_fd_and_no_zombie() -> None:
    # Needs no server: nothing listens on the port.
    with plasmid.Router() as router:
        fds = open_files()
        children = _children()
        with pytest.raises(plasmid.ConnectError) as info:
            router.ssh('127.0.0.1', port=free_port(),
                       ssh_args=['-F', '/dev/null'])
        assert 'Connection refused' in str(info.value)
        assert not new_since(fds)
        assert _children() == children


def test_a_start_keeps_only_the_last_of_a_flood_of_stderr(tmp_path) -> None:
    """All of it was kept, copied whole at each read (a start that wrote
    250 MiB spent its whole timeout copying), and quoted whole."""
    noisy = tmp_path / 'noisy-python'
    noisy.write_text('#!/bin/sh\nyes x | head -c 4000000 >&2\n'
                     'echo " the last words" >&2\nexit 3\n')
    noisy.chmod(0o755)
    with plasmid.Router() as router:
        with pytest.raises(plasmid.ConnectError) as info:
            router.local(python_path=str(noisy))
    said = str(info.value)
    assert 'the last words' in said
    assert 'x x x' in said and len(said) < spawn.STDERR_KEPT + 2000


def test_timeout_message_names_the_timeout() -> None:
    with plasmid.Router() as router:
        with pytest.raises(plasmid.ConnectError) as info:
            router.local(**FAILURES['silent'])
    assert 'no answer within 1s' in str(info.value)


def test_each_stage_of_a_start_has_the_whole_timeout() -> None:
    """A start slow to reach its Python (ssh on a loaded machine) and slow
    to boot it still starts, as long as neither stage alone takes longer
    than connect_timeout; a stage that stalls fails within it: the first
    in the method that starts it, the boot (which goes on after the method
    has returned) in its first call."""
    with plasmid.Router() as router:
        slow = router.local(connect_timeout=1.5, python_path=interposed(
            sys.executable, start=0.9, answer=0.9))
        assert slow.call(os.getpid) != os.getpid()
        start = time.monotonic()
        with pytest.raises(plasmid.ConnectError) as info:
            router.local(connect_timeout=1,
                         python_path=interposed(sys.executable, start=-1))
        assert 'no answer within 1s' in str(info.value)
        stalled = router.local(connect_timeout=1, python_path=interposed(
            sys.executable, answer=-1))
        with pytest.raises(plasmid.ConnectError) as info:
            stalled.call(os.getpid)
        assert 'the Python started but did not boot within 1s' in \
            str(info.value)
        assert time.monotonic() - start < 10


def test_a_start_that_breaks_off_says_whether_the_process_ended() -> None:
    """An exit during start-up gives the program's last words and counts
    as its own ending; a program that closes its output but lives on is
    stopped by us, and says so."""
    with plasmid.Router() as router:
        with pytest.raises(plasmid.ConnectError) as exited:
            router.local(python_path=[
                sys.executable, '-c',
                'import sys; sys.stderr.write("going away\\n"); sys.exit(3)'])
        with pytest.raises(plasmid.ConnectError) as killed:
            router.local(python_path=[
                sys.executable, '-c', 'import os; os.kill(os.getpid(), 9)'])
        with pytest.raises(plasmid.ConnectError) as closed:
            router.local(**FAILURES['closes its output'])
        with pytest.raises(plasmid.ConnectError) as no_python:
            router.local(python_path='/bin/true')
        # nologin says why on stdout (before: nothing but the status).
        with pytest.raises(plasmid.ConnectError) as nologin:
            router.local(python_path=[
                '/bin/sh', '-c', 'echo "This account is currently not '
                'available."; exit 1'])
    assert str(nologin.value).endswith(
        'the process exited during start-up with status 1: This account '
        'is currently not available.'), nologin.value
    assert str(killed.value).endswith(
        'the process exited during start-up (killed by signal 9)'), \
        killed.value
    assert exited.value.ended is True
    assert exited.value.output == 'going away\n'
    assert str(exited.value).endswith(
        'the process exited during start-up with status 3: going away'), \
        exited.value
    assert str(no_python.value).endswith(
        "with status 0 before its interpreter started: is "
        "python_path='/bin/true' a Python interpreter?"), no_python.value
    assert closed.value.ended is False
    assert str(closed.value).endswith(
        'the process closed its output during start-up'), closed.value


# ------------------------------------------ a lost link's last words

def _wrapped(after_exit: str) -> list:
    """A python_path whose interpreter runs under sh; when it ends, sh
    closes its stdout (the link ends there) and runs *after_exit*, as
    ssh does when its session ends: stdout first, then its reason."""
    return ['sh', '-c', '"$@"; exec 1>&-; ' + after_exit, 'sh',
            sys.executable]


def test_a_lost_link_gives_its_programs_last_words() -> None:
    """The words come after the link's stdout has ended: the stream
    waits for them, and the calls that were waiting get them.  What the
    program wrote long before does not count."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=_wrapped(
            'sleep 0.2; echo "Connection to far closed by remote host." >&2'))
        ctx.call(os.write, 2, b'an old warning\n')
        time.sleep(spawn.LAST_WORDS_RECENT + 0.3)
        with pytest.raises(plasmid.ContextLost) as lost:
            ctx.call(os._exit, 0)
        with pytest.raises(plasmid.ContextLost) as later:
            ctx.call_no_reply(os.getpid)
    said = 'Connection to far closed by remote host.\n'
    assert lost.value.said == said
    assert str(lost.value).endswith(
        'was lost: Connection to far closed by remote host.'), lost.value
    assert later.value.said == said


def test_a_line_its_program_writes_in_pieces_is_logged_whole(
        caplog: pytest.LogCaptureFixture) -> None:
    """What a context's program writes on its stderr after the start was
    logged as read: a line written in pieces (Python's traceback, on a
    stderr without a buffer) became a record per piece."""
    pieces = ('(sleep 0.3; printf Attribute >&2; sleep 0.2; printf ": " >&2;'
              ' sleep 0.2; printf "no POLLIN\\r\\nnext\\n" >&2) & ')
    caplog.set_level(logging.WARNING, logger='plasmid.ctx')
    with plasmid.Router() as router:
        ctx = router.local(name='pieces', python_path=[
            'sh', '-c', pieces + 'exec "$0" "$@"', sys.executable])
        ctx.call(time.sleep, 1.0)
    said = [r.getMessage() for r in caplog.records
            if r.name == 'plasmid.ctx.pieces']
    assert said == ['Attribute: no POLLIN', 'next']


def _stderr_records(caplog: pytest.LogCaptureFixture) -> list:
    """What the program of the context named 'wrapped' wrote on its
    stderr, as logged (by an intermediary: forwarded from its records of
    plasmid.ctx.wrapped)."""
    return [r.getMessage() for r in caplog.records
            if getattr(r, 'plasmid_origin', r.name) == 'plasmid.ctx.wrapped']


def _start_under(router, where: str, python_path: list):
    """A context whose program's stderr the master reads ('master'), or an
    intermediary on Python *where* does (its ErrorOutput, there)."""
    via = None
    if where != 'master':
        via = router.local(name='hop', python_path=require_python(where))
    return router.local(name='wrapped', via=via, python_path=python_path)


@pytest.mark.parametrize('where', ['master', '2.7', '3.13'])
def test_a_lone_carriage_return_ends_a_record(
        caplog: pytest.LogCaptureFixture, where: str) -> None:
    """A line a program rewrites in place (a progress count: text, \\r,
    text) was one record with the \\r in it; now each state is one, as
    \\r\\n and \\n end one.  A line never ended is logged at the end
    of stderr."""
    written = ('(sleep 0.3; printf "10%%\\r20%%\\r30%%\\r\\ndone\\ntail"'
               ' >&2) & ')
    caplog.set_level(logging.WARNING, logger='plasmid.ctx')
    with plasmid.Router() as router:
        ctx = _start_under(router, where, [
            'sh', '-c', written + 'exec "$0" "$@"', sys.executable])
        ctx.call(time.sleep, 1.0)
    assert _stderr_records(caplog) == ['10%', '20%', '30%', 'done', 'tail']


@pytest.mark.parametrize('where', ['master', '2.7', '3.13'])
def test_a_line_unended_when_the_link_closes_is_logged(
        caplog: pytest.LogCaptureFixture, tmp_path, where: str) -> None:
    """A line held for its end was dropped when the link closed without
    the end of stderr read: a process the program left behind holds
    stderr open, and the shutdown closed the pipe once the program had
    exited.  It is logged as the link closes."""
    pid_file = tmp_path / 'leftover'
    leftover = ('(sleep 0.3; printf "fatal: no end" >&2; exec sleep 10)'
                ' </dev/null >/dev/null & echo $! > %s; '
                % shlex.quote(str(pid_file)))
    caplog.set_level(logging.WARNING, logger='plasmid.ctx')
    try:
        with plasmid.Router() as router:
            ctx = _start_under(router, where, [
                'sh', '-c', leftover + 'exec "$0" "$@"', sys.executable])
            ctx.call(time.sleep, 1.0)  # its words come after the start
        said = _stderr_records(caplog)
    finally:
        os.kill(int(pid_file.read_text()), 9)
    assert said == ['fatal: no end']


def test_what_comes_after_the_link_closed_is_not_held(
        caplog: pytest.LogCaptureFixture) -> None:
    """Once the link is gone, the pipe may be closed at any moment: what
    a leftover holder of stderr writes then is logged as it comes (the
    router's loop on a thread of its own reads it meanwhile)."""
    caplog.set_level(logging.WARNING, logger='plasmid.ctx')
    with plasmid.Router(threaded=True) as router:
        ctx = router.local(name='wrapped', python_path=_wrapped(
            'printf "before the loss" >&2; sleep 1; printf "after it" >&2;'
            ' exec sleep 30'))
        wrapper = ctx.stream.process
        try:
            with pytest.raises(plasmid.ContextLost):
                ctx.call(os._exit, 0)
            deadline = time.monotonic() + 5
            while (len(_stderr_records(caplog)) < 2
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            said = _stderr_records(caplog)
        finally:
            wrapper.kill()
    assert said == ['before the loss', 'after it']


def test_a_link_whose_stderr_stays_open_is_lost_without_words() -> None:
    """A program that keeps stderr open after its stdout has ended does
    not hold the loss up: it comes after LAST_WORDS_WAIT, the program
    still running, and says only what was said by then."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=_wrapped('exec sleep 30'))
        wrapper = ctx.stream.process
        with pytest.raises(plasmid.ContextLost) as lost:
            ctx.call(os._exit, 0)
        running = wrapper.poll() is None  # sh still sleeps, stderr open
        wrapper.kill()
    assert running
    assert lost.value.said == ''
    assert str(lost.value).endswith('was lost'), lost.value


def test_contexts_start_where_descriptors_are_numbered_above_1023() -> None:
    # A master (or intermediary) holding hundreds of contexts has
    # descriptors past select()'s 1023: starting the next one must work,
    # here and in a Python 2.7 intermediary.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1400:
        pytest.skip('the hard limit on open files (%d) is too low' % hard)
    highest = connect_fns.hold_descriptors(1100)
    try:
        assert highest > 1100
        with plasmid.Router() as router:
            middle = router.local(python_path=require_python('2.7'))
            assert middle.call(connect_fns.getpid) != os.getpid()
            assert middle.call(connect_fns.hold_descriptors, 1100) > 1100
            child = router.local(via=middle, python_path=sys.executable)
            assert child.call(connect_fns.version_info)[:2] == \
                list(sys.version_info[:2])
            middle.call(connect_fns.release_descriptors)
    finally:
        connect_fns.release_descriptors()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# ------------------------------------------ a prompt nobody will answer

# A stand-in for su (argv: su_path username -c command): asks for the
# password, which we type, then $PROMPT_AFTER (if set) and holds there; or
# runs the command after $DELAY seconds of silence.
FAKE_SU = r'''#!/bin/sh
printf 'Password: ' >&2
read answer
printf '\n' >&2
if [ -n "$PROMPT_AFTER" ]; then
    printf '%s' "$PROMPT_AFTER" >&2
    exec sleep 600
fi
sleep "$DELAY"
exec sh -c "$3"
'''


@pytest.fixture
def fake_su(tmp_path, monkeypatch):
    path = tmp_path / 'su'
    path.write_text(FAKE_SU)
    path.chmod(0o755)
    monkeypatch.setenv('DELAY', '0')
    return str(path)


@pytest.mark.parametrize('via', ['master', '2.7'])
def test_a_prompt_we_cannot_answer_fails_at_prompt_timeout(
        fake_su, monkeypatch, via) -> None:
    """A program that asks what we cannot answer (a one-time code) fails
    once prompt_timeout has passed without more, not at connect_timeout;
    its prompt is in the error, and its process is gone.  Started here or
    by a Python 2.7 intermediary."""
    monkeypatch.setenv('PROMPT_AFTER', 'Verification code: ')
    with plasmid.Router() as router:
        middle = None if via == 'master' else \
            router.local(python_path=require_python(via))
        children = _children()
        with pytest.raises(plasmid.ConnectError) as info:
            router.su(su_path=fake_su, password='secret', prompt_timeout=1,
                      connect_timeout=30, python_path=sys.executable,
                      via=middle)
        if middle is None:
            assert _children() == children
        else:
            assert middle.call(connect_fns.wait_no_children, 5.0) == []
    said = str(info.value)
    assert 'it waits at a prompt we cannot answer (nothing more within ' \
        '1s)' in said, said
    assert said.endswith('Verification code:'), said  # su's stderr


# doas asks on a terminal of its own (the password goes there too).
FAKE_DOAS = r'''#!/bin/sh
printf 'doas (me@here) password: ' >/dev/tty
read answer </dev/tty
printf '\nYubiKey touch code: ' >/dev/tty
exec sleep 600
'''


def test_a_prompt_on_a_terminal_is_named_in_the_error(tmp_path) -> None:
    path = tmp_path / 'doas'
    path.write_text(FAKE_DOAS)
    path.chmod(0o755)
    with plasmid.Router() as router:
        with pytest.raises(plasmid.ConnectError) as info:
            router.doas(doas_path=str(path), password='secret',
                        prompt_timeout=1, connect_timeout=30,
                        python_path=sys.executable)
    said = str(info.value)
    assert said.endswith('it waits at a prompt we cannot answer (nothing '
                         'more within 1s): YubiKey touch code:'), said


def test_silence_after_an_answered_prompt_is_the_python_starting(
        fake_su, monkeypatch) -> None:
    """The newline a program writes after reading the password is no
    prompt: a slow start after it is bounded by connect_timeout alone."""
    monkeypatch.setenv('DELAY', '1.5')
    with plasmid.Router() as router:
        ctx = router.su(su_path=fake_su, password='secret',
                        prompt_timeout=0.5, python_path=sys.executable)
        assert ctx.call(os.getpid) != os.getpid()


@pytest.mark.parametrize('version', ['2.7', '3.6', 'master'])
def test_a_call_sent_as_the_core_is_read_from_stdin_is_answered(
        fake_su, version) -> None:
    """su's Python reads its core on stdin once it is up, and the start
    returns then: the first call is in the pipe before the core reads
    BOOT, and comes in the same read.  It is answered (it waits in the
    reader until the stream starts), not left there."""
    with plasmid.Router() as router:
        ctx = router.su(su_path=fake_su, password='secret',
                        python_path=require_python(version))
        assert ctx.call_async(os.getpid).result(timeout=30) == \
            ctx.info['pid']


@pytest.mark.parametrize('bad', [0, -1, 'ten', True])
@pytest.mark.parametrize('method', ['sudo', 'ssh with a password',
                                    'ssh without'])
def test_prompt_timeout_must_be_a_positive_number(bad, method) -> None:
    """Refused before anything starts, even where it would go unused
    (ssh without a password has no prompt to time)."""
    start = {
        'sudo': lambda router: router.sudo(prompt_timeout=bad),
        'ssh with a password': lambda router: router.ssh(
            'unused.invalid', password='x', prompt_timeout=bad),
        'ssh without': lambda router: router.ssh(
            'unused.invalid', prompt_timeout=bad),
    }[method]
    with plasmid.Router() as router:
        with pytest.raises(ValueError, match='prompt_timeout'):
            start(router)


# A program that cannot run the command and echoes all of it, as fish (a
# login shell some accounts have) does: unquoted, as sudo quotes a command
# it refuses, or each word in quotes, as fish shows it.
ECHOES_COMMAND = {
    'plain': 'echo "cannot run: $*" >&2; exit 127',
    'quoted': 'printf "cannot run: " >&2; printf "\'%s\' " "$@" >&2; exit 127',
}


@pytest.mark.parametrize('style', sorted(ECHOES_COMMAND))
def test_an_error_shows_the_bootstrap_in_a_word(style: str) -> None:
    """The core travels in the command line: an error quoting the command
    must not carry its 22 KB of base64, nor the first stage's code."""
    with plasmid.Router() as router:
        with pytest.raises(plasmid.ConnectError) as info:
            router.local(python_path=['/bin/sh', '-c', ECHOES_COMMAND[style],
                                      'python3'])
    said = str(info.value)
    assert 'cannot run: ' in said
    assert said.count('<bootstrap>') == 3, said  # first stage, core, BOOT
    assert "'<bootstrap>" not in said
    assert len(said) < 400, said
    assert 'zlib' not in said


def test_a_context_started_from_a_context_gets_no_coerced_locale(
        monkeypatch) -> None:
    """A Python 3.7+ that starts in the C locale sets LC_CTYPE=C.UTF-8 in
    its own environment (PEP 538); a context it started (a become hop
    under sudo, which keeps LC_*) took that over and ran without UTF-8
    mode, where one that sshd or sudo starts from a shell runs with it."""
    for name in ('LC_ALL', 'LC_CTYPE', 'LANG'):
        monkeypatch.delenv(name, raising=False)
    with plasmid.Router() as router:
        hop = router.local(name='hop', python_path=require_python('3.12'))
        assert tuple(hop.call(connect_fns.locale_mode)) == ('C.UTF-8', 1)
        below = router.local(via=hop, python_path=require_python('3.12'))
        # Coerced itself, as a start from a shell would be: not given it.
        assert tuple(below.call(connect_fns.locale_mode)) == ('C.UTF-8', 1)


@pytest.mark.parametrize('version', ['2.7', 'master'])
def test_what_a_child_wrote_before_exiting_waits_while_its_link_is_paused(
        caplog, version: str) -> None:
    """An intermediary whose parent reads slowly stops reading its
    children's links (Stream.hold); a child that exited meanwhile had its
    link ended 0.25 s later with what it wrote still unread in the pipe,
    as if another process held the link: its last output was lost."""
    caplog.set_level(logging.INFO, logger='plasmid')
    with plasmid.Router() as router:
        python = require_python(version)
        top = router.local(name='pausing', python_path=python)
        below = router.local(name='exiting', via=top, python_path=python)
        pid = below.call(connect_fns.getpid)
        assert pid == below.info['pid']
        assert top.call(connect_fns.pause_reading_children, True) == 1
        below.call_no_reply(connect_fns.print_then_exit, 200)
        # It exits (and that while its link is paused)...
        assert wait_gone([pid], 30) == set()
        # ... ExitWatch sees it (on 2.7 by polling each EXIT_POLL) and
        # waits its EXITED_LINK_WAIT, nothing read meanwhile.
        time.sleep(spawn.EXIT_POLL + 2 * spawn.EXITED_LINK_WAIT + 0.5)
        assert below.is_alive()  # nothing of its link read: not seen yet
        top.call(connect_fns.pause_reading_children, False)
        deadline = time.monotonic() + 10
        while below.is_alive() and time.monotonic() < deadline:
            top.call(connect_fns.sleep, 0.05)  # the master's loop runs
        assert not below.is_alive()  # its link ended once read
    lines = [r.getMessage() for r in caplog.records
             if r.name == 'plasmid.ctx.exiting']
    assert lines == ['line %d' % i for i in range(200)]
    assert not [r for r in caplog.records
                if 'another process holds' in r.getMessage()]
