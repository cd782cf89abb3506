"""Imports over ssh at 50 ms RTT: plasmid vs Mitogen, packages the target lacks.

    sudo python3 bench/imports.py [--reps 5] [--latency-ms 25] [--python PATH]
                                  [--master-imports] [--compiler target|none]
                                  [--via-bastion]

Needs root: it starts the tests' private sshd (tests/testbed/sshd.py) on
127.0.0.1 behind a toxiproxy adding ``--latency-ms`` each way (default 25 ms,
i.e. 50 ms RTT, as in ssh_connect.py), and logs in with its key as
``plasmid-bench-imports``, an account this script creates for the run (no
sudo rights) and removes at the end; the test bed's shared plasmid-a is left
alone.  Mitogen runs with ``compression=False`` like plasmid.

The target interpreter must lack the packages (``--python``; by default the
pyenv Python of the nearest minor version to the master's -- newer first,
3.10 or later, as Django 5 needs -- on which ``import django`` and ``import
requests`` fail; checked over ssh as the account before anything is timed).
A target of the master's own minor version (``--python /usr/bin/python3``
beside a 3.11 master, say) gets the master's bytecode and does not compile.
The default target is of another version: with ``--compiler target``
(default) the master is given the target's interpreter (it is on this
machine) to compile for contexts of that version (``Router(compilers=
{'X.Y': python})``), as a controller with that Python installed does; its
first context compiles the source while the helper compiles in the
background, and the script waits for the helper after the warm-up trial, so
the timed trials get its bytecode.  ``--compiler none``: the target
compiles the source every time.  The master's disk cache is a fresh
directory for the run, so the warm-up starts cold.

Each trial opens a fresh ssh context with one tool, reads the context's
importer state (``importer_fns.importer_state``; importer_fns itself
arrives with that call), then times ``ctx.call(importer_fns.timed_import,
module)`` from the master (one call round trip plus the import), reads the
state again and shuts the context down.  Per module: 1 untimed warm-up
trial per tool (the master's caches are cold then; shown separately), then
``--reps`` trials, the order of the peers rotating.  Medians over the reps.

``--via-bastion``: each trial's context is instead a local one (the same
target Python) started through a bastion, one ssh context per tool opened
through the proxy before the first trial and kept for the run: the 50 ms
link is the master's to the bastion, and each tool's bastion serves the
modules it keeps to the contexts started through it.  The requests column
then counts, for plasmid, the context's requests to the bastion, for
Mitogen those that reached the master.

What is counted, per trial (differences between the two state readings):

* requests: module requests the context sent upstream.  plasmid: the
  ``GET_MODULE`` messages its importer sent (``Importer.stats()`` keeps
  their names); Mitogen: ``GET_MODULE`` messages its master received
  (``router.get_stats()['get_module_count']``; one context at a time, so
  they are this context's).  Package-data requests are counted apart.
* modules: positive module answers in the child's importer cache
  (plasmid: ``Importer.cache`` entries with source; Mitogen:
  ``mitogen.core.Importer._cache`` entries with a path); negative answers
  are counted apart.
* source KiB: the zlib-compressed source of those modules, as each tool
  sent it (plasmid compresses at level 6, Mitogen at 9).
* bytecode KiB: the compressed bytecode that came beside the source
  (plasmid: the master's for a target of its own minor version, the
  helper's for another).
* never imported: received modules not in the child's ``sys.modules``
  after the import (same rule for both tools; a module whose import failed
  counts too).
* wall: the timed call, on the master's clock; in context: the import
  alone, timed inside the context.

Reference row: the target Python importing the same packages from a copy of
their source files on its own disk, without bytecode (``python -I -B``),
timed inside that process (run through a plasmid context on the target,
with the same rotation): what compiling and running the modules costs the
target with no tool and no network.  Each tool's wall time minus it is
printed as the tool's overhead, in ms and RTTs; only roughly, since the
fresh process also imports standard modules a context has loaded already.

The master's state matters to both tools.  Mitogen sends a module's
imports ahead of it ("related") only if they are in the master's
``sys.modules``, and its module finder imports what it serves into the
master as it goes; plasmid, once the master has imported a
module, preloads only the branch imports the master took.  By default the
master has not imported the packages (the case of a program that ships a
function whose module imports them, without using them itself): after
every trial the script removes from ``sys.modules`` whatever modules of
the packages received were imported meanwhile (Mitogen keeps the answers it
built in its own cache).  ``--master-imports`` imports both modules in the
master first instead, and removes nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import os
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Iterator, Optional

import benchlib

benchlib.setup_paths()

import mitogen  # noqa: E402
import mitogen.master  # noqa: E402

import importer_fns  # noqa: E402
import plasmid  # noqa: E402
from plasmid.master.router import MasterContext  # noqa: E402
from testbed import LatencyProxy, SshServer, ToxiproxyError  # noqa: E402
from testbed.accounts import ensure_account  # noqa: E402
from testbed.pythons import available_pythons  # noqa: E402

MODULES = ['django.db.models', 'requests']
ABSENT = ['django', 'requests']   # must fail to import on the target
MIN_TARGET = (3, 10)              # Django 5 needs it
BENCH_USER = 'plasmid-bench-imports'
TOOLS = ['plasmid', 'mitogen']
REFERENCE = 'reference'   # the target importing from its own disk
# Targets from the issue.
TARGET_REQUESTS = 2          # at most 2 module requests per import
TARGET_WALL_RATIO = 3.0      # plasmid's wall time <= 1/3 of Mitogen's
TARGET_NEVER_SHARE = 0.10    # < 10 % of received modules never imported


@contextlib.contextmanager
def private_testbed() -> Iterator[SshServer]:
    """The tests' private sshd, logging in as an account of our own
    (random password, key login, no sudo), removed at the end; see
    ssh_connect.private_testbed for why not plasmid-a."""
    ensure_account(BENCH_USER, secrets.token_urlsafe(18))
    try:
        with SshServer() as server:   # stops every session it started
            server.authorize(BENCH_USER)
            yield server
    finally:
        done = subprocess.run(['userdel', '-r', BENCH_USER],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print('# could not remove %s: %s' % (BENCH_USER, done.stderr.strip()),
                  file=sys.stderr)


# ------------------------------------------------------ the target Python

def remote(server: SshServer, command: str) -> subprocess.CompletedProcess:
    """Run *command* over bare ssh as the bench account (no proxy)."""
    return subprocess.run(server.base_ssh_argv(BENCH_USER) + [command],
                          stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)


def unusable(server: SshServer, python: str) -> Optional[str]:
    """Why *python* cannot be the target, or None if it can: the account
    must run it, and importing each of ABSENT must fail there."""
    if remote(server, '%s -c pass' % shlex.quote(python)).returncode != 0:
        return 'the account cannot run it'
    for name in ABSENT:
        done = remote(server, '%s -c %s' % (shlex.quote(python),
                                            shlex.quote('import ' + name)))
        if done.returncode == 0:
            return '%s is installed there' % name
        if 'No module named' not in done.stderr:
            return 'import %s failed oddly: %s' % (name, done.stderr.strip())
    return None


def pick_python(server: SshServer, explicit: Optional[str]) -> tuple[str, str]:
    """(path, version) of the target interpreter; exits if none fits."""
    if explicit:
        candidates = [explicit]
    else:
        here = sys.version_info[1]
        found = [(tuple(int(x) for x in minor.split('.')), exe)
                 for minor, exe in available_pythons().items()]
        found = [(v, exe) for v, exe in found if v >= MIN_TARGET]
        # Nearest minor version to the master's first, newer before older.
        found.sort(key=lambda item: (abs(item[0][1] - here), -item[0][1]))
        candidates = [exe for _, exe in found]
    reasons = []
    for python in candidates:
        reason = unusable(server, python)
        if reason is None:
            version = remote(server, '%s -c %s' % (
                shlex.quote(python),
                shlex.quote('import platform;print(platform.python_version())')))
            return python, version.stdout.strip()
        reasons.append('%s: %s' % (python, reason))
    sys.exit('no target Python without %s: %s' % (
        ' and '.join(ABSENT), '; '.join(reasons) or 'none found'))


def copy_sources(packages: list[str]) -> str:
    """A directory readable by everyone with the master's source files of
    *packages* (no compiled extensions, bytecode or translations): what
    the reference row imports from."""
    root = tempfile.mkdtemp(prefix='plasmid-bench-imports-')
    os.chmod(root, 0o755)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc', '*.so', '*.po',
                                    '*.mo')
    for top in packages:
        spec = importlib.util.find_spec(top)
        if spec is None or not spec.origin:
            continue
        if spec.submodule_search_locations:
            source = os.path.dirname(spec.origin)
            shutil.copytree(source, os.path.join(root, top), ignore=ignore)
        else:
            shutil.copy(spec.origin, root)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)
    return root


@contextlib.contextmanager
def latency_proxy(port: int, latency_ms: int,
                  attempts: int = 3) -> Iterator[LatencyProxy]:
    """A started LatencyProxy, retried: its API port comes from free_port(),
    and on a busy machine another program (an sshd of a test run, seen
    once) can take it first, answering the API check with its banner."""
    for attempt in range(attempts):
        proxy = LatencyProxy(port, latency_ms)
        try:
            proxy.__enter__()
        except (ToxiproxyError, OSError, http.client.HTTPException):
            if attempt == attempts - 1:
                raise
            continue
        try:
            yield proxy
        finally:
            proxy.stop()
        return


# ------------------------------------------------------------- one trial

def shutdown(ctx) -> None:
    """Stop a context of either tool and wait until it is gone."""
    if isinstance(ctx, MasterContext):
        ctx.shutdown()             # waits until the process is gone
    else:                          # mitogen.parent.Context
        ctx.shutdown(wait=True)


class Trials:
    """Opens fresh contexts through the proxy and imports one module."""

    def __init__(self, server: SshServer, port: int, python: str,
                 prouter: plasmid.Router, mrouter, forget: bool) -> None:
        self.server = server
        self.port = port
        self.python = python
        self.prouter = prouter
        self.mrouter = mrouter
        self.forget = forget
        self.baseline = set(sys.modules)
        self.bastions: dict[str, Any] = {}  # tool -> its bastion, if any

    def open_bastions(self) -> None:
        """From now on, each trial's context starts through a bastion."""
        for tool in TOOLS:
            self.bastions[tool] = self.open_ssh(tool)

    def close_bastions(self) -> None:
        for ctx in self.bastions.values():
            shutdown(ctx)
        self.bastions.clear()

    def open(self, tool: str):
        bastion = self.bastions.get(tool)
        if bastion is None:
            return self.open_ssh(tool)
        router = self.prouter if tool == 'plasmid' else self.mrouter
        return router.local(python_path=self.python, via=bastion)

    def open_ssh(self, tool: str):
        kw = self.server.ssh_kwargs(BENCH_USER, port=self.port)
        if tool == 'plasmid':
            return self.prouter.ssh(python_path=self.python, **kw)
        return self.mrouter.ssh(hostname=kw['hostname'], port=kw['port'],
                                username=kw['username'],
                                identity_file=kw['identity_file'],
                                ssh_args=kw['ssh_args'],
                                python_path=self.python, compression=False,
                                connect_timeout=30)

    def run(self, tool: str, module: str) -> dict:
        ctx = self.open(tool)
        try:
            before = ctx.call(importer_fns.importer_state)
            m_before = self.mrouter.get_stats()
            start = time.perf_counter()
            inside = ctx.call(importer_fns.timed_import, module)
            wall = time.perf_counter() - start
            after = ctx.call(importer_fns.importer_state)
            m_after = self.mrouter.get_stats()
        finally:
            shutdown(ctx)
        assert before['tool'] == after['tool'] == tool, after['tool']
        received = {n: size for n, size in after['received'].items()
                    if n not in before['received']}
        loaded = set(after['loaded'])
        if tool == 'plasmid':
            requested = after['requested'][len(before['requested']):]
            requests = len(requested)
        else:
            requested = None
            requests = m_after['get_module_count'] - m_before['get_module_count']
        if self.forget:
            self.forget_master_imports(received)
        return {
            'requests': requests,
            'requested': requested,
            'modules': len(received),
            'negative': len(set(after['negative']) - set(before['negative'])),
            'source_bytes': sum(received.values()),
            'code_bytes': sum(size for n, size in after['code'].items()
                              if n in received),
            'received_names': sorted(received),
            'never': sorted(n for n in received if n not in loaded),
            'data_requests': after['data_requests'] - before['data_requests'],
            'wall': wall,
            'inside': inside,
        }

    def forget_master_imports(self, received: dict) -> None:
        """Drop from the master's sys.modules what it imported of the
        packages just served (Mitogen's finder imports them), so that
        every trial meets a master that has not imported them."""
        tops = {name.partition('.')[0] for name in received}
        for name in list(sys.modules):
            if name not in self.baseline and name.partition('.')[0] in tops:
                del sys.modules[name]


