"""ssh and sudo: connect + first call and call round trip, plasmid vs Mitogen.

    sudo python3 bench/ssh_connect.py [--reps 10] [--rounds 10] [--calls 300] [--latency-ms 25]

Needs root: it starts the tests' private sshd (tests/testbed/sshd.py) on
127.0.0.1 and logs in with its key as ``plasmid-bench``, an account this
script creates for the run (with sudo to root, no password) and removes at
the end; it does not touch the test bed's shared plasmid-a account, so it
can run while tests run (see ``private_testbed``).  Every ssh command below
-- bare, plasmid's and Mitogen's -- uses the test bed's ssh options
(-F /dev/null, its known_hosts, no ControlMaster); Mitogen is run with
``compression=False`` so that it, like plasmid and the bare ssh, does not
ask for ssh compression (Mitogen's default ``compression=True`` is shown as
an extra row).  The remote interpreter is ``python3`` (/usr/bin/python3)
for all.

What is timed:

1. connect + first call, directly on loopback: a bare
   ``ssh <opts> plasmid-bench@127.0.0.1 'python3 -c pass'`` (until ssh exits),
   ``router.ssh(...)`` + ``ctx.call(os.getpid)`` for plasmid and Mitogen.
   One untimed warm-up, then ``--reps`` repetitions, the order of the
   peers rotating each repetition; median (min-max).  Contexts are shut
   down after the clock stops.
   A second reference row, "bare ssh, 1 byte echoed via stdin": a bare
   remote python3 that echoes one byte written to ssh's stdin at the start,
   timed until the echo is back -- what any bootstrap sent on stdin must
   wait for, since ssh forwards stdin only once the remote command runs.
   A third, "bare ssh, bootstrap-sized argv, 1 byte out": a bare python3
   given an argument as long as plasmid's base64-encoded bootstrap, timed
   until it prints one byte -- what carrying the bootstrap on the command
   line instead would cost.
2. ssh call round trip: ``ctx.call(bench_fns.noop)`` on one ssh context per
   peer, ``--rounds`` rounds of ``--calls`` calls (order rotated, 100
   warm-up calls before each); median and p99 over all calls, and the
   range of the rounds' medians;
   the floor is one byte echoed by a bare remote Python loop over the same
   ssh command (and through ``sudo -n -H -u root`` for the sudo hop).
3. sudo hop (root, through the ssh context): the ssh context stays up; one
   untimed warm-up sudo (it also loads each tool's sudo code into the ssh
   context, shown as "first sudo"), then ``--reps`` times
   ``router.sudo(via=ssh_ctx)`` + ``call(os.getpid)``.  The reference is
   ``sudo -n -H -u root python3 -c pass`` timed on the target itself (inside
   the ssh context), i.e. what sudo and Python cost without any tool.
   Then the call round trip through both hops.
4. The connects of 1 and 3 again through a toxiproxy adding ``--latency-ms``
   each way (default 25 ms, i.e. 50 ms RTT), and a short round-trip sample.
   Extra time is reported in ms and in RTTs: (t - bare) / RTT.  Through
   the proxy, each tool's connect alone (no first call) is timed too.
   plasmid's ``router.ssh()`` returns once the remote Python runs, and its
   core boots while the first call travels (plasmid.master.booting);
   Mitogen's returns once its context has booted: "connect alone" is the
   time until each tool's call returns, not the same point of the start.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import os
import secrets
import shlex
import subprocess
import sys
import time
from typing import Callable, Iterator, Optional

import benchlib

benchlib.setup_paths()

import mitogen.master  # noqa: E402

import bench_fns  # noqa: E402
import plasmid  # noqa: E402
from plasmid.master.bootstrap import build_blob  # noqa: E402
from plasmid.master.router import MasterContext  # noqa: E402
from testbed import LatencyProxy, SshServer  # noqa: E402
from testbed.accounts import ensure_account, remove_account, write_sudoers  # noqa: E402

PYTHON = 'python3'
BARE_SUDO = ['sudo', '-n', '-H', '-u', 'root', PYTHON, '-c', 'pass']
# Targets from the issue.
TARGET_CONNECT_SLACK = 0.050   # within 1 RTT + 50 ms of bare ssh
TARGET_RT_RATIO = 4.0          # ssh round trip <= 1/4 of Mitogen's


BENCH_USER = 'plasmid-bench'
SUDOERS_PATH = '/etc/sudoers.d/plasmid-bench'
SUDOERS = '%s ALL=(root) NOPASSWD: ALL\n' % BENCH_USER


@contextlib.contextmanager
def private_testbed() -> Iterator[SshServer]:
    """The tests' private sshd, logging in as an account of our own.

    The test bed's plasmid-a is shared by every pytest session on the
    machine, and a session that ends removes it with all its processes:
    that broke benchmark runs while tests ran, and ours would break theirs.
    So the benchmark brings its own account (random password, key login,
    sudo to root without password) and removes it at the end.
    """
    ensure_account(BENCH_USER, secrets.token_urlsafe(18))
    try:
        write_sudoers(SUDOERS_PATH, SUDOERS)
        with SshServer() as server:   # stops every session it started
            server.authorize(BENCH_USER)
            yield server
    finally:
        error = remove_account(BENCH_USER, SUDOERS_PATH)
        if error:
            print('# could not remove %s: %s' % (BENCH_USER, error), file=sys.stderr)


class Peers:
    """Opens contexts with each tool against one sshd port."""

    def __init__(self, server: SshServer, prouter: plasmid.Router,
                 mrouter) -> None:
        self.server = server
        self.prouter = prouter
        self.mrouter = mrouter

    # -- ssh -------------------------------------------------------------

    def bare(self, port: int) -> None:
        argv = self.server.base_ssh_argv(BENCH_USER, port=port)
        subprocess.run(argv + ['%s -c pass' % PYTHON], check=True,
                       stdin=subprocess.DEVNULL)

    def bare_stdin_echo(self, port: int) -> float:
        """Time until a bare remote python3 echoes a byte that was written
        to ssh's stdin right at the start: the least any bootstrap sent on
        stdin can cost (ssh forwards stdin only once the session runs)."""
        argv = self.server.base_ssh_argv(BENCH_USER, port=port)
        script = 'import os;os.write(1,os.read(0,1))'
        start = time.perf_counter()
        proc = subprocess.Popen(argv + ['%s -c %s' % (PYTHON, shlex.quote(script))],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        proc.stdin.write(b'x')
        proc.stdin.flush()
        got = proc.stdout.read(1)
        took = time.perf_counter() - start
        proc.stdin.close()
        proc.wait()
        proc.stdout.close()
        if got != b'x':
            raise RuntimeError('the echo failed')
        return took

    def bare_big_argv(self, port: int) -> float:
        """Time until a bare remote python3, given an argument as long as
        plasmid's base64-encoded bootstrap, prints one byte: what a
        bootstrap carried on the command line would cost ssh."""
        argv = self.server.base_ssh_argv(BENCH_USER, port=port)
        filler = base64.b64encode(os.urandom(len(build_blob()))).decode()
        script = 'import os;os.write(1,b"x")'
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv + ['%s -c %s %s' % (PYTHON, shlex.quote(script), filler)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
        got = proc.stdout.read(1)
        took = time.perf_counter() - start
        proc.wait()
        proc.stdout.close()
        if got != b'x':
            raise RuntimeError('the command failed')
        return took

    def plasmid_ssh(self, port: int):
        return self.prouter.ssh(python_path=PYTHON,
                                **self.server.ssh_kwargs(BENCH_USER, port=port))

    def mitogen_ssh(self, port: int, compression: bool = False):
        kw = self.server.ssh_kwargs(BENCH_USER)
        return self.mrouter.ssh(hostname=kw['hostname'], port=port,
                                username=kw['username'],
                                identity_file=kw['identity_file'],
                                ssh_args=kw['ssh_args'], python_path=PYTHON,
                                compression=compression, connect_timeout=30)

    # -- sudo ------------------------------------------------------------

    def plasmid_sudo(self, via):
        return self.prouter.sudo(username='root', via=via)

    def mitogen_sudo(self, via):
        return self.mrouter.sudo(username='root', via=via)


def shutdown(ctx) -> None:
    """Stop a context of either tool and wait until it is gone."""
    if isinstance(ctx, MasterContext):
        ctx.shutdown()             # waits until the process is gone
    else:                          # mitogen.parent.Context
        ctx.shutdown(wait=True)


def connect_and_call(open_ctx: Callable[[], object],
                     first_call: bool = True) -> Callable[[], float]:
    """A timer: open a context, make the first call (unless told not to),
    stop the clock, shut the context down."""
    def timed() -> float:
        box = []

        def work() -> None:
            ctx = open_ctx()
            box.append(ctx)
            if first_call:
                ctx.call(os.getpid)
        try:
            return benchlib.time_once(work)
        finally:
            for ctx in box:
                shutdown(ctx)
    return timed


def repeat(timers: dict[str, Callable[[], float]], reps: int) -> dict[str, list[float]]:
    """One untimed warm-up each, then *reps* rotations over the timers."""
    names = list(timers)
    for name in names:
        timers[name]()
    out: dict[str, list[float]] = {n: [] for n in names}
    for rep in range(reps):
        for name in benchlib.rotated(names, rep):
            out[name].append(timers[name]())
    return out


def connect_table(samples: dict[str, list[float]], base: str,
                  rtt: Optional[float]) -> str:
    """Medians; 'extra' is each median minus the median of *base*."""
    ms = 1e3
    base_med = benchlib.median(samples[base])
    rows = []
    for name, values in samples.items():
        med = benchlib.median(values)
        row = [name, len(values), benchlib.fmt(med * ms),
               '%s-%s' % (benchlib.fmt(min(values) * ms),
                          benchlib.fmt(max(values) * ms))]
        if name == base:
            row += ['-'] + (['-'] if rtt else [])
        else:
            row.append('%+.1f' % ((med - base_med) * ms))
            if rtt:
                row.append('%.2f' % ((med - base_med) / rtt))
        rows.append(row)
    headers = ['peer', 'n', 'median ms', 'min-max ms', 'extra ms']
    if rtt:
        headers.append('extra RTTs')
    return benchlib.table(headers, rows)


class PipeEcho:
    """The floor: one byte to a bare Python echo loop behind the same ssh
    (and sudo) commands, and back; has .call() like a context."""

    SCRIPT = ('import os\nwhile 1:\n b=os.read(0,1)\n if not b:break\n'
              ' os.write(1,b)')

    def __init__(self, ssh_argv: list[str], prefix: str = '') -> None:
        command = '%s%s -c %s' % (prefix, PYTHON, shlex.quote(self.SCRIPT))
        self.proc = subprocess.Popen(ssh_argv + [command], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.w, self.r = self.proc.stdin.fileno(), self.proc.stdout.fileno()

    def call(self, *_ignored) -> bytes:
        os.write(self.w, b'x')
        return os.read(self.r, 1)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
        self.proc.stdout.close()


def round_trips(ctxs: dict[str, object], calls: int, rounds: int,
                warmup: int) -> dict[str, dict]:
    """Time ctx.call(bench_fns.noop) for each of *ctxs* (contexts or PipeEcho)."""
    names = list(ctxs)
    out = {n: {'samples': [], 'rounds': []} for n in names}
    for rnd in range(rounds):
        for name in benchlib.rotated(names, rnd):
            ctx = ctxs[name]

            def one(ctx=ctx) -> object:
                return ctx.call(bench_fns.noop)
            benchlib.time_calls(one, warmup)
            got = benchlib.time_calls(one, calls)
            out[name]['samples'] += got
            out[name]['rounds'].append(benchlib.median(got))
    return out


def rt_table(result: dict[str, dict], base: str) -> tuple[str, dict]:
    us = 1e6
    meds = {n: benchlib.median(r['samples']) for n, r in result.items()}
    rows = []
    for name, r in result.items():
        rows.append([name, len(r['samples']), benchlib.fmt(meds[name] * us),
                     benchlib.fmt(benchlib.percentile(r['samples'], 99) * us),
                     '%s-%s' % (benchlib.fmt(min(r['rounds']) * us),
                                benchlib.fmt(max(r['rounds']) * us)),
                     '%.2fx' % (meds[name] / meds[base])])
    return benchlib.table(['peer', 'calls', 'median us', 'p99 us',
                           'round medians min-max us', 'median / %s' % base],
                          rows), meds


def section(title: str) -> None:
    print()
    print('## ' + title)


def run(server: SshServer, args) -> None:
    rtt_latency = 2 * args.latency_ms / 1000.0
    reps = args.reps
    with plasmid.Router() as prouter:
        broker = mitogen.master.Broker()
        try:
            mrouter = mitogen.master.Router(broker)
            peers = Peers(server, prouter, mrouter)
            port = server.port

            # 1. connect + first call, direct.
            section('ssh connect + first call (os.getpid), loopback, '
                    '%d reps after 1 warm-up' % reps)
            direct = repeat({
                'bare ssh python3 -c pass': lambda: benchlib.time_once(
                    lambda: peers.bare(port)),
                'bare ssh, 1 byte echoed via stdin': lambda:
                    peers.bare_stdin_echo(port),
                'bare ssh, bootstrap-sized argv, 1 byte out': lambda:
                    peers.bare_big_argv(port),
                'plasmid': connect_and_call(lambda: peers.plasmid_ssh(port)),
                'mitogen': connect_and_call(lambda: peers.mitogen_ssh(port)),
                'mitogen (compression=True, its default)': connect_and_call(
                    lambda: peers.mitogen_ssh(port, compression=True)),
            }, reps)
            print(connect_table(direct, 'bare ssh python3 -c pass', None))
            bare = benchlib.median(direct['bare ssh python3 -c pass'])
            extra = benchlib.median(direct['plasmid']) - bare
            print('target (loopback, RTT ~0): plasmid within 1 RTT + 50 ms of '
                  'bare ssh: %+.1f ms -> %s' % (
                      extra * 1e3, benchlib.met(extra <= TARGET_CONNECT_SLACK)))

            # 2. ssh round trip.
            p_ssh = peers.plasmid_ssh(port)
            m_ssh = peers.mitogen_ssh(port)
            mz_ssh = peers.mitogen_ssh(port, compression=True)
            print('remote interpreters: plasmid %s, mitogen %s' % (
                p_ssh.call(bench_fns.executable),
                m_ssh.call(bench_fns.executable)))
            section('ssh call round trip (bench_fns.noop), %d rounds x %d calls'
                    % (args.rounds, args.calls))
            floor = PipeEcho(server.base_ssh_argv(BENCH_USER, port=port))
            text, meds = rt_table(round_trips(
                {'ssh pipe ping-pong (floor)': floor, 'plasmid': p_ssh,
                 'mitogen': m_ssh, 'mitogen (compression=True)': mz_ssh},
                args.calls, args.rounds, 100), 'plasmid')
            floor.close()
            print(text)
            ratio = meds['mitogen'] / meds['plasmid']
            print('target: plasmid <= 1/4 of Mitogen (median): mitogen/plasmid '
                  '= %.2fx -> %s' % (ratio, benchlib.met(ratio >= TARGET_RT_RATIO)))
            shutdown(mz_ssh)

            # 3. sudo hop through the ssh context.
            section('sudo (root) through the ssh context: connect + first call, '
                    '%d reps' % reps)
            first = {
                'plasmid': connect_and_call(lambda: peers.plasmid_sudo(p_ssh))(),
                'mitogen': connect_and_call(lambda: peers.mitogen_sudo(m_ssh))(),
            }
            sudo = {'bare sudo python3 -c pass (timed on the target)':
                    p_ssh.call(bench_fns.time_command, BARE_SUDO, reps)}
            sudo.update(repeat({
                'plasmid': connect_and_call(lambda: peers.plasmid_sudo(p_ssh)),
                'mitogen': connect_and_call(lambda: peers.mitogen_sudo(m_ssh)),
            }, reps))
            print(connect_table(sudo, 'bare sudo python3 -c pass (timed on '
                                'the target)', None))
            print('first sudo through a fresh ssh context (loads the sudo code '
                  'there): plasmid %.1f ms, mitogen %.1f ms' % (
                      first['plasmid'] * 1e3, first['mitogen'] * 1e3))
            p_root = peers.plasmid_sudo(p_ssh)
            m_root = peers.mitogen_sudo(m_ssh)
            print('sudo contexts run as uid %s (plasmid), %s (mitogen)' % (
                p_root.call(os.getuid), m_root.call(os.getuid)))
            section('ssh -> sudo call round trip (bench_fns.noop), %d rounds x '
                    '%d calls' % (args.rounds, args.calls))
            floor = PipeEcho(server.base_ssh_argv(BENCH_USER, port=port),
                             prefix='sudo -n -H -u root ')
            text, meds = rt_table(round_trips(
                {'ssh+sudo pipe ping-pong (floor)': floor, 'plasmid': p_root,
                 'mitogen': m_root}, args.calls, args.rounds, 100), 'plasmid')
            floor.close()
            print(text)
            for ctx in (p_root, m_root, p_ssh, m_ssh):
                shutdown(ctx)

            # 4. Through added latency.
            with LatencyProxy(server.port, args.latency_ms) as proxy:
                lport = proxy.port
                section('through toxiproxy, %d ms each way (RTT %.0f ms): ssh '
                        'connect + first call, %d reps' % (
                            args.latency_ms, rtt_latency * 1e3, reps))
                lat = repeat({
                    'bare ssh python3 -c pass': lambda: benchlib.time_once(
                        lambda: peers.bare(lport)),
                    'bare ssh, 1 byte echoed via stdin': lambda:
                        peers.bare_stdin_echo(lport),
                    'bare ssh, bootstrap-sized argv, 1 byte out': lambda:
                        peers.bare_big_argv(lport),
                    'plasmid': connect_and_call(lambda: peers.plasmid_ssh(lport)),
                    'mitogen': connect_and_call(lambda: peers.mitogen_ssh(lport)),
                    'plasmid, connect only (no call)': connect_and_call(
                        lambda: peers.plasmid_ssh(lport), first_call=False),
                    'mitogen, connect only (no call)': connect_and_call(
                        lambda: peers.mitogen_ssh(lport), first_call=False),
                }, reps)
                print(connect_table(lat, 'bare ssh python3 -c pass', rtt_latency))
                bare = benchlib.median(lat['bare ssh python3 -c pass'])
                extra = benchlib.median(lat['plasmid']) - bare
                print('target: plasmid <= bare ssh + 1 RTT (%.0f ms): %+.1f ms '
                      '= %.2f RTT -> %s' % (
                          rtt_latency * 1e3, extra * 1e3, extra / rtt_latency,
                          benchlib.met(extra <= rtt_latency)))

                p_ssh = peers.plasmid_ssh(lport)
                m_ssh = peers.mitogen_ssh(lport)
                sudo_reps = max(3, reps // 2)
                section('through toxiproxy: sudo through the ssh context, '
                        'connect + first call, %d reps' % sudo_reps)
                first = {
                    'plasmid': connect_and_call(
                        lambda: peers.plasmid_sudo(p_ssh))(),
                    'mitogen': connect_and_call(
                        lambda: peers.mitogen_sudo(m_ssh))(),
                }
                sudo = {'bare sudo python3 -c pass (timed on the target)':
                        p_ssh.call(bench_fns.time_command, BARE_SUDO, sudo_reps)}
                sudo.update(repeat({
                    'plasmid': connect_and_call(lambda: peers.plasmid_sudo(p_ssh)),
                    'mitogen': connect_and_call(lambda: peers.mitogen_sudo(m_ssh)),
                }, sudo_reps))
                print(connect_table(sudo, 'bare sudo python3 -c pass (timed on '
                                    'the target)', rtt_latency))
                print('first sudo through a fresh ssh context: plasmid %.1f ms '
                      '(%.2f RTT), mitogen %.1f ms (%.2f RTT)' % (
                          first['plasmid'] * 1e3, first['plasmid'] / rtt_latency,
                          first['mitogen'] * 1e3, first['mitogen'] / rtt_latency))

                section('through toxiproxy: ssh call round trip, 3 rounds x %d '
                        'calls' % args.latency_calls)
                text, _ = rt_table(round_trips(
                    {'plasmid': p_ssh, 'mitogen': m_ssh}, args.latency_calls,
                    3, 3), 'plasmid')
                print(text)
                for ctx in (p_ssh, m_ssh):
                    shutdown(ctx)
        finally:
            broker.shutdown()
            broker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=10,
                        help='timed connects per peer (default 10)')
    parser.add_argument('--calls', type=int, default=300,
                        help='timed calls per peer per round (default 300)')
    parser.add_argument('--rounds', type=int, default=10,
                        help='round trip rounds, peers alternating (default 10)')
    parser.add_argument('--latency-ms', type=int, default=25,
                        help='latency added each way by toxiproxy (default 25)')
    parser.add_argument('--latency-calls', type=int, default=20,
                        help='timed calls per round through toxiproxy (default 20)')
    args = parser.parse_args()
    benchlib.exit_unless_testbed()
    print('# ssh connect and round trip -- %s' % benchlib.machine_line())
    with private_testbed() as server:
        run(server, args)
    print()
    print('# load avg at the end: %s' % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
