"""Ctrl-C in a master (plasmid.master.interrupts)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from plasmid.master import interrupts
from testbed.procs import interruptible

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       'master_scripts')


def test_an_interrupted_wait_loses_no_reply() -> None:
    """Replies that had arrived, or were being read, when a KeyboardInterrupt
    struck were lost: their futures never finished (before, 281 and 970
    of 3000 in two rounds of eight)."""
    done = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, 'interrupted_waits.py'),
         '16'], capture_output=True, text=True, timeout=300,
        preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen['hits'] >= 1, seen  # the interrupt struck some waits
    assert seen['lost'] == 0, seen


@pytest.mark.parametrize('mode', ['threadless', 'threaded'])
def test_an_interrupted_send_loses_no_bytes(mode: str) -> None:
    """A KeyboardInterrupt after a write and before the stream noted what
    it took cut a message short: the context closed its link on the next
    one ("bad frame magic"), and every call was lost.  The script sends
    SIGINT as each write returns to a send."""
    done = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, 'interrupted_sends.py'),
         mode, '20'], capture_output=True, text=True, timeout=300,
        preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen['interrupts'] >= 1, seen
    assert seen['sent'] == seen['answered'] == 20, (seen, done.stderr)


@pytest.mark.parametrize('mode, point', [('threadless', 'fork'),
                                         ('threaded', 'fork'),
                                         ('threadless', 'handshake'),
                                         ('threadless', 'via')])
def test_an_interrupted_start_leaves_no_program_behind(mode: str,
                                                       point: str) -> None:
    """A KeyboardInterrupt as the fork returned to subprocess left the new
    program running, unknown to the router, until the master exited, and
    six descriptors open (before: 5 strays and 30 descriptors in 5
    starts); one through an intermediary, interrupted as the master
    waited, left its context running there (5 of 5).  The script
    interrupts each of 5 starts at *point*."""
    done = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, 'interrupted_starts.py'),
         mode, point, '5'], capture_output=True, text=True, timeout=300,
        preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen['interrupts'] == 5, seen
    assert seen['strays'] == [], seen
    assert seen['more descriptors'] == 0, seen


def test_an_interrupted_start_kills_its_program_at_once(tmp_path) -> None:
    """Ctrl-C while a start waits for its program: the program is killed
    then, not after the second a failed start gives it to end of itself
    (before: it lived on, and touched a file half a second later, and
    the KeyboardInterrupt reached the caller a second late)."""
    done = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, 'interrupted_slow_start.py'),
         str(tmp_path)], capture_output=True, text=True, timeout=120,
        preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {'interrupted': True, 'lived on': False}, seen


def test_the_default_handler_comes_back_with_the_last_router() -> None:
    code = ('import signal, plasmid\n'
            'before = signal.getsignal(signal.SIGINT)\n'
            'with plasmid.Router() as one:\n'
            '    with plasmid.Router() as two:\n'
            '        during = signal.getsignal(signal.SIGINT)\n'
            '    between = signal.getsignal(signal.SIGINT)\n'
            'after = signal.getsignal(signal.SIGINT)\n'
            'default = signal.default_int_handler\n'
            'print(before is default, during is default, '
            'between is default, after is default)\n')
    assert _words_printed_by(code) == ['True', 'False', 'False', 'True']


def test_a_handler_of_the_programs_own_is_left_alone() -> None:
    code = ('import signal, plasmid\n'
            'def mine(signum, frame): pass\n'
            'signal.signal(signal.SIGINT, mine)\n'
            'with plasmid.Router() as router:\n'
            '    print(signal.getsignal(signal.SIGINT) is mine)\n')
    assert _words_printed_by(code) == ['True']


def _words_printed_by(code: str) -> list[str]:
    """What a fresh master running *code* printed, word by word."""
    done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=60, preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_safe_places_are_the_loops_waits() -> None:
    names = sorted(code.co_name for code in interrupts.SAFE_CODE)
    assert names == ['_poll', '_spin', 'acquire_lock', 'poll_once']


@pytest.mark.parametrize('mode', ['threadless', 'threaded'])
def test_an_interrupted_shutdown_still_ends_every_context(mode: str) -> None:
    """Ctrl-C while Router.shutdown waited for busy contexts left them
    running, the I/O thread and the links open, and a second shutdown()
    did nothing (the router counted as shut down from the start).  The
    interrupt now ends what is still up at once, and is raised."""
    done = subprocess.run(
        [sys.executable, os.path.join(SCRIPTS, 'interrupted_shutdown.py'),
         mode], capture_output=True, text=True, timeout=120,
        preexec_fn=interruptible)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {'interrupted': True, 'running': [], 'links': 0, 'up': [],
                    'threads': [], 'more descriptors': 0}, (seen, done.stderr)
