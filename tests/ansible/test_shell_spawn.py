"""plasmid.ansible.shell_spawn: target.shell's commands start by posix_spawn on
Python 3.8+ and find what subprocess and a preexec_fn gave them before
(sshd's start): their own session, default signals but SIGXFSZ ignored, no
descriptor beyond 0-2, the input given, both outputs whole; on a terminal
(raw, script), the terminal as their controlling one, and a password typed
at a prompt as before."""
from __future__ import annotations

import pytest

import plasmid
from plasmid.ansible import target
from testbed.pythons import require_python

import shell_spawn_fns

# What a command reports of how it started: session leader or not, its
# ignored and blocked signals, its open descriptors and its input.
REPORT = ('[ "$(ps -o sid= -p $$)" -eq $$ ] && echo own-session; '
          'grep -E "^Sig(Ign|Blk)" /proc/self/status; '
          'ls /proc/$$/fd; cat; echo to-stderr >&2; exit 7')
# glibc's posix_spawn leaves its two internal signals (32 and 33) ignored
# in the command, as glibc's own system() and popen() do; no program
# can handle them (glibc refuses), and subprocess's children do not have
# them ignored.  Everything else must match.
GLIBC_INTERNAL = 0x180000000


def _without_glibc_internal(report: bytes) -> bytes:
    lines = []
    for line in report.split(b'\n'):
        if line.startswith(b'SigIgn:'):
            mask = int(line.split()[1], 16) & ~GLIBC_INTERNAL
            line = b'SigIgn:\t%016x' % mask
        lines.append(line)
    return b'\n'.join(lines)


