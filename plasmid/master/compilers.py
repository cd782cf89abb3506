"""Bytecode for contexts whose Python is of another version than the master's.

Compiling is most of what importing a large package costs a context
(``django.db.models``: ~0.4 s of ~0.5 s).  A context on the master's own
version gets the master's code (``modules.ModuleResponder._code_for``); one
on Python X.Y gets the code a Python X.Y on the master's machine compiles:
``pythonX.Y`` found on PATH, or the interpreter the Router is given for
that version, running ``compile_worker`` in a process of its own.

Nothing waits for it.  The first context of a version gets source alone,
as without a helper, and the modules it was sent are queued for a thread
that feeds the helper; a later context of that version gets the code.  The
code also goes to the disk cache (``master/cache``: one entry per version
and module file, holding the digest of the source it was compiled from),
so that the next master serves it to its first context at once.

A helper that does not start, says it is another version, or stays silent
past TIMEOUT is killed, and contexts of its version get source alone for
the rest of this master's life.  A module the helper cannot compile goes as
source, and the context's own compile reports the error as before.
"""
from __future__ import annotations

import hashlib
import logging
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
import zlib
from typing import Mapping, Optional, Union

from plasmid.core import waiting
from plasmid.core.importer import ModuleEntry
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
    """A helper that did not start, named another version, or went
    silent."""


class Helper:
    """One compile_worker process, used by one thread at a time."""

    def __init__(self, python: str, version: Version) -> None:
        self.python = python
        self.errors = tempfile.TemporaryFile()
        try:
            self.process = subprocess.Popen(
                [python, '-I', '-S', '-B', WORKER], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self.errors,
                start_new_session=True)  # the terminal's ^C is not its
        except OSError as exc:
            self.errors.close()
            raise HelperFailed('%s did not start: %s' % (python, exc))
        os.set_blocking(self.process.stdin.fileno(), False)
        try:
            self.magic = self._hello(version)
        except HelperFailed:
            self.close()
            raise

    def _hello(self, version: Version) -> bytes:
        deadline = time.monotonic() + TIMEOUT
        line = b''
        while not line.endswith(b'\n') and len(line) < 200:
            line += self._receive_some(deadline)
        said = line.decode('ascii', 'replace').split()
        expected = '%d.%d' % version
        if len(said) != 2 or said[0] != expected:
            raise HelperFailed('%s is Python %s, not %s' % (
                self.python, said[0] if said else '?', expected))
        try:
            return bytes.fromhex(said[1])
        except ValueError:
            raise HelperFailed('%s named no magic number' % self.python)

    def compile(self, filename: str, source: str) -> tuple[bool, bytes]:
        """(True, marshalled code) or (False, why it does not compile)."""
        deadline = time.monotonic() + TIMEOUT
        # A file name from the file system may hold undecodable bytes.
        request = b''.join(_field(text.encode('utf-8', 'surrogateescape'))
                           for text in (filename, source))
        self._send(request, deadline)
        size = int.from_bytes(self._receive(4, deadline), 'big')
        answer = self._receive(size, deadline)
        return answer[:1] == b'+', answer[1:]

    def _send(self, data: bytes, deadline: float) -> None:
        fd = self.process.stdin.fileno()
        view = memoryview(data)
        while view:
            _, ready = waiting.wait_for([], [fd], _left(deadline))
            if not ready:
                raise HelperFailed('%s read nothing for %.0f s' % (
                    self.python, TIMEOUT))
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
            except OSError as exc:
                raise HelperFailed('%s ended: %s%s' % (
                    self.python, exc, self._last_words()))

    def _receive(self, size: int, deadline: float) -> bytes:
        data = bytearray()
        while len(data) < size:
            data += self._receive_some(deadline, size - len(data))
        return bytes(data)

    def _receive_some(self, deadline: float, most: int = 256) -> bytes:
        fd = self.process.stdout.fileno()
        ready, _ = waiting.wait_for([fd], [], _left(deadline))
        if not ready:
            raise HelperFailed('%s said nothing for %.0f s' % (
                self.python, TIMEOUT))
        chunk = os.read(fd, min(most, 1 << 20))
        if not chunk:
            raise HelperFailed('%s ended%s' % (
                self.python, self._last_words()))
        return chunk

    def _last_words(self) -> str:
        """The helper's exit status and the end of its stderr."""
        try:
            status = self.process.wait(1.0)
        except subprocess.TimeoutExpired:
            return ''
        self.errors.seek(0)
        said = self.errors.read()[-300:].decode('utf-8', 'replace').strip()
        return ' (status %s%s)' % (status, ': ' + said if said else '')

    def kill(self) -> None:
        """Safe from any thread: the user's next read or write fails."""
        try:
            self.process.kill()
        except OSError:
            pass

    def close(self) -> None:
        """End the process and free its descriptors (its user's thread)."""
        self.kill()
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.errors.close()