# ---------------------------------------------------------------- output

def count_cell(values: list[float]) -> str:
    """Median, with the range when the reps differ."""
    med = benchlib.median(values)
    text = '%g' % med
    if min(values) != max(values):
        text += ' (%g-%g)' % (min(values), max(values))
    return text


def ratio_cell(num: float, den: float) -> str:
    return '%.2fx' % (num / den) if den else '-'


def never_share(result: dict) -> float:
    return len(result['never']) / result['modules'] if result['modules'] else 0.0


def module_table(runs: dict[str, list[dict]], reference: list[float]) -> str:
    ms, kib = 1e3, 1024.0
    rows = []
    meds = {}
    for tool in TOOLS:
        rs = runs[tool]
        walls = [r['wall'] for r in rs]
        meds[tool] = {
            'requests': benchlib.median([r['requests'] for r in rs]),
            'modules': benchlib.median([r['modules'] for r in rs]),
            'kib': benchlib.median([r['source_bytes'] for r in rs]) / kib,
            'code_kib': benchlib.median([r['code_bytes'] for r in rs]) / kib,
            'wall': benchlib.median(walls),
            'inside': benchlib.median([r['inside'] for r in rs]),
        }
        nevers = [len(r['never']) for r in rs]
        share = benchlib.median([never_share(r) for r in rs])
        rows.append([
            tool, count_cell([r['requests'] for r in rs]),
            count_cell([r['modules'] for r in rs]),
            count_cell([r['negative'] for r in rs]),
            benchlib.fmt(meds[tool]['kib']),
            benchlib.fmt(meds[tool]['code_kib']),
            '%s (%.1f%%)' % (count_cell(nevers), share * 100),
            benchlib.fmt(meds[tool]['wall'] * ms),
            '%s-%s' % (benchlib.fmt(min(walls) * ms), benchlib.fmt(max(walls) * ms)),
            benchlib.fmt(meds[tool]['inside'] * ms)])
    p, m = meds['plasmid'], meds['mitogen']
    rows.append(['mitogen / plasmid', ratio_cell(m['requests'], p['requests']),
                 ratio_cell(m['modules'], p['modules']), '',
                 ratio_cell(m['kib'], p['kib']), '', '',
                 ratio_cell(m['wall'], p['wall']), '',
                 ratio_cell(m['inside'], p['inside'])])
    rows.append(['target imports them from disk, no .pyc (reference)',
                 '-', '-', '-', '-', '-', '-', '-', '-', '%s (%s-%s)' % (
                     benchlib.fmt(benchlib.median(reference) * ms),
                     benchlib.fmt(min(reference) * ms),
                     benchlib.fmt(max(reference) * ms))])
    return benchlib.table(
        ['peer', 'requests', 'modules', 'negative', 'source KiB',
         'bytecode KiB', 'never imported', 'wall median ms', 'wall min-max ms',
         'in context ms'], rows)


