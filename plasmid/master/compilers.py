"""Bytecode for contexts whose Python is of another version than the master's.

Compiling is most of what importing a large package costs a context
(``django.db.models``: ~0.4 s of ~0.5 s).  A context on the master's own
version gets the master's code (``modules.ModuleResponder._code_for``); one
on Python X.Y gets the code a Python X.Y on the master's machine compiles:
``pythonX.Y`` found on PATH, or the interpreter the Router is given for
that version, running ``compile_worker`` in a process of its own.

Nothing waits for it, and it starts no thread: the router's loop feeds the
helper's pipes, one module at a time, while it runs (in a threadless
master, inside the program's waits).  The first context of a version gets
source alone, as without a helper, and the modules it was sent are queued
for the helper; a later context of that version gets the code.  The code
also goes to the disk cache (``master/cache``: one entry per version
and module file, holding the digest of the source it was compiled from),
so that the next master serves it to its first context at once.  Whoever
must know when a queued module is compiled says so (``when_compiled``): the
module responder then sends it again, with its code, to an intermediary
that got it as source, so that the intermediary's later children of its
version get the code too.

A helper that does not start, says it is another version, or stays silent
past TIMEOUT is killed, and contexts of its version get source alone for
the rest of this master's life.  A module the helper cannot compile goes as
source, and the context's own compile reports the error as before.
"""
from __future__ import annotations

import collections
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import zlib
from typing import Callable, Mapping, Optional, Union

from plasmid.core.importer import ModuleEntry
from plasmid.core.loop import Loop, set_nonblocking
from plasmid.master import cache

LOG = logging.getLogger('plasmid.master.compilers')

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'compile_worker.py')
# Seconds a helper may take to start, or to answer one module.
TIMEOUT = 20.0
# Disk cache entries kept per version (about 6 KiB each for Django's
# modules): trimmed, oldest first, once per master and version, at the
# version's first store.
CODE_KEPT = 20000
FROM_PATH = 'path'
# Bytes one module's code may take (the largest module of the standard
# library compiles to under 1 MiB): more is a helper gone wrong.
MAX_ANSWER = 64 << 20

Version = tuple  # (major, minor)
Code = tuple     # (magic number, zlib-compressed marshalled code)
# What a Router is given: FROM_PATH, {'X.Y': interpreter}, or None (off).
Interpreters = Union[str, Mapping[str, str], None]


def checked_interpreters(value: Interpreters
                         ) -> Union[str, dict[Version, str], None]:
    """*value* as ForeignCompilers takes it; ValueError names what is
    wrong with it."""
    if value is None or value == FROM_PATH:
        return value
    if not isinstance(value, Mapping):
        raise ValueError('compilers must be %r, None or a mapping of '
                         '"X.Y" to an interpreter, not %r' % (FROM_PATH, value))
    chosen = {}
    for version, python in value.items():
        if not isinstance(version, str) or \
                not re.fullmatch(r'3\.\d+', version):
            raise ValueError('compilers: %r is not a Python 3 version '
                             '"3.Y"' % (version,))
        if not isinstance(python, str) or not python:
            raise ValueError('compilers: the interpreter for %s must be a '
                             'path or command, not %r' % (version, python))
        chosen[tuple(int(n) for n in version.split('.'))] = python
    return chosen


class HelperFailed(Exception):
    """A helper that did not start."""