def _field(data: bytes) -> bytes:
    return len(data).to_bytes(4, 'big') + data


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class ForeignCompilers:
    """Code of served modules for contexts on other Python versions; see
    the module docstring.  ``code`` is called on the router's loop, which
    it never keeps waiting for a helper."""

    def __init__(self, interpreters: Union[str, dict[Version, str]]) -> None:
        self.interpreters = interpreters
        self.lock = threading.Condition()
        # (version, module) -> its code, or None: it goes as source.
        self.known: dict[tuple[Version, str], Optional[Code]] = {}
        self.queued: set[tuple[Version, str]] = set()
        self.jobs: queue.Queue = queue.Queue()
        self.helpers: dict[Version, Optional[Helper]] = {}
        self.trimmed: set[Version] = set()  # versions pruned on disk
        self.thread: Optional[threading.Thread] = None
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
            self.jobs.put((version, entry))
            if self.thread is None:
                self.thread = threading.Thread(
                    target=self._work, name='plasmid-compilers', daemon=True)
                self.thread.start()
        return None

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every queued module is compiled (or refused); False
        at the timeout."""
        with self.lock:
            return self.lock.wait_for(lambda: not self.queued, timeout)

    def close(self) -> None:
        """Stop the thread and the helpers; modules still queued go as
        source."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            helpers = [h for h in self.helpers.values() if h is not None]
            thread = self.thread
        for helper in helpers:
            helper.kill()  # a compile in progress ends at once
        if thread is None:
            return
        self.jobs.put(None)
        thread.join(5.0)

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                break
            version, entry = job
            try:
                found = None if self.closed else \
                    self._compile(version, entry)
            except Exception:  # a bug here must not leave modules queued
                LOG.exception('compiling %s for Python %d.%d', entry.name,
                              *version)
                found = None
            with self.lock:
                self.known[(version, entry.name)] = found
                self.queued.discard((version, entry.name))
                self.lock.notify_all()
        for helper in self.helpers.values():
            if helper is not None:
                helper.close()

    def _compile(self, version: Version, entry: ModuleEntry
                 ) -> Optional[Code]:
        helper = self._helper(version)
        if helper is None:
            return None
        try:
            compiled, data = helper.compile(entry.filename, entry.source)
        except HelperFailed as exc:
            if not self.closed:
                LOG.warning('stopped compiling for Python %d.%d: %s; its '
                            'contexts compile what they import',
                            *version, exc)
            helper.close()
            self.helpers[version] = None
            return None
        if not compiled:
            LOG.debug('%s does not compile on Python %d.%d: %s',
                      entry.name, *version, data.decode('utf-8', 'replace'))
            return None
        found = (helper.magic, zlib.compress(data, 6))
        _to_disk(version, entry, found)
        if version not in self.trimmed:
            self.trimmed.add(version)
            cache.prune(_disk_kind(version), CODE_KEPT)
        return found

    def _helper(self, version: Version) -> Optional[Helper]:
        """The version's helper, started on first use; None if there is
        none."""
        if version in self.helpers:
            return self.helpers[version]
        helper = None
        python = self._interpreter(version)
        if python is not None:
            try:
                helper = Helper(python, version)
            except HelperFailed as exc:
                # One named by the caller is expected to work; PATH's
                # pythonX.Y may be a shim for a version not selected.
                log = LOG.debug if self.interpreters == FROM_PATH \
                    else LOG.warning
                log('no bytecode for Python %d.%d contexts: %s', *version,
                    exc)
        self.helpers[version] = helper
        return helper

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
