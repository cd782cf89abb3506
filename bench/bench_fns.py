"""Functions the benchmarks call in remote contexts.

Module-level so that plasmid and Mitogen can both name them; the contexts
fetch this module from the master on first use (the warm-up pays for that).
Python 2.7-compatible on purpose, like any function meant for old targets.
"""
import os


def noop():
    pass


def getpid():
    return os.getpid()


def executable():
    import sys
    return sys.executable


def time_command(argv, times):
    """Run *argv* *times* times here; return each run's wall time in seconds.

    Measures a program's own cost on the target (e.g. sudo + python
    start-up) without any network or tool in between.
    """
    import subprocess
    import time
    null = open(os.devnull, 'r+b')
    try:
        out = []
        for _ in range(times):
            start = time.time()
            subprocess.check_call(argv, stdin=null, stdout=null, stderr=null)
            out.append(time.time() - start)
        return out
    finally:
        null.close()


def cpu_and_modules():
    """CPU seconds this process has used so far (user + system) and how
    many modules it has loaded: called first in a fresh context, what its
    start cost the target."""
    import resource
    import sys
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, len(sys.modules)


def mitogen_pull(master, path, dest):
    """Mitogen's way to copy a file of the master's to this context: its
    FileService streams it (the master must have registered *path*).
    Returns the bytes written."""
    import mitogen.service
    with open(dest, 'wb') as out:
        ok, metadata = mitogen.service.FileService.get(master, path, out)
    if not ok:
        raise IOError('Mitogen did not copy %s' % path)
    return metadata['size']


def read_whole(path):
    """A file's bytes in one answer: what a tool without a streaming read
    can do."""
    with open(path, 'rb') as f:
        return f.read()


def peak_rss_kib():
    """This process's resident memory at its highest since it started its
    program, in KiB: Linux's VmHWM.  Not ``ru_maxrss``, which Linux keeps
    across exec: a process forked from a large one and exec'ing Python
    reports the large one's size."""
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1])
    raise RuntimeError('no VmHWM in /proc/self/status')


_TRACED_FROM = []  # the snapshot start_tracing took


def start_tracing():
    """Count this process's Python memory from now on (tracemalloc)."""
    import gc
    import tracemalloc
    gc.collect()
    tracemalloc.start(1)
    _TRACED_FROM[:] = [tracemalloc.take_snapshot()]


def traced_growth(top=5):
    """Bytes held more than at start_tracing, and the *top* sites that
    grew most as (file, line, bytes); stops tracing."""
    import gc
    import tracemalloc
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = [d for d in after.compare_to(_TRACED_FROM.pop(), 'lineno')
             if d.size_diff > 0]
    return (sum(d.size_diff for d in grown),
            [(d.traceback[0].filename, d.traceback[0].lineno, d.size_diff)
             for d in grown[:top]])
