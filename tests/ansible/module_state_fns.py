"""What bench/ansible/module_state.py runs in its context: one module run
after another in a single process forked from the context, with what each
run leaves behind in that process.  Shipped alone to the context, where
it reads more than ``baseline.py`` checks after a task, with its help."""
import atexit
import locale
import logging
import os
import resource
import socket
import sys
import warnings

from plasmid.ansible import baseline


def _shape(value):
    """What a run may change about a global without rebinding it: a
    container's length, an object's attribute count (a cached property
    adds one), a class's."""
    if isinstance(value, (list, dict, set, bytearray)):
        return (id(value), len(value))
    attributes = getattr(value, '__dict__', None)
    if attributes is not None and not isinstance(value, type(sys)):
        try:
            return (id(value), len(attributes))
        except TypeError:
            pass
    return (id(value),)


def _process_state():
    umask = os.umask(0o22)
    os.umask(umask)
    return {
        'environ': dict(os.environ),
        'cwd': os.getcwd(),
        'umask': umask,
        'signal handlers': baseline.signal_handlers(),
        'open fds': baseline.open_fds(),
        'threads': baseline.threads(),
        'locale': locale.setlocale(locale.LC_ALL, None),
        'rlimits': [resource.getrlimit(getattr(resource, name))
                    for name in sorted(dir(resource))
                    if name.startswith('RLIMIT_')],
        'ids': baseline.ids(),
        'warnings filters': list(warnings.filters),
        'logging root': (list(logging.root.handlers), logging.root.level),
        'socket timeout': socket.getdefaulttimeout(),
        'atexit handlers': _atexit_count(),
    }


def _atexit_count():
    count = getattr(atexit, '_ncallbacks', None)
    return count() if count else len(getattr(atexit, '_exithandlers', []))


def fingerprint():
    """Every loaded module's globals (by :func:`_shape`) and the process's
    own state."""
    modules = {}
    for name, module in list(sys.modules.items()):
        names = getattr(module, '__dict__', None)
        if names is not None:
            modules[name] = dict((key, _shape(value))
                                 for key, value in list(names.items()))
    return modules, _process_state()


def differences(before, after):
    """Sorted names of what changed: ``module.global``, ``+module``
    (imported), ``-module`` (gone), ``process: what``."""
    modules0, process0 = before
    modules1, process1 = after
    found = ['+' + name for name in set(modules1) - set(modules0)]
    found += ['-' + name for name in set(modules0) - set(modules1)]
    for name in set(modules0) & set(modules1):
        old, new = modules0[name], modules1[name]
        found += ['%s.%s' % (name, key) for key in set(old) | set(new)
                  if old.get(key) != new.get(key)]
    found += ['process: ' + key for key in process0
              if process0[key] != process1[key]]
    return sorted(found)


def _usage():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime +
            children.ru_stime, own.ru_minflt + children.ru_minflt)


def _run_once(modules, job):
    """One module run in this process, as a module process runs it; the
    exit status."""
    from plasmid.ansible import forks, target
    status = 0
    try:
        target._module_main(modules, job, [])
    except SystemExit as exc:
        status = forks._exit_status(exc.code)
    forks._run_exit_handlers()
    forks._clear_exit_handlers()
    sys.stdout.flush()
    return status


def _in_one_process(digest, job, warmup, runs):
    """In the forked process: the state runs leave, then their cost."""
    import time
    from plasmid.ansible import forks, target
    modules = target._ZIPS[digest]
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    forks._clear_exit_handlers()  # the context's, as a module process does
    started = time.perf_counter()
    pristine = fingerprint()
    cost = time.perf_counter() - started
    statuses = [_run_once(modules, job)]
    first = fingerprint()
    statuses.append(_run_once(modules, job))
    second = fingerprint()
    for _ in range(warmup):
        statuses.append(_run_once(modules, job))
    cpu0, faults0 = _usage()
    for _ in range(runs):
        statuses.append(_run_once(modules, job))
    cpu1, faults1 = _usage()
    return {'statuses': sorted(set(statuses)),
            'left by the first run': differences(pristine, first),
            'changed by the second run': differences(first, second),
            'fingerprint ms': cost * 1e3,
            'cpu ms': (cpu1 - cpu0) / runs * 1e3,
            'faults': float(faults1 - faults0) / runs}


def runs_in_one_process(digest, job, warmup=5, runs=100):
    """Fork this context once; in the child, run module *digest*'s *job*
    again and again (as a module process would if it stayed for the next
    task) and report what changed and what each run cost."""
    import marshal
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            report = _in_one_process(digest, job, warmup, runs)
            data = marshal.dumps(report)
            while data:
                data = data[os.write(write_end, data):]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return marshal.loads(b''.join(chunks))