class Helper:
    """One compile_worker process, driven by the router's loop: one
    request in flight at a time; every step it waits for is bounded by
    TIMEOUT."""

    def __init__(self, loop, python: str, version: Version,
                 on_ready: Callable[[], None],
                 on_answer: Callable[[bool, bytes], None],
                 on_failure: Callable[[str], None]) -> None:
        self.loop = loop
        self.python = python
        self.version = version
        self.on_ready, self.on_answer = on_ready, on_answer
        self.on_failure = on_failure
        self.magic: Optional[bytes] = None  # known once it said hello
        self.busy = False  # a request is in flight
        self.inbox = bytearray()
        self.outbox = bytearray()
        self.closed = False
        self.errors = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [python, '-I', '-S', '-B', WORKER], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.errors,
                start_new_session=True)  # the terminal's ^C is not its
        except OSError as exc:
            self.errors.close()
            raise HelperFailed('%s did not start: %s' % (python, exc))
        self.stdin = self.process.stdin.fileno()
        self.stdout = self.process.stdout.fileno()
        set_nonblocking(self.stdin)
        set_nonblocking(self.stdout)
        loop.add_reader(self.stdout, self._on_readable)
        self.timer = loop.call_later(TIMEOUT, self._on_timeout)

    def send(self, filename: str, source: str) -> None:
        """Ask for one module's code; ``on_answer`` gets it."""
        self.busy = True
        # A file name from the file system may hold undecodable bytes.
        self.outbox += b''.join(_field(text.encode('utf-8', 'surrogateescape'))
                                for text in (filename, source))
        self.timer = self.loop.call_later(TIMEOUT, self._on_timeout)
        self._flush()

    def _flush(self) -> None:
        try:
            written = os.write(self.stdin, self.outbox)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            return self._fail('%s ended: %s%s' % (
                self.python, exc, self._last_words()))
        del self.outbox[:written]
        self.loop.set_writer(self.stdin, self._flush if self.outbox else None)

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self.stdout, 1 << 16)
        except BlockingIOError:
            return
        except OSError as exc:
            chunk = b''
            LOG.debug('reading from %s: %s', self.python, exc)
        if not chunk:
            return self._fail('%s ended%s' % (self.python,
                                               self._last_words()))
        self.inbox += chunk
        if self.magic is None:
            self._take_hello()
        else:
            self._take_answer()

    def _take_hello(self) -> None:
        line, newline, rest = bytes(self.inbox).partition(b'\n')
        if not newline:
            if len(self.inbox) > 200:
                self._fail('%s said no hello' % self.python)
            return
        if rest:
            return self._fail('%s said what it was not asked' % self.python)
        self.inbox = bytearray()
        said = line.decode('ascii', 'replace').split()
        expected = '%d.%d' % self.version
        if len(said) != 2 or said[0] != expected:
            return self._fail('%s is Python %s, not %s' % (
                self.python, said[0] if said else '?', expected))
        try:
            self.magic = bytes.fromhex(said[1])
        except ValueError:
            return self._fail('%s named no magic number' % self.python)
        Loop.cancel_timer(self.timer)
        self.on_ready()

    def _take_answer(self) -> None:
        """Hand on the answer once it is whole: exactly one per request,
        nothing beyond it."""
        if not self.busy:
            return self._fail('%s said what it was not asked' % self.python)
        if len(self.inbox) < 4:
            return
        size = int.from_bytes(self.inbox[:4], 'big')
        if size > MAX_ANSWER or len(self.inbox) > 4 + size:
            return self._fail('%s said what it was not asked' % self.python)
        if len(self.inbox) < 4 + size:
            return
        answer = bytes(self.inbox[4:])
        self.inbox = bytearray()
        Loop.cancel_timer(self.timer)
        self.busy = False
        self.on_answer(answer[:1] == b'+', answer[1:])

    def _on_timeout(self) -> None:
        self._fail('%s said nothing for %.0f s' % (self.python, TIMEOUT))

    def _fail(self, why: str) -> None:
        if not self.closed:
            self.close()
            self.on_failure(why)

    def _last_words(self) -> str:
        """The helper's exit status and the end of its stderr, if it
        has ended (it has, or nearly, once its stdout ends)."""
        try:
            status = self.process.wait(0.5)
        except subprocess.TimeoutExpired:
            return ''
        self.errors.seek(0)
        said = self.errors.read()[-300:].decode('utf-8', 'replace').strip()
        return ' (status %s%s)' % (status, ': ' + said if said else '')

    def close(self) -> None:
        """End the process and free its descriptors (loop owner, or once
        the loop has stopped)."""
        if self.closed:
            return
        self.closed = True
        Loop.cancel_timer(self.timer)
        for fd in (self.stdin, self.stdout):
            self.loop.remove_fd(fd)
        try:
            self.process.kill()
        except OSError:
            pass
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.errors.close()


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(4, 'big') + data