def distinct(values: list) -> list:
    out = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


def names_text(names: list[str], limit: int = 8) -> str:
    if not names:
        return 'none'
    shown = ', '.join(names[:limit])
    if len(names) > limit:
        shown += ', ... (%d more)' % (len(names) - limit)
    return shown


def section(title: str) -> None:
    print()
    print('## ' + title)


# ------------------------------------------------------------------- run

def run(server: SshServer, args) -> None:
    python, version = pick_python(server, args.python)
    print('target: %s (Python %s) as %s; import %s fail there (checked over '
          'ssh)' % (python, version, BENCH_USER, ', '.join(ABSENT)))
    if args.master_imports:
        for module in MODULES:
            __import__(module)
        print('master: has imported %s itself (--master-imports)'
              % ', '.join(MODULES))
    else:
        print('master: has not imported them; what a trial makes it import '
              '(Mitogen\'s finder) is removed from sys.modules after the trial')
    rtt = 2 * args.latency_ms
    print('toxiproxy: %d ms each way (RTT %d ms); mitogen %s, compression off '
          'for both' % (args.latency_ms, rtt,
                        '.'.join(map(str, mitogen.__version__))))
    results: dict[str, dict] = {}
    compilers = chosen_compilers(python, version, args.compiler)
    with plasmid.Router(compilers=compilers) as prouter, \
            latency_proxy(server.port, args.latency_ms) as proxy:
        broker = mitogen.master.Broker()
        try:
            mrouter = mitogen.master.Router(broker)
            trials = Trials(server, proxy.port, python, prouter, mrouter,
                            forget=not args.master_imports)
            # Runs the reference's subprocesses on the target; no proxy needed.
            helper = prouter.ssh(python_path=python,
                                 **server.ssh_kwargs(BENCH_USER))
            where = 'ssh context'
            if args.via_bastion:
                trials.open_bastions()
                where = 'local context through an ssh bastion'
            for module in MODULES:
                section('%s in a fresh %s, %d ms RTT, %d reps after '
                        '1 warm-up' % (module, where, rtt, args.reps))
                first = {tool: trials.run(tool, module) for tool in TOOLS}
                if compilers:
                    wait_for_helper(prouter)
                runs: dict[str, list[dict]] = {tool: [] for tool in TOOLS}
                reference: list[float] = []
                src = copy_sources(packages_of(first))
                try:
                    helper.call(importer_fns.import_from_disk, python, src, module)
                    for rep in range(args.reps):
                        for peer in benchlib.rotated(TOOLS + [REFERENCE], rep):
                            if peer == REFERENCE:
                                reference.append(helper.call(
                                    importer_fns.import_from_disk, python, src,
                                    module))
                            else:
                                runs[peer].append(trials.run(peer, module))
                finally:
                    shutil.rmtree(src, ignore_errors=True)
                print(module_table(runs, reference))
                report_details(runs, first, reference, rtt / 1e3)
                results[module] = {'runs': runs, 'reference': reference}
            trials.close_bastions()
            shutdown(helper)
        finally:
            broker.shutdown()
            broker.join()
    report_targets(results)


