"""Send a context's log records and printed output to the master.

Records and ``print()`` output go out synchronously from the thread that
produced them, so they reach the master in order and before the reply of
the call that produced them.  Output written straight to fds 1 and 2 (by
subprocesses, say) is read from a pipe by the I/O loop, and what waits
there when a call returns is sent before its reply too (``drain``).
"""
from __future__ import absolute_import
import codecs
import os
import sys
import threading

from plasmid.core import compat, logger
from plasmid.core.logger import INFO
from plasmid.core.loop import Pausable, set_nonblocking
from plasmid.core.router import LOG_RECORD

STDOUT = 'stdout'
STDERR = 'stderr'
# A line that never ends goes in pieces of about this many characters
# rather than held whole (a progress display, base64 -w0).
PIECE = 65536


class Forwarder(object):
    """Sends (origin, level, text) records to the master."""

    def __init__(self, router, master_id=0):
        self.router = router
        self.master_id = master_id
        self.local = threading.local()

    def send(self, origin, level, text):
        if getattr(self.local, 'sending', False):
            return  # a failure while sending must not recurse
        self.local.sending = True
        try:
            try:
                self._send(origin, level, text)
            except Exception as exc:  # too large: its start, and why
                cut = self.router.max_message >> 6  # chars; 4 bytes at most
                if len(text) > cut:
                    self._send(origin, level, '%s [plasmid: %d more '
                               'characters not sent: %s]' % (
                                   text[:cut], len(text) - cut, exc))
        except Exception:
            pass  # the link is gone: there is no one to tell
        finally:
            self.local.sending = False

    def _send(self, origin, level, text):
        self.router.send_value(self.master_id, LOG_RECORD,
                               (origin, level, text))


def forwarding_handler(logging, forwarder):
    """A handler of the loaded *logging* that forwards every record it
    sees (its class is made here: the core does not load logging)."""

    class ForwardingHandler(logging.Handler):
        def emit(self, record):
            try:
                text = record.getMessage()
                if record.exc_info:
                    text += '\n' + logging.Formatter().formatException(
                        record.exc_info)
            except Exception:  # as logging does: said on stderr, no raise
                return self.handleError(record)
            forwarder.send(record.name, record.levelno,
                           compat.text_from_native(text))

    return ForwardingHandler()


class OutputWriter(object):
    """Stands in for sys.stdout/sys.stderr: forwards complete lines.
    Bytes are taken as UTF-8, so it is its own ``buffer`` too (code that
    writes bytes to ``sys.stdout.buffer``)."""

    encoding = 'utf-8'
    errors = 'replace'
    closed = False

    def __init__(self, forwarder, origin, fd):
        self.forwarder = forwarder
        self.origin = origin
        self.fd = fd
        self.partial = []
        # Bytes written in pieces may cut a character in two: its start
        # waits here for the rest.
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        # Reentrant: a signal handler may print in the middle of a write.
        self.lock = threading.RLock()
        self.buffer = self

    def write(self, data):
        with self.lock:
            text = data
            if not isinstance(data, compat.text_type):  # .buffer's bytes
                data = memoryview(data).tobytes()
                text = self.decoder.decode(data)
            self.partial.append(text)
            if '\n' not in text and len(self.partial) % 64:
                return len(data)
            lines = ''.join(self.partial).split('\n')
            rest = lines.pop()
            if len(rest) > PIECE:  # no line end in sight: a piece now
                lines.append(rest)
                rest = ''
            self.partial = rest and [rest] or []
            # Sent under the lock: lines taken in one order by two threads
            # reached the master in the other when the first was slower to
            # send (sending queues, it never waits for the loop).
            for line in lines:
                self.forwarder.send(self.origin, INFO, line)
        return len(data)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self.lock:
            text, self.partial = ''.join(self.partial), []
            if text:
                self.forwarder.send(self.origin, INFO, text)

    def fileno(self):
        return self.fd

    def isatty(self):
        return False

    # What code asks of a text stream: it writes lines, reads nothing.
    mode = 'w'
    line_buffering = True
    newlines = None

    def writable(self):
        return True

    def readable(self):
        return False

    seekable = readable

    def reconfigure(self, **settings):
        """Taken and ignored: text goes out as UTF-8, a line at a time."""

    def close(self):
        """Flushes only: the next call's output goes the same way."""
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    @property
    def name(self):
        return '<%s>' % self.origin


