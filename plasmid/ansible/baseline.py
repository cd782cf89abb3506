"""What a module process that stays for the next task puts back, and what
it checks, between tasks.

Shipped into target contexts with ``forks.py``: stdlib-only, and Python
2.7-compatible in syntax (a process stays only on Python 3.8+, see
``forks.can_stay``).

A :class:`Baseline` is taken once, in a spare module process before its
first task, so it describes exactly what a fresh fork of the context would
start from.  After each task :meth:`Baseline.restore` puts back what a
module sets for itself as a matter of course (the environment ansible-core
passes it, the working directory, umask, locale, argv, import hooks,
``sys.excepthook``, the standard streams, warnings filters, the root
logger, the open-files limit, the signal handlers set from Python: from
ansible-core 2.22 every ``AnsibleModule`` sets SIGUSR1's) and every global
of every module loaded before the task that the task rebound or added
(ansible-core's runners set the arguments there); then it checks what it
cannot put back: signal handlers set outside Python (a C extension's),
threads, open descriptors, user and group ids, the interpreter's
trace and profile hooks, recursion limit and switch interval, the import
path, that every module loaded before is still the same object, and that
every list, dict and set among those globals kept its length (a warning
recorded for the result, a cache filled), but for the caches that only
spare work (:data:`PURE_CACHES`: the regular expressions ``re`` compiled
keep what a pattern means).  Anything different, and the
process leaves instead of serving again: the next task gets a fresh fork,
as every task did before.

A change inside an object that keeps its size, or in a C extension, is
not seen here: which modules may stay at all is decided by measurement
(``target.py``).
"""
from __future__ import absolute_import
import locale
import logging
import os
import signal
import sys
import threading
import warnings

try:
    import resource
except ImportError:  # pragma: no cover - not on POSIX
    resource = None

_SIGNALS = [n for n in range(1, getattr(signal, 'NSIG', 65))
            if n not in (signal.SIGKILL, signal.SIGSTOP)]

# Module globals that cache what a pure function of the key gives: an entry
# a task added changes nothing the next task sees but its speed, so their
# growth does not make a process leave (re's are bounded: _MAXCACHE).
PURE_CACHES = (('re', '_cache'), ('re', '_cache2'))


def signal_handlers():
    """Every catchable signal's handler."""
    found = []
    for signum in _SIGNALS:
        try:
            found.append(signal.getsignal(signum))
        except (ValueError, OSError):
            found.append(None)
    return found


def open_fds():
    """This process's open descriptors."""
    return sorted(os.listdir('/proc/self/fd'))


def threads():
    """Python's threads, and the kernel's (a C extension's own)."""
    return (threading.active_count(), len(os.listdir('/proc/self/task')))


def ids():
    """Real, effective and saved user and group ids; groups."""
    return (os.getresuid(), os.getresgid(), sorted(os.getgroups()))


def interpreter_settings():
    """What ``sys`` holds outside its globals: trace and profile hooks,
    the recursion limit, the thread switch interval."""
    return (sys.gettrace(), sys.getprofile(), sys.getrecursionlimit(),
            sys.getswitchinterval())


def _containers(globals_of):
    """Each list, dict and set among *globals_of*'s values, with its length;
    but the import system's own tables, which grow as a task imports, and
    the pure caches."""
    growing = [sys.modules, sys.path_importer_cache] + _pure_caches()
    found = []
    for names in globals_of.values():
        for value in names.values():
            if type(value) in (list, dict, set) and \
                    not any(value is other for other in growing):
                found.append((value, len(value)))
    return found


def _pure_caches():
    found = []
    for module_name, name in PURE_CACHES:
        value = getattr(sys.modules.get(module_name), name, None)
        if type(value) is dict:
            found.append(value)
    return found


def _globals():
    """Each loaded module's globals dict, by module name."""
    found = {}
    for name, module in list(sys.modules.items()):
        names = getattr(module, '__dict__', None)
        if type(names) is dict:
            found[name] = names
    return found


def _nofile():
    if resource is None:
        return None
    return resource.getrlimit(resource.RLIMIT_NOFILE)


class Baseline(object):
    """The state of this process before its first task."""

    def __init__(self):
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.umask = os.umask(0o22)
        os.umask(self.umask)
        self.locale = locale.setlocale(locale.LC_ALL, None)
        self.argv = list(sys.argv)
        self.meta_path = list(sys.meta_path)
        self.path = list(sys.path)
        self.path_hooks = list(sys.path_hooks)
        self.filters = list(warnings.filters)
        self.root = (list(logging.root.handlers), logging.root.level)
        self.nofile = _nofile()
        self.handlers = signal_handlers()
        self.threads = threads()
        self.ids = ids()
        self.fds = open_fds()
        self.settings = interpreter_settings()
        self.modules = dict(sys.modules)
        self.globals = _globals()
        self.bindings = dict((name, dict(names))
                             for name, names in self.globals.items())
        self.containers = _containers(self.globals)

    def restore(self):
        """Put back what a task changes as a matter of course; then True
        if the process is as it was.  Never raises: whatever goes wrong
        here, the process cannot stay."""
        try:
            self._put_back_globals()
            self._put_back()
            handlers = self._put_back_handlers()
            return (self.handlers == handlers and
                    self.threads == threads() and
                    self.ids == ids() and
                    self.fds == open_fds() and
                    self.settings == interpreter_settings() and
                    self.path == sys.path and
                    self.path_hooks == sys.path_hooks and
                    self._same_modules() and
                    self._same_sizes())
        except Exception:
            return False

    def _put_back(self):
        """What changes in place (the globals are bound again already:
        ``sys.argv``, ``sys.stdout``, ``sys.excepthook`` among them)."""
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        os.chdir(self.cwd)
        os.umask(self.umask)
        if locale.setlocale(locale.LC_ALL, None) != self.locale:
            locale.setlocale(locale.LC_ALL, self.locale)
        sys.argv[:] = self.argv
        sys.meta_path[:] = self.meta_path
        if warnings.filters != self.filters:
            warnings.filters[:] = self.filters
            warnings._filters_mutated()
        logging.root.handlers[:] = self.root[0]
        logging.root.setLevel(self.root[1])
        if self.nofile is not None and _nofile() != self.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, self.nofile)

    def _put_back_handlers(self):
        """Set back each handler a task changed where Python knows both
        (``getsignal`` gives None for one set outside Python: the check
        finds that); return every handler as it is then."""
        handlers = signal_handlers()
        for i, signum in enumerate(_SIGNALS):
            then, now = self.handlers[i], handlers[i]
            if now != then and then is not None and now is not None:
                signal.signal(signum, then)
                handlers[i] = then
        return handlers

    def _put_back_globals(self):
        """Rebind what a task rebound among the globals of the modules
        loaded before it, and drop what it added."""
        for name, names in self.globals.items():
            then = self.bindings[name]
            try:
                if names == then:  # identical values compare at C speed
                    continue
            except Exception:  # a rebound value whose == raises
                pass
            for key in [k for k in names if k not in then]:
                del names[key]
            for key, value in then.items():
                if names.get(key, then) is not value:
                    names[key] = value

    def _same_sizes(self):
        for value, size in self.containers:
            if len(value) != size:
                return False
        return True

    def _same_modules(self):
        modules = sys.modules
        for name, module in self.modules.items():
            if modules.get(name) is not module:
                return False
        return True