def chosen_compilers(python: str, version: str,
                     choice: str) -> Optional[dict[str, str]]:
    """The Router's ``compilers`` for a target *python* of *version*."""
    minor = '.'.join(version.split('.')[:2])
    if minor == '%d.%d' % sys.version_info[:2]:
        print('master: the target is of its own minor version: it sends its '
              'own bytecode')
        return None
    if choice == 'none':
        print('master: no compiler for Python %s (--compiler none): the '
              'target compiles the source' % minor)
        return None
    print('master: compiles for Python %s contexts with %s (--compiler '
          'target)' % (minor, python))
    return {minor: python}


def wait_for_helper(prouter: plasmid.Router) -> None:
    """Let the helper finish what the warm-up queued, and say what it
    took."""
    compilers = prouter.responder.compilers
    start = time.perf_counter()
    if not compilers.wait_idle(300):
        sys.exit('the helper did not finish compiling within 300 s')
    print('helper: %d modules compiled so far, for the timed trials; done '
          '%.2f s after the warm-up ended' % (
              sum(1 for code in compilers.known.values() if code),
              time.perf_counter() - start))


def packages_of(first: dict) -> list[str]:
    """Top-level packages both tools received for the module."""
    return sorted({name.partition('.')[0] for r in first.values()
                   for name in r['received_names']})


