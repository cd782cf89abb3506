"""Runs the calls a context receives, one at a time, on its main thread.

The main thread also runs the I/O loop while it has no call to run, so a
call costs no hand-off between threads.  While a call runs, a standby
thread takes the loop over once the call has lasted ``TAKEOVER_DELAY``:
routing, log forwarding and noticing a lost parent go on however long, or
stuck, the call is, and quick calls never wake it for longer than a check.
"""
from __future__ import absolute_import
import collections
import os
import sys
import threading
import time

from plasmid.core import compat
from plasmid.core.errors import CallError, ProtocolError
from plasmid.core.logger import Logger
from plasmid.core.loop import now
from plasmid.core.router import CALL, FROM_PARENT

LOG = Logger('plasmid.dispatch')
TAKEOVER_DELAY = 0.002
_STOP = object()
_running = []  # the Dispatcher that runs this process's calls, once started


def after_reply(func):
    """Run *func* once the reply to the call running now has been sent,
    before the next call starts: for work the caller need not wait for
    (a context preparing for its next call).  Returns False, doing
    nothing, when no dispatched call is running on this thread."""
    dispatcher = _running and _running[0]
    if not dispatcher or not dispatcher.busy or \
            threading.current_thread() is not dispatcher.thread:
        return False
    dispatcher.after.append(func)
    return True


def resolve(module_name, qualname):
    """Import *module_name* and walk *qualname* inside it."""
    __import__(module_name)
    target = sys.modules[module_name]
    for part in qualname.split('.'):
        target = getattr(target, part)
    return target


def error_for(exc):
    """What to send back for an exception raised by a called function."""
    try:
        trace = compat.stdlib('traceback').format_exc()
    except BaseException:  # Python 2's str(exc) in it raised (see below)
        trace = ''
    return CallError(type(exc).__name__, _message_of(exc), trace)


def _message_of(exc):
    """``str(exc)``, which may fail: on Python 2 for a unicode message
    beyond ASCII (a program's error in a UTF-8 locale, decoded), or in
    the exception's own ``__str__``, with anything (KeyboardInterrupt,
    SystemExit).  The context would die of the error it meant to report."""
    for text in str, compat.text_type:
        try:
            return text(exc)
        except BaseException:
            pass
    return '?'


class Dispatcher(object):
    """Queue of incoming calls and the main-thread loop that runs them."""

    def __init__(self, router, context_factory, before_reply):
        self.router = router
        self.loop = router.loop
        self.context_factory = context_factory
        self.queue = collections.deque()
        self.busy = False
        self.call_seq = 0
        self.after = []  # work queued by after_reply() for the current call
        self.before_reply = before_reply  # sends output the call left
        self.thread = None
        self.standby = Standby(self)
        router.add_handler(CALL, self._on_call, FROM_PARENT)

    def _on_call(self, msg):
        self.queue.append(msg)

    def stop(self):
        self.queue.append(_STOP)
        self.loop.wake()

    def run(self):
        """Run calls until :meth:`stop`; call from the main thread."""
        self.thread = threading.current_thread()
        self.pid = os.getpid()
        _running[:] = [self]
        self.standby.start()
        while True:
            msg = self._next()
            if msg is _STOP:
                return
            self.call_seq += 1
            self.busy = True
            self.standby.notify()
            try:
                self.run_one(msg)
                self._run_after()
            finally:
                del self.after[:]
                self.busy = False

    def _next(self):
        """Run the loop until a call is queued; return it."""
        self.loop.take()
        try:
            while not self.queue:
                try:
                    self.loop.run_once(None)
                except Exception:  # a signal handler's, between calls
                    LOG.exception('error in the loop')
            return self.queue.popleft()
        finally:
            self.loop.disown()

    def _run_after(self):
        while self.after:
            func = self.after.pop(0)
            try:
                func()
            except Exception:  # the call itself has been answered
                LOG.exception('work after a reply failed')

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
        if os.getpid() - self.pid:  # a fork the call made returned: it has
            os._exit(not outcome[0])  # no link (child.py) nor other threads
        if not msg.reply_to:
            if not outcome[0]:
                LOG.error('call_no_reply failed: %s', outcome[1])
            return
        self.before_reply()
        try:
            self.router.reply(msg, outcome)
        except Exception as exc:  # StreamError, MemoryError...
            error = outcome[1]
            if outcome[0] or not isinstance(error, CallError):
                error = CallError(type(exc).__name__, 'the result could '
                                  'not be sent' + (str(exc) and ': %s' % exc))
            else:  # too large: its type, the start of its message will do
                cut = self.router.max_message >> 6  # chars; 4 bytes at most
                error = CallError(error.type_name[:cut], error.message[:cut],
                                  error.remote_traceback[-cut:])
            self.router.reply(msg, (False, error))


class Standby(object):
    """Runs the loop while the main thread is busy with a long call.

    Waking a sleeping thread for every call would double the cost of a
    quick call, so the standby polls instead: every ``TAKEOVER_DELAY`` it
    looks at the main thread, and takes the loop when it sees the same call
    running twice in a row.  After ``PARK_AFTER`` seconds without calls it
    parks, and the next call wakes it once.
    """

    # Each poll costs the process a wake-up (~12 ms of CPU per second of
    # polling, measured): a context with a call every second (one host of
    # fifty in a play) would poll for ever with a longer wait.  A call that
    # finds the standby parked pays one thread wake-up.
    PARK_AFTER = 0.05

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.signal = threading.Lock()
        self.signal.acquire()
        self.parked = False
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self._main,
                                       name='plasmid-standby')
        self.thread.daemon = True
        self.thread.start()

    def notify(self):
        """A call started: wake the standby if it is parked."""
        if self.parked:
            try:
                self.signal.release()
            except Exception:  # already signalled (its class: 2.7 != 3)
                pass

    def _main(self):
        dispatcher = self.dispatcher
        while True:
            self.parked = True
            # Look again after saying we park: a call that started just
            # before saw parked == False and did not wake us.
            if not dispatcher.busy:
                self.signal.acquire()
            self.parked = False
            self._watch()

    def _watch(self):
        """Check on the main thread until it has been idle a while."""
        dispatcher = self.dispatcher
        seen = None
        idle_since = now()
        while True:
            time.sleep(TAKEOVER_DELAY)
            if not dispatcher.busy:
                seen = None
                if now() - idle_since > self.PARK_AFTER:
                    return
                continue
            idle_since = now()
            if dispatcher.call_seq != seen:
                seen = dispatcher.call_seq
            elif self._cover(seen):
                seen = None

    def _cover(self, seq):
        """Run the loop while call *seq* lasts; False if the loop is busy
        (the main thread runs it itself, waiting inside the call)."""
        dispatcher = self.dispatcher
        loop = dispatcher.loop
        if not loop.try_own():
            return False
        try:
            while dispatcher.busy and dispatcher.call_seq == seq and \
                    not loop.release_requested:
                loop.run_once(None)
        finally:
            loop.disown()
        return True
