"""Small helpers shared by the benchmark scripts: statistics, tables, paths.

Nothing here measures anything by itself; each script says what it times.
"""
from __future__ import annotations

import math
import os
import platform
import sys
import time
from typing import Callable, Iterable, Sequence

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
TESTS_DIR = os.path.join(REPO_DIR, 'tests')


def setup_paths() -> None:
    """Import plasmid from this checkout, bench_fns from bench/, the test bed
    from tests/ (the ssh benchmark reuses the tests' private sshd)."""
    for path in (TESTS_DIR, BENCH_DIR, REPO_DIR):
        if path not in sys.path:
            sys.path.insert(0, path)


def exit_unless_testbed() -> None:
    """Stop with the reason when the tests' ssh test bed cannot run here
    (not root, no sshd ...): the benchmarks that log in need it."""
    from testbed import unavailable_reason  # found once setup_paths ran
    reason = unavailable_reason()
    if reason:
        sys.exit('cannot run: ' + reason)


# ------------------------------------------------------------ statistics

def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of *values*."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('no samples')
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def time_calls(func: Callable[[], object], count: int) -> list[float]:
    """Run *func* *count* times; return each call's wall time in seconds."""
    clock = time.perf_counter_ns
    samples = [0.0] * count
    for i in range(count):
        start = clock()
        func()
        samples[i] = (clock() - start) / 1e9
    return samples


def time_once(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def rotated(items: list, shift: int) -> list:
    """*items* rotated by *shift*: alternates which peer runs first."""
    shift %= len(items)
    return items[shift:] + items[:shift]


# ---------------------------------------------------------------- output

def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain-text table, first column left-aligned, the rest right-aligned."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        out = [row[0].ljust(widths[0])]
        out += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        return '  '.join(out).rstrip()

    rule = '  '.join('-' * w for w in widths)
    return '\n'.join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


def fmt(value: float, digits: int = 1) -> str:
    return '%.*f' % (digits, value)


def met(ok: bool) -> str:
    return 'MET' if ok else 'NOT MET'


def revision() -> str:
    """The checkout measured: commit, and whether plasmid/ has changes."""
    import subprocess
    try:
        head = subprocess.run(['git', '-C', REPO_DIR, 'rev-parse', '--short',
                               'HEAD'], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', REPO_DIR, 'status', '--porcelain',
                                '--', 'plasmid'], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return 'plasmid (no git)'
    return 'plasmid %s%s' % (head, ' + uncommitted changes' if dirty else '')


def machine_line() -> str:
    """Where and when the figures were taken, printed with every run."""
    pretty = platform.platform()
    try:
        with open('/etc/os-release') as handle:
            for line in handle:
                if line.startswith('PRETTY_NAME='):
                    pretty = line.split('=', 1)[1].strip().strip('"')
    except OSError:
        pass
    try:
        load = ' '.join('%.2f' % x for x in os.getloadavg())
    except OSError:
        load = '?'
    return ('%s | %d cores | %s | Python %s | load avg %s | %s' % (
        time.strftime('%Y-%m-%d %H:%M:%S'), os.cpu_count() or 0, pretty,
        platform.python_version(), load, revision()))