def _shell_calls(version: str, spawn: bool, *calls) -> list:
    """Each of *calls* (target.shell's arguments) in one context that
    inherited oddly, its commands started by posix_spawn or by
    subprocess."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(shell_spawn_fns.spawn_available) is True
        if not spawn:
            ctx.call(shell_spawn_fns.by_subprocess_only)
        ctx.call(shell_spawn_fns.inherit_oddly)
        return [ctx.call(target.shell, *call) for call in calls]


def _report(version: str, spawn: bool, become: bool):
    """REPORT's output, the command run as a plain one or, with *become*,
    as a become command (a marker to wait for: the prompt path)."""
    if not become:
        return _shell_calls(version, spawn, (REPORT, b'the input\n'))[0]
    rc, out, err = _shell_calls(
        version, spawn, ('echo MARKER; ' + REPORT, b'the input\n',
                         b'Secret:', b'right', b'MARKER'))[0]
    assert out.startswith(b'MARKER\n'), out
    return rc, out[len(b'MARKER\n'):], err


@pytest.mark.parametrize('become', [False, True], ids=['plain', 'become'])
@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_a_spawned_command_starts_as_one_started_by_subprocess(version,
                                                               become):
    spawned = _report(version, True, become)
    forked = _report(version, False, become)
    rc, out, err = spawned
    assert (rc, err) == (7, b'to-stderr\n')
    assert out.startswith(b'own-session\nSigBlk:\t0000000000000000\n'), out
    ignored = int(out.split(b'SigIgn:')[1].split()[0], 16)
    assert ignored & ~GLIBC_INTERNAL == 1 << 24, out  # SIGXFSZ alone
    # The internal two show that posix_spawn started it (target.shell did
    # use it), and only it.
    assert ignored & GLIBC_INTERNAL == GLIBC_INTERNAL, out
    assert b'SigIgn:\t0000000001000000\n' in forked[1], forked
    assert out.endswith(b'\n0\n1\n2\nthe input\n'), out
    assert (forked[0], forked[2]) == (rc, err)
    assert _without_glibc_internal(forked[1]) == \
        _without_glibc_internal(out)


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_large_input_and_output_pass_whole(version):
    data = bytes(range(256)) * 12000  # 3 MB: many times a pipe's buffer
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        rc, out, err = ctx.call(
            target.shell, 'cat; head -c 2000000 /dev/zero >&2', data)
        assert (rc, out == data, err == bytes(2000000)) == (0, True, True)
        # Input the command never reads, and a command killed by a signal.
        assert ctx.call(target.shell, 'exit 0', data) == (0, b'', b'')
        assert ctx.call(target.shell, 'kill -9 $$') == (-9, b'', b'')
        piped = ctx.call(target.shell, 'yes | head -2')
        assert piped == (0, b'y\ny\n', b'')  # yes: killed by SIGPIPE


def test_python_2_starts_commands_by_subprocess():
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('2.7'))
        assert ctx.call(shell_spawn_fns.spawn_available) is False
        ctx.call(shell_spawn_fns.inherit_oddly)
        rc, out, err = ctx.call(target.shell, REPORT, b'the input\n')
        # Python 2's str arrives as text.
        assert (rc, err) == (7, 'to-stderr\n')
        assert out == ('own-session\nSigBlk:\t0000000000000000\n'
                       'SigIgn:\t0000000001000000\n0\n1\n2\nthe input\n')


def test_a_process_without_its_stdin_leaves_commands_to_subprocess():
    """A pipe would get fd 0, which the command's dup2 could not give it
    as stdin: spawn declines, nothing runs."""
    import os
    import subprocess
    import sys
    code = ('import os; os.close(0); from plasmid.ansible import '
            'shell_spawn; print(shell_spawn.start_on_pipes("/bin/sh", ["sh", '
            '"-c", "echo ran"], dict(os.environ)))')
    checkout = os.path.dirname(os.path.dirname(plasmid.__file__))
    done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          stdin=subprocess.DEVNULL, check=True,
                          env=dict(os.environ, PYTHONPATH=checkout))
    assert done.stdout == b'None\n', done


# On a terminal (raw, script): what the command reports (ls lists in
# columns there), and, run as a job of a shell holding the terminal,
# whether it is in the foreground.
TERMINAL_REPORT = (
    '[ "$(ps -o sid= -p $$)" -eq $$ ] && echo own-session; '
    '[ "$(ps -o tpgid= -p $$)" -eq $$ ] && echo controls-terminal; '
    'tty >/dev/null && echo stdin-is-a-terminal; '
    'grep -E "^Sig(Ign|Blk)" /proc/self/status; ls /proc/$$/fd; '
    'echo "[$TERM]"; echo to-stderr >&2; exit 7')
JOB_REPORT = ('[ "$(ps -o tpgid= -p $$)" -eq "$(ps -o pgid= -p $$)" ] '
              '&& echo foreground; tty >/dev/null && echo on-a-terminal')


@pytest.mark.parametrize('version', ['3.8', '3.13'])
def test_a_command_on_a_terminal_starts_as_one_started_by_subprocess(
        version):
    calls = [(TERMINAL_REPORT, None, None, None, None, 'vt220'),
             (JOB_REPORT, None, None, None, None, '', 30, True)]
    spawned = _shell_calls(version, True, *calls)
    forked = _shell_calls(version, False, *calls)
    rc, out, err = spawned[0]
    assert (rc, err) == (7, b'')
    assert out.startswith(b'own-session\r\ncontrols-terminal\r\n'
                          b'stdin-is-a-terminal\r\n'
                          b'SigBlk:\t0000000000000000\r\n'), out
    ignored = int(out.split(b'SigIgn:')[1].split()[0], 16)
    assert ignored == GLIBC_INTERNAL | 1 << 24, out  # and SIGXFSZ alone
    assert out.endswith(b'\r\n0  1  2\r\n[vt220]\r\nto-stderr\r\n'), out
    assert b'SigIgn:\t0000000001000000\r\n' in forked[0][1], forked
    assert _without_glibc_internal(forked[0][1].replace(b'\r\n', b'\n')) == \
        _without_glibc_internal(out.replace(b'\r\n', b'\n'))
    assert spawned[1] == forked[1] == (0, b'foreground\r\non-a-terminal\r\n',
                                       b'')


# A become program's exchange: a prompt (on stderr, as sudo -S gives it),
# the password read without echo on a terminal, the marker, the command's
# input (on pipes) and output.
BECOME_LIKE = ('[ -t 0 ] && stty -echo; printf "Secret: " >&2; read answer; '
               '[ -t 0 ] && stty echo; echo >&2; [ "$answer" = right ] || '
               '{ printf "Secret: " >&2; sleep 30; }; echo MARKER; '
               '[ -t 0 ] || cat; echo "ran as asked"')
# What it gives, by password and whether it ran on a terminal: the line of
# the prompt answered left out, as vanilla's ssh plugin leaves it out.
BECOME_LIKE_SAYS = {
    (b'right', True): (0, b'\r\nMARKER\r\nran as asked\r\n', b''),
    (b'wrong', True): (-9, b'\r\nSecret: ', b''),
    (b'right', False): (0, b'MARKER\nthe input\nran as asked\n', b'\n'),
    (b'wrong', False): (-9, b'', b'\nSecret: '),
}


@pytest.mark.parametrize('on_terminal', [True, False],
                         ids=['terminal', 'pipes'])
@pytest.mark.parametrize('password', [b'right', b'wrong'])
def test_a_password_is_typed_on_a_spawned_command_as_before(
        password, on_terminal):
    """The prompt path reads the command's terminal or pipes, types the
    password and then the input and, on a refused password, kills the
    command's session: the same with either start."""
    call = (BECOME_LIKE, None if on_terminal else b'the input\n',
            b'Secret:', password, b'MARKER', '' if on_terminal else None)
    spawned, = _shell_calls('3.13', True, call)
    forked, = _shell_calls('3.13', False, call)
    assert spawned == forked
    assert spawned == BECOME_LIKE_SAYS[password, on_terminal]


def test_a_terminal_that_does_not_open_by_name_leaves_it_to_subprocess():
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('3.13'))
        ctx.call(shell_spawn_fns.terminals_without_a_name)
        rc, out, err = ctx.call(target.shell, TERMINAL_REPORT, None, None,
                                None, None, 'vt220')
    assert (rc, err) == (7, b'')
    assert b'controls-terminal\r\n' in out, out
    assert b'SigIgn:\t0000000001000000\r\n' in out, out  # not spawned


@pytest.mark.parametrize('spawn', [True, False], ids=['spawn', 'subprocess'])
@pytest.mark.parametrize('terminal', [None, ''], ids=['pipes', 'terminal'])
def test_a_failure_midway_leaves_no_command_or_zombie(terminal, spawn):
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python('3.13'))
        if not spawn:
            ctx.call(shell_spawn_fns.by_subprocess_only)
        assert ctx.call(shell_spawn_fns.children_left_by_a_failure,
                        terminal) == ('broken on the way', [])