class ForeignCompilers:
    """Code of served modules for contexts on other Python versions; see
    the module docstring.  ``code`` may be called on any thread and never
    waits for a helper; the helpers run on the router's loop."""

    def __init__(self, loop, interpreters: Union[str, dict[Version, str]]
                 ) -> None:
        self.loop = loop
        self.interpreters = interpreters
        self.lock = threading.Condition()
        # (version, module) -> its code, or None: it goes as source.
        self.known: dict[tuple[Version, str], Optional[Code]] = {}
        self.queued: set[tuple[Version, str]] = set()
        # (version, module) queued -> what to call with its code.
        self.waiters: dict[tuple[Version, str],
                           list[Callable[[Code], None]]] = {}
        self.jobs: dict[Version, collections.deque] = {}
        self.asked: dict[Version, ModuleEntry] = {}  # the one in flight
        # A version's helper, None if it has none (or lost it).
        self.helpers: dict[Version, Optional[Helper]] = {}
        self.trimmed: set[Version] = set()  # versions pruned on disk
        self.closed = False

    def code(self, version: Version, entry: ModuleEntry) -> Optional[Code]:
        """*entry*'s code for a context on Python *version* if there is
        some now (in memory, or in the disk cache); else None, and it is
        compiled for the next context of that version."""
        key = (version, entry.name)
        with self.lock:
            if key in self.known:
                return self.known[key]
            if key in self.queued or self.closed:
                return None
            found = _from_disk(version, entry)
            if found is not None or self.helpers.get(version, True) is None:
                self.known[key] = found
                return found
            self.queued.add(key)
            self.jobs.setdefault(version, collections.deque()).append(entry)
        self.loop.defer(self._next, version)
        return None

    def when_compiled(self, version: Version, name: str,
                      callback: Callable[[Code], None]) -> bool:
        """Have the loop call *callback(code)* once module *name*, queued
        for *version*, is compiled (not if it cannot be); False if it is
        not queued (its fate is known, or there is no helper)."""
        key = (version, name)
        with self.lock:
            if key not in self.queued or key in self.known:
                return False
            self.waiters.setdefault(key, []).append(callback)
            return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every queued module is compiled (or refused) and
        handed to what waited for it, running the loop if no thread
        does; False at the timeout."""
        def idle() -> bool:
            return not self.queued
        if not self.loop.threaded:
            return self.loop.run_until(idle, timeout)
        with self.lock:
            return self.lock.wait_for(idle, timeout)

    def close(self) -> None:
        """End the helpers (the loop has stopped); modules still queued
        go as source."""
        with self.lock:
            self.closed = True
            helpers = [h for h in self.helpers.values() if h is not None]
            for version, entry in list(self.asked.items()):
                self._settle(version, entry, None)
            self.asked.clear()
            for version in list(self.jobs):
                self._drop_queue(version)
        for helper in helpers:
            helper.close()

    # ------------------------------------------------ on the loop only

    def _next(self, version: Version) -> None:
        """Send the version's helper its next module, starting it first
        if it is not running."""
        if self.closed:
            return
        helper = self.helpers.get(version, False)
        if helper is False:
            helper = self.helpers[version] = self._start(version)
            if helper is None:
                with self.lock:
                    self._drop_queue(version)
            return  # a started helper asks when its hello came
        if helper is None or helper.magic is None or helper.busy:
            return
        with self.lock:
            queue = self.jobs.get(version)
            if not queue:
                return
            entry = self.asked[version] = queue.popleft()
        helper.send(entry.filename, entry.source)

    def _start(self, version: Version) -> Optional[Helper]:
        python = self._interpreter(version)
        if python is None:
            LOG.debug('no python%d.%d for contexts of that version', *version)
            return None
        try:
            return Helper(self.loop, python, version,
                          on_ready=lambda: self._next(version),
                          on_answer=lambda compiled, data: self._on_answer(
                              version, compiled, data),
                          on_failure=lambda why: self._on_failure(
                              version, why))
        except HelperFailed as exc:
            self._log_failure(version, str(exc))
            return None

    def _on_answer(self, version: Version, compiled: bool,
                   data: bytes) -> None:
        entry = self.asked.pop(version)
        found = None
        if compiled:
            found = (self.helpers[version].magic, zlib.compress(data, 6))
            try:
                self._store(version, entry, found)
            except Exception:  # the loop must go on; memory has it
                LOG.exception('storing the code of %s', entry.name)
        else:
            LOG.debug('%s does not compile on Python %d.%d: %s', entry.name,
                      *version, data.decode('utf-8', 'replace'))
        if found is not None:
            self._hand_over(version, entry.name, found)
        with self.lock:
            self._settle(version, entry, found)
        self._next(version)

    def _hand_over(self, version: Version, name: str, found: Code) -> None:
        """Give the code to what waited for it, before the module stops
        counting as queued (``wait_idle`` returns after this)."""
        with self.lock:
            self.known[(version, name)] = found  # no waiter comes now
            waiting = self.waiters.pop((version, name), [])
        for callback in waiting:
            try:
                callback(found)
            except Exception:  # the loop must go on
                LOG.exception('handing on the code of %s', name)

    def _on_failure(self, version: Version, why: str) -> None:
        self.helpers[version] = None
        self._log_failure(version, why)
        with self.lock:
            entry = self.asked.pop(version, None)
            if entry is not None:
                self._settle(version, entry, None)
            self._drop_queue(version)

    def _log_failure(self, version: Version, why: str) -> None:
        if self.closed:
            return
        # One named by the caller is expected to work; PATH's pythonX.Y
        # may be a shim for a version not selected.
        log = LOG.debug if self.interpreters == FROM_PATH else LOG.warning
        log('no bytecode for Python %d.%d contexts: %s', *version, why)

    def _store(self, version: Version, entry: ModuleEntry,
               found: Code) -> None:
        _to_disk(version, entry, found)
        if version not in self.trimmed:
            self.trimmed.add(version)
            cache.prune(_disk_kind(version), CODE_KEPT)

    # ------------------------------------------------- under the lock

    def _settle(self, version: Version, entry: ModuleEntry,
                found: Optional[Code]) -> None:
        self.known[(version, entry.name)] = found
        self.queued.discard((version, entry.name))
        self.waiters.pop((version, entry.name), None)
        self.lock.notify_all()

    def _drop_queue(self, version: Version) -> None:
        """The version's queued modules go as source from now on."""
        for entry in self.jobs.pop(version, ()):
            self._settle(version, entry, None)

    def _interpreter(self, version: Version) -> Optional[str]:
        if self.interpreters == FROM_PATH:
            return shutil.which('python%d.%d' % version)
        return self.interpreters.get(version)


def _disk_kind(version: Version) -> str:
    return 'code%d.%d' % version


def _disk_name(version: Version, entry: ModuleEntry) -> str:
    where = hashlib.sha256(entry.filename.encode('utf-8', 'surrogateescape'))
    return '%s-%s' % (_disk_kind(version), where.hexdigest()[:40])


def _source_digest(entry: ModuleEntry) -> bytes:
    return hashlib.sha256(entry.source.encode('utf-8', 'surrogateescape')
                          ).digest()


def _from_disk(version: Version, entry: ModuleEntry) -> Optional[Code]:
    """The cached code of *entry* for *version*, if compiled from this
    very source."""
    data = cache.read(_disk_name(version, entry))
    if data is None or len(data) < 33 or data[:32] != _source_digest(entry):
        return None
    magic_size = data[32]
    magic = data[33:33 + magic_size]
    if len(magic) != magic_size:
        return None
    return (magic, data[33 + magic_size:])


def _to_disk(version: Version, entry: ModuleEntry, found: Code) -> None:
    magic, packed = found
    cache.write(_disk_name(version, entry), _source_digest(entry) +
                bytes([len(magic)]) + magic + packed)