def report_details(runs: dict[str, list[dict]], first: dict,
                   reference: list[float], rtt: float) -> None:
    for requested in distinct([r['requested'] for r in runs['plasmid']]):
        print('plasmid requests: %s' % requested)
    for tool in TOOLS:
        for never in distinct([r['never'] for r in runs[tool]]):
            print('never imported, %s: %s' % (tool, names_text(never)))
    print('package-data requests: plasmid %s, mitogen %s' % (
        count_cell([r['data_requests'] for r in runs['plasmid']]),
        count_cell([r['data_requests'] for r in runs['mitogen']])))
    ref = benchlib.median(reference)
    over = {tool: benchlib.median([r['wall'] for r in runs[tool]]) - ref
            for tool in TOOLS}
    print('wall minus the target\'s own import from disk (medians): %s' % ', '.join(
        '%s %+.1f ms%s' % (tool, over[tool] * 1e3,
                           ' (%.1f RTT)' % (over[tool] / rtt) if rtt else '')
        for tool in TOOLS))
    print('warm-up (first import, cold master caches; not in the medians): '
          'plasmid %.1f ms, %d requests; mitogen %.1f ms, %d requests' % (
              first['plasmid']['wall'] * 1e3, first['plasmid']['requests'],
              first['mitogen']['wall'] * 1e3, first['mitogen']['requests']))