class PipeReader(Pausable):
    """Reads one captured fd pipe and forwards its lines: on the loop, and
    (``drain``) before each call's reply."""

    def __init__(self, loop, forwarder, origin, rfd):
        self.loop = loop
        self.forwarder = forwarder
        self.origin = origin
        self.rfd = rfd
        self.partial = ''
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        self.closed = False
        # The loop's reads and drain()'s: non-blocking, as either may find
        # the pipe emptied by the other.
        self.lock = threading.Lock()
        set_nonblocking(rfd)

    def start(self):
        self.loop.add_reader(self.rfd, self.on_readable)

    def on_readable(self):
        if self.drain() == b'':
            self.close()
        else:
            self.forwarder.router.parent.hold(self)

    def drain(self):
        """Forward what the pipe holds now, from any thread; return it
        (b'' at its end, None if nothing was there)."""
        with self.lock:
            if self.closed:
                return None
            try:
                data = os.read(self.rfd, 65536)
            except OSError:  # EAGAIN: nothing there
                return None
            if data:
                self._forward(data)
            return data

    def _forward(self, data):
        lines = (self.partial + self.decoder.decode(data)).split('\n')
        self.partial = lines.pop()
        if len(self.partial) > PIECE:  # no line end in sight: a piece now,
            lines.append(self.partial)  # not all of it kept and copied
            self.partial = ''  # again at each read
        for line in lines:
            self.forwarder.send(self.origin, INFO, line)

    def close(self):
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.partial += self.decoder.decode(b'', True)
            if self.partial:
                self.forwarder.send(self.origin, INFO, self.partial)
                self.partial = ''
            self.loop.remove_fd(self.rfd)
            os.close(self.rfd)


def install(router, level):
    """Route this process's output to the master, and its logging from the
    moment anything loads ``logging`` (at once if something has)."""
    forwarder = Forwarder(router)
    logger.threshold = level

    def route(logging):
        root = logging.getLogger()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        root.addHandler(forwarding_handler(logging, forwarder))
        root.setLevel(level)

    if 'logging' in sys.modules:
        route(sys.modules['logging'])
    else:
        sys.meta_path.insert(0, WhenImported('logging', route))
    return forwarder


class WhenImported(object):
    """First on ``sys.meta_path``: when module *name* is imported, calls
    *then* with the module before the import returns, so no code sees the
    module before *then* has run (Python 3 only).  Once done it stays,
    answering nothing: removing it could make another thread's import,
    going through the list at that moment, skip a finder."""

    def __init__(self, name, then):
        self.name = name
        self.then = then
        self.done = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name or self.done:
            return None
        self.done = True
        for finder in sys.meta_path:  # as the import would have
            if finder is self:
                continue
            find = getattr(finder, 'find_spec', None)
            spec = find and find(fullname, path, target)
            if spec is not None:
                self._follow(spec.loader)
                return spec
        return None

    def _follow(self, loader):
        """Make *loader* (this module's own: a path finder makes one per
        module) call *then* after running the module, once.  Not a class
        (the frozen and built-in importers): that would change it for
        every module; such a module goes unrouted."""
        run = getattr(loader, 'exec_module', None)
        if run is None or isinstance(loader, type):
            return

        def exec_module(module):
            del loader.exec_module  # the loader is itself again
            run(module)
            self.then(module)
        loader.exec_module = exec_module
