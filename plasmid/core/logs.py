"""Send a context's log records and printed output to the master.

Records and ``print()`` output go out synchronously from the thread that
produced them, so they reach the master in order and before the reply of
the call that produced them.  Output written straight to fds 1 and 2 (by
subprocesses, say) is read from a pipe by the I/O loop.
"""
from __future__ import absolute_import
import logging
import os
import threading

from plasmid.core import compat
from plasmid.core.router import LOG_RECORD

STDOUT = 'stdout'
STDERR = 'stderr'


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
            self.router.send_value(self.master_id, LOG_RECORD,
                                   (origin, level, text))
        except Exception:
            pass
        finally:
            self.local.sending = False


class ForwardingHandler(logging.Handler):
    """A logging handler that forwards every record it sees."""

    def __init__(self, forwarder):
        logging.Handler.__init__(self)
        self.forwarder = forwarder

    def emit(self, record):
        try:
            text = record.getMessage()
            if record.exc_info:
                text += '\n' + logging.Formatter().formatException(
                    record.exc_info)
        except Exception:
            text = repr(record.msg)
        self.forwarder.send(record.name, record.levelno,
                            compat.text_from_native(text))


class OutputWriter(object):
    """Stands in for sys.stdout/sys.stderr: forwards complete lines."""

    encoding = 'utf-8'
    errors = 'replace'

    def __init__(self, forwarder, origin, fd):
        self.forwarder = forwarder
        self.origin = origin
        self.fd = fd
        self.partial = []
        self.lock = threading.Lock()

    def write(self, text):
        text = compat.text_from_native(text)
        with self.lock:
            if '\n' not in text:
                self.partial.append(text)
                return len(text)
            self.partial.append(text)
            lines = ''.join(self.partial).split('\n')
            rest = lines.pop()
            self.partial = rest and [rest] or []
        for line in lines:
            self.forwarder.send(self.origin, logging.INFO, line)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        with self.lock:
            text, self.partial = ''.join(self.partial), []
        if text:
            self.forwarder.send(self.origin, logging.INFO, text)

    def fileno(self):
        return self.fd

    def isatty(self):
        return False


class PipeReader(object):
    """Reads one captured fd pipe on the loop and forwards its lines."""

    def __init__(self, loop, forwarder, origin, rfd):
        self.loop = loop
        self.forwarder = forwarder
        self.origin = origin
        self.rfd = rfd
        self.partial = b''
        self.closed = False

    def start(self):
        self.loop.add_reader(self.rfd, self.on_readable)

    def on_readable(self):
        try:
            data = os.read(self.rfd, 65536)
        except OSError:
            return
        if not data:
            self.close()
            return
        lines = (self.partial + data).split(b'\n')
        self.partial = lines.pop()
        for line in lines:
            self.forwarder.send(self.origin, logging.INFO,
                                line.decode('utf-8', 'replace'))

    def close(self):
        if self.closed:
            return
        self.closed = True
        if self.partial:
            self.forwarder.send(self.origin, logging.INFO,
                                self.partial.decode('utf-8', 'replace'))
            self.partial = b''
        self.loop.remove_fd(self.rfd)
        os.close(self.rfd)


def install(router, level):
    """Route this process's logging and output to the master."""
    forwarder = Forwarder(router)
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.addHandler(ForwardingHandler(forwarder))
    root.setLevel(level)
    return forwarder