def report_targets(results: dict[str, dict]) -> None:
    section('targets')
    per = {}
    for module, res in results.items():
        p, m = res['runs']['plasmid'], res['runs']['mitogen']
        per[module] = {
            'requests': max(r['requests'] for r in p),
            'm_requests': benchlib.median([r['requests'] for r in m]),
            'ratio': benchlib.median([r['wall'] for r in m]) /
            benchlib.median([r['wall'] for r in p]),
            'never': benchlib.median([never_share(r) for r in p]),
            'm_never': benchlib.median([never_share(r) for r in m]),
            'third': benchlib.median([r['wall'] for r in m]) / 3,
            'reference': benchlib.median(res['reference']),
        }

    def verdict(ok: dict) -> str:
        missed = [mod for mod, good in ok.items() if not good]
        return benchlib.met(not missed) + (
            ' (%s)' % ', '.join(missed) if missed else '')

    print('target: at most %d module requests per import (plasmid, every rep): '
          '%s -> %s' % (TARGET_REQUESTS, ', '.join(
              '%s %d (mitogen %g)' % (mod, v['requests'], v['m_requests'])
              for mod, v in per.items()),
              verdict({mod: v['requests'] <= TARGET_REQUESTS
                       for mod, v in per.items()})))
    print('target: plasmid wall time <= 1/3 of Mitogen\'s (medians, same run): '
          'mitogen/plasmid %s -> %s' % (', '.join(
              '%s %.2fx' % (mod, v['ratio']) for mod, v in per.items()),
              verdict({mod: v['ratio'] >= TARGET_WALL_RATIO
                       for mod, v in per.items()})))
    print('target: < %d%% of received modules never imported (plasmid, '
          'median): %s -> %s' % (TARGET_NEVER_SHARE * 100, ', '.join(
              '%s %.1f%% (mitogen %.1f%%)' % (mod, v['never'] * 100,
                                             v['m_never'] * 100)
              for mod, v in per.items()),
              verdict({mod: v['never'] < TARGET_NEVER_SHARE
                       for mod, v in per.items()})))
    print('a third of Mitogen\'s wall time vs the target\'s own import from '
          'disk: %s' % ', '.join('%s %.1f ms vs %.1f ms' % (
              mod, v['third'] * 1e3, v['reference'] * 1e3) for mod, v in per.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--reps', type=int, default=5,
                        help='timed trials per tool and module (default 5)')
    parser.add_argument('--latency-ms', type=int, default=25,
                        help='latency added each way by toxiproxy (default 25)')
    parser.add_argument('--python', default=None,
                        help='target interpreter (default: see the docstring)')
    parser.add_argument('--master-imports', action='store_true',
                        help='import the modules in the master first')
    parser.add_argument('--compiler', choices=['target', 'none'],
                        default='target',
                        help='compile for a target of another version with '
                        'its interpreter (default), or not')
    parser.add_argument('--via-bastion', action='store_true',
                        help='start each trial\'s context through a bastion '
                        'that stays for the run')
    args = parser.parse_args()
    benchlib.exit_unless_testbed()
    print('# imports over ssh at %d ms RTT -- %s' % (
        2 * args.latency_ms, benchlib.machine_line()))
    with private_testbed() as server, \
            tempfile.TemporaryDirectory(prefix='plasmid-bench-cache-') as fresh:
        os.environ['PLASMID_CACHE_DIR'] = fresh  # a cold start, every run
        run(server, args)
    print()
    print('# load avg at the end: %s' % ' '.join('%.2f' % x for x in os.getloadavg()))


if __name__ == '__main__':
    main()
