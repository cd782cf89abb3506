"""The watchdog: a context whose parent is gone ends even when a call holds
its GIL in C code for ever (connect/watchdog).

The masters here are separate programs, killed with SIGKILL: nothing of
theirs runs after that, so only the watchdogs can end the contexts they
leave.  Each master shortens its contexts' grace to keep the tests short.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from typing import Iterator

import pytest

import connect_fns
import plasmid
from testbed.procs import alive, wait_gone
from testbed.pythons import executable_by_others, require_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GRACE = 0.5
# A watchdog ends its context GRACE seconds after its link closes; a chain
# of two stuck hops takes two graces.  Generous: this machine is shared.
GONE_WITHIN = 20.0

MARKERS_WITHIN = 60.0  # for every context's spinning call to start

# The master: starts the contexts its first argument describes (a list of
# [method, options] hops, each via the one before), prints their pids,
# sets each spinning in C code, waiting until each has said (a file in
# the directory its second argument names) its call started, and then
# kills itself.  It exits with status 3 if some call never started.
MASTER = textwrap.dedent('''
    import json, os, signal, sys, time
    sys.path[:0] = [%(root)r, %(here)r]
    import connect_fns, plasmid
    from plasmid.connect import watchdog
    watchdog.GRACE = %(grace)r
    router = plasmid.Router()
    via, pids = None, []
    for method, options in json.loads(sys.argv[1]):
        via = getattr(router, method)(via=via, **options)
        pids.append(via.call(connect_fns.getpid))
    print(json.dumps(pids), flush=True)
    # The farthest first: a hop stuck in C code passes no call on.
    deadline = time.time() + %(within)r
    for context in reversed(list(router.contexts.values())):
        marker = os.path.join(sys.argv[2], str(context.context_id))
        context.call_no_reply(connect_fns.spin_holding_the_gil, marker)
        while not os.path.exists(marker):
            if time.time() > deadline:
                print('call never started: %%s' %% marker, file=sys.stderr)
                os._exit(3)
            time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)
''') % {'root': ROOT, 'here': HERE, 'grace': GRACE,
         'within': MARKERS_WITHIN}


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test expects gone; killed at the end if they are not."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _orphans_of_killed_master(hops: list, leftovers: list[int]) -> set[int]:
    """Run the master over *hops*; the pids of its contexts still alive
    GONE_WITHIN seconds after it was killed."""
    # Contexts as other accounts (sudo, ssh) write their markers here too.
    markers = tempfile.mkdtemp(prefix='plasmid-watchdog-')
    try:
        os.chmod(markers, 0o777)
        master = subprocess.run(
            [sys.executable, '-c', MASTER, json.dumps(hops), markers],
            stdout=subprocess.PIPE, timeout=120)
    finally:
        shutil.rmtree(markers, ignore_errors=True)
    assert master.returncode == -signal.SIGKILL  # not 3: every call started
    pids = json.loads(master.stdout.decode().splitlines()[-1])
    leftovers.extend(pids)
    assert len(pids) == len(hops)
    return wait_gone(pids, GONE_WITHIN)


@pytest.mark.parametrize('version', ['2.7', 'master'])
def test_a_context_stuck_in_c_code_ends_after_its_master_is_killed(
        version: str, leftovers: list[int]) -> None:
    python = require_python(version)
    assert _orphans_of_killed_master(
        [['local', {'python_path': python}]], leftovers) == set()


def test_a_stuck_chain_behind_ssh_and_sudo_ends_hop_by_hop(
        sshd, leftovers: list[int]) -> None:
    python = require_python('3.12')
    if not executable_by_others(python):
        pytest.skip('%s cannot be run by the test account' % python)
    ssh = dict(sshd.ssh_kwargs(), python_path=python)
    hops = [['ssh', ssh], ['sudo', {'python_path': python}]]
    assert _orphans_of_killed_master(hops, leftovers) == set()


def _same_program(pid: int) -> list[int]:
    """Processes running exactly *pid*'s command line (its watchdog is a
    fork of it; a local context's command line names its own id)."""
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        cmdline = f.read()
    found = []
    for name in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % name, 'rb') as f:
                if name.isdigit() and f.read() == cmdline and alive(int(name)):
                    found.append(int(name))
        except OSError:
            continue
    return found


def test_the_watchdog_leaves_with_its_context() -> None:
    with plasmid.Router() as router:
        context = router.local()
        pid = context.call(connect_fns.getpid)
        watched = _same_program(pid)
        assert len(watched) == 2 and pid in watched
        context.shutdown()
    assert wait_gone(watched, GONE_WITHIN) == set()


def test_the_watchdog_leaves_no_file_open_behind(caplog) -> None:
    """Python's development mode warns of a file left to the garbage
    collector: before, every start logged "ResourceWarning: unclosed file
    <... name='/proc/N/stat'>" (and failed to under -W error)."""
    caplog.set_level('WARNING', logger='plasmid.ctx')
    with plasmid.Router() as router:
        context = router.local(name='dev',
                               python_path=[sys.executable, '-X', 'dev'])
        assert context.call(connect_fns.getpid) == context.info['pid']
        context.call(connect_fns.log_warning, 'the end')
        context.shutdown()
    said = [r.getMessage() for r in caplog.records
            if r.name.startswith('plasmid.ctx')]
    assert 'the end' in said  # its records do arrive here
    assert not [line for line in said if 'ResourceWarning' in line], said


@pytest.mark.parametrize('version', ['2.7', 'master'])
def test_the_watchdog_is_not_a_child_of_the_context(version: str) -> None:
    """A context's own os.wait() must not find (and block on) it: nothing
    but the context's own processes are its children."""
    with plasmid.Router() as router:
        context = router.local(python_path=require_python(version))
        assert context.call(connect_fns.any_child_status) == errno.ECHILD


@pytest.mark.parametrize('version', ['2.7', 'master'])
def test_a_context_starts_where_sigchld_is_ignored(version: str) -> None:
    """The first stage's wait for the watchdog's middle process failed
    (ECHILD: the kernel reaps children itself there) and the new Python
    exited: no start through an intermediary whose program ignores
    SIGCHLD (a daemon's habit), nor from a master that inherited it
    ignored (it survives exec), where every context inherits it too."""
    python = require_python(version)
    with plasmid.Router() as router:
        middle = router.local(python_path=python)
        middle.call(connect_fns.ignore_sigchld)
        below = router.local(via=middle, python_path=python)
        assert below.call(os.getpid) != middle.call(os.getpid)
        # Started with SIGCHLD as a fresh process has it: not inherited.
        assert below.call(connect_fns.status_of_false) == 1
    script = ('import os, signal, subprocess, sys, plasmid\n'
              'signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n'
              'with plasmid.Router() as router:\n'
              '    ctx = router.local(python_path=sys.argv[1])\n'
              '    print(ctx.call(os.getpid) != os.getpid())\n'
              '    print(ctx.call(subprocess.call, ["false"]))\n')
    done = subprocess.run([sys.executable, '-c', script, python],
                          capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.abspath(__file__)))))
    assert done.stdout.split() == ['True', '1'], done.stderr
