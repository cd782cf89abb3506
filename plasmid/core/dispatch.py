"""Runs the calls a context receives, one at a time, on its main thread.

The I/O thread only queues CALL messages; decoding, importing and running
the function happen here, so a slow or stuck call never stops routing.
"""
import collections
import logging
import sys
import threading
import traceback

from plasmid.core.errors import (CallError, ConnectError, StreamError,
                                 ProtocolError)
from plasmid.core.router import CALL, FROM_PARENT

LOG = logging.getLogger('plasmid.dispatch')
_STOP = object()


def resolve(module_name, qualname):
    """Import *module_name* and walk *qualname* inside it."""
    __import__(module_name)
    target = sys.modules[module_name]
    for part in qualname.split('.'):
        target = getattr(target, part)
    return target


def error_for(exc):
    """What to send back for an exception raised by a called function."""
    if isinstance(exc, ConnectError):
        return exc  # a failed hop stays a connect failure for the master
    return CallError(type(exc).__name__, str(exc), traceback.format_exc())


class Dispatcher(object):
    """Queue of incoming calls and the loop that runs them."""

    def __init__(self, router, context_factory=None):
        self.router = router
        self.context_factory = context_factory
        self.queue = collections.deque()
        # A bare lock used as a wake-up signal: far cheaper than a
        # Semaphore, which is built on a Condition in pure Python.
        self.wakeup = threading.Lock()
        self.wakeup.acquire()
        self.busy = False
        router.add_handler(CALL, self._on_call, FROM_PARENT)

    def _on_call(self, msg):
        self.queue.append(msg)
        self._wake()

    def stop(self):
        self.queue.append(_STOP)
        self._wake()

    def _wake(self):
        try:
            self.wakeup.release()
        except (RuntimeError, threading.ThreadError):
            pass  # already released: the main thread will look again

    def run(self):
        """Run calls until :meth:`stop`; call from the main thread."""
        while True:
            while not self.queue:
                self.wakeup.acquire()
            msg = self.queue.popleft()
            if msg is _STOP:
                return
            self.busy = True
            try:
                self.run_one(msg)
            finally:
                self.busy = False

    def run_one(self, msg):
        try:
            module, qualname, args, kwargs = msg.value(self.context_factory)
            func = resolve(module, qualname)
            outcome = (True, func(*args, **kwargs))
        except ProtocolError as exc:
            LOG.error('malformed call from context %d: %s', msg.src, exc)
            outcome = (False, CallError('ProtocolError', str(exc)))
        except BaseException as exc:  # the caller gets every failure
            outcome = (False, error_for(exc))
        if not msg.reply_to:
            if not outcome[0]:
                LOG.error('call_no_reply failed: %s', outcome[1])
            return
        try:
            self.router.reply(msg, outcome)
        except StreamError as exc:
            self.router.reply(msg, (False, CallError(
                'StreamError', 'the result could not be sent: %s' % exc)))
