"""The I/O loop, and the latch every blocking wait goes through.

One loop per process, run by whichever thread *owns* it at the moment.
A thread that must wait (:meth:`Latch.wait`) takes the loop if nobody has
it and runs iterations until its latch is set; if another thread has the
loop, it sleeps until woken.  So a plain script needs no thread besides its
main thread, and a process with many threads still has exactly one poller.
``Loop.start_thread`` dedicates a thread that owns the loop for good (the
master's threaded mode).

Loop state (poller registrations, timers) is only touched by the owner;
other threads hand it work with :meth:`Loop.defer`, which wakes the owner.
"""
from __future__ import absolute_import
import fcntl
import errno
import heapq
import itertools
import os
import select
import threading
import time

try:  # a clock set back must not stretch a wait
    from time import monotonic as now
except ImportError:  # pragma: no cover - Python 2.7 has the wall clock only
    from time import time as now

from plasmid.core import compat
from plasmid.core.errors import TimeoutError

READ = select.POLLIN | select.POLLPRI | select.POLLHUP | select.POLLERR
WRITE = select.POLLOUT
NVAL = select.POLLNVAL
READABLE = READ | NVAL


# Spinning only helps when the peer runs on another CPU meanwhile.
try:
    SPIN_PAYS = len(os.sched_getaffinity(0)) > 1
except AttributeError:  # Python 2 (and not Linux): never spin
    SPIN_PAYS = False
SPIN_SECONDS = 0.00005  # a local peer answers within it (a spun call: ~20 us)
SPIN_AFTER = 0.0001  # a wait shorter than this keeps the loop spinning
SPIN_SKIP = 50  # waits that sleep at once after a spin found nothing


class Loop(object):
    """A poll()-based reactor with deferred calls, timers and an owner."""

    def __init__(self):
        self.poller = select.poll()
        self.readers = {}   # fd -> callback()
        self.writers = {}   # fd -> callback()
        self.deferred = []  # callables queued by any thread
        self.deferred_lock = threading.Lock()
        self.timers = []    # heap of (deadline, seq, callback)
        self.seq = itertools.count()
        self.owner_lock = threading.Lock()
        self.owner = None   # the thread running the loop, if any
        self.release_requested = False  # see take()
        self.thread = None  # a thread dedicated to the loop, if any
        self.spinning = False  # spin before the next wait (see _poll)
        self.skip_spins = 0  # waits left to sleep without a spin
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            set_nonblocking(fd)
            set_cloexec(fd)
        self.readers[self.wake_r] = self._drain_waker
        self.poller.register(self.wake_r, READ)

    # ------------------------------------------------------- any thread

    @property
    def threaded(self):
        """True when a dedicated thread runs the loop."""
        return self.thread is not None

    def defer(self, func, *args):
        """Run ``func(*args)`` on the loop's owner at its next iteration."""
        with self.deferred_lock:
            self.deferred.append((func, args))
        owner = self.owner
        if owner is not None and owner is not threading.current_thread():
            self.wake()

    def wake(self):
        try:
            os.write(self.wake_w, b'x')
        except OSError:  # pipe full: a wake-up is already pending
            pass

    def try_own(self, blocking=False):
        """Become the loop's owner if nobody is; return whether we are."""
        if not self.owner_lock.acquire(blocking):
            return False
        self.owner = threading.current_thread()
        return True

    def disown(self):
        self.owner = None
        self.owner_lock.release()

    def take(self):
        """Own the loop, asking a thread that runs it on loan to let go."""
        if self.try_own():
            return
        self.release_requested = True
        self.wake()
        self.try_own(True)
        self.release_requested = False

    def owned_here(self):
        return self.owner is threading.current_thread()

    # ------------------------------------------------------------ owner

    def add_reader(self, fd, callback):
        self.readers[fd] = callback
        self._update(fd)

    def remove_reader(self, fd):
        self.readers.pop(fd, None)
        self._update(fd)

    def remove_fd(self, fd):
        self.readers.pop(fd, None)
        self.writers.pop(fd, None)
        try:
            self.poller.unregister(fd)
        except (KeyError, ValueError):
            pass

    def set_writer(self, fd, callback):
        if callback is None:
            self.writers.pop(fd, None)
        else:
            self.writers[fd] = callback
        self._update(fd)

    def call_later(self, delay, callback):
        """Run *callback* after *delay* seconds; owner only."""
        entry = [now() + delay, next(self.seq), callback]
        heapq.heappush(self.timers, entry)
        return entry

    @staticmethod
    def cancel_timer(entry):
        entry[2] = None

    def run_once(self, timeout=None):
        """Run deferred work, wait up to *timeout* for I/O, dispatch it."""
        if self._run_deferred():
            timeout = 0
        timeout = self._next_timeout(timeout)
        for fd, event in self._poll(timeout):
            self._dispatch(fd, event)
        self._run_timers()

    def run_until(self, done, timeout):
        """Run the loop until ``done()`` or *timeout* passes."""
        deadline = now() + timeout
        nested = self.owned_here()
        if not nested:
            self.take()
        try:
            while not done():
                remaining = deadline - now()
                if remaining <= 0:
                    return False
                self.run_once(remaining)
            return True
        finally:
            if not nested:
                self.disown()

    def start_thread(self, should_stop):
        """Dedicate a daemon thread to the loop from now on."""
        self.thread = threading.Thread(target=self._thread_main,
                                       args=(should_stop,),
                                       name='plasmid-io')
        self.thread.daemon = True
        self.thread.start()

    def _thread_main(self, should_stop):
        self.try_own(True)
        try:
            while not should_stop():
                self.run_once(None)
        finally:
            self.disown()

    # -------------------------------------------------------- internals

    def _update(self, fd):
        mask = 0
        if fd in self.readers:
            mask |= READ
        if fd in self.writers:
            mask |= WRITE
        if mask:
            self.poller.register(fd, mask)
        else:
            try:
                self.poller.unregister(fd)
            except (KeyError, ValueError):
                pass

    def _run_deferred(self):
        if not self.deferred:
            return False
        with self.deferred_lock:
            work, self.deferred = self.deferred, []
        for func, args in work:
            func(*args)
        return True

    def _next_timeout(self, timeout):
        while self.timers and self.timers[0][2] is None:
            heapq.heappop(self.timers)
        if self.timers:
            until = max(0.0, self.timers[0][0] - now())
            if timeout is None or until < timeout:
                timeout = until
        return timeout

    def _poll(self, timeout):
        started = now()
        if self.spinning and (timeout is None or timeout > SPIN_SECONDS):
            events = self._spin(started)
            if events:
                return events
        events = poll_once(self.poller, timeout)
        # Spin before the next wait only while waits end soon: replies
        # follow requests closely.
        self.spinning = SPIN_PAYS and now() - started < SPIN_AFTER
        return events

    def _spin(self, start):
        """Poll without sleeping for SPIN_SECONDS from *start* (and not
        longer should the clock be set back).  A process asleep in
        poll() is woken by the kernel, on another CPU often by an
        inter-processor interrupt: tens of microseconds on a virtual
        machine, more than a local call costs otherwise.  After a spin
        that found nothing (a relay whose replies come later) the next
        SPIN_SKIP waits sleep at once: spins that keep missing would
        take the CPU the processes we wait for need."""
        if self.skip_spins:
            self.skip_spins -= 1
            return []
        while start <= now() < start + SPIN_SECONDS:
            events = poll_once(self.poller, 0)
            if events:
                return events
        self.skip_spins = SPIN_SKIP
        return []

    def _dispatch(self, fd, event):
        if event & READABLE:
            callback = self.readers.get(fd)
            if callback is not None:
                callback()
                if event & NVAL:
                    self.remove_fd(fd)
                return
        if event & WRITE:
            callback = self.writers.get(fd)
            if callback is not None:
                callback()
        elif event & NVAL:
            self.remove_fd(fd)

    def _run_timers(self):
        due = now()
        while self.timers and self.timers[0][0] <= due:
            callback = heapq.heappop(self.timers)[2]
            if callback is not None:
                callback()

    def _drain_waker(self):
        try:
            while os.read(self.wake_r, 4096):
                pass
        except OSError:
            pass

    def renew(self):
        # In a fork: a loop of its own (the owner, locks and wake-up pipe
        # are the parent's).
        self.close()
        self.__init__()

    def close(self):
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass


# How long a waiter sleeps before checking whether the loop has become
# free for it to run; a set latch wakes it at once regardless.
SLEEP_SLICE = 0.05


class Pausable(object):
    """What the loop reads (``rfd``, ``on_readable``) that a congested
    stream may stop reading for a while (``Stream.hold``)."""

    paused = False

    def pause(self, paused):
        """Stop, or resume, reading; the loop's owner only."""
        self.paused = paused
        if paused:
            self.loop.remove_reader(self.rfd)
        elif not self.closed:
            self.loop.add_reader(self.rfd, self.on_readable)


class Latch(object):
    """A one-shot result that threads wait for.

    ``set()`` may be called from any thread.  ``wait()`` runs the loop
    while nobody else does, and sleeps while somebody else does.
    """

    def __init__(self, loop):
        self.loop = loop
        self.is_set = False
        self.value = None
        self.error = None
        self.callbacks = []
        self.waiters = []
        self.lock = threading.Lock()

    def set(self, value=None, error=None):
        with self.lock:
            if self.is_set:
                return False
            self.value, self.error, self.is_set = value, error, True
            waiters, self.waiters = self.waiters, []
            callbacks, self.callbacks = self.callbacks, []
        for waiter in waiters:
            waiter.release()
        for callback in callbacks:
            callback(self)
        return True

    def add_callback(self, callback):
        """Call ``callback(latch)`` once set (now, if already set)."""
        with self.lock:
            if not self.is_set:
                self.callbacks.append(callback)
                return
        callback(self)

    def wait(self, timeout=None):
        """Return the value, raise the error, or raise TimeoutError.  The
        loop runs at least once, however little time is left: a reply
        already in the pipe counts, even at ``timeout=0``."""
        deadline = deadline_for(timeout)
        loop = self.loop
        while not self.is_set:
            remaining = seconds_left(deadline)
            if loop.owned_here():
                loop.run_once(remaining)
            elif loop.try_own():
                try:
                    self._run_loop(deadline)
                finally:
                    loop.disown()
            elif remaining != 0:
                self._sleep(SLEEP_SLICE if remaining is None
                            else min(remaining, SLEEP_SLICE))
            if remaining == 0 and not self.is_set:
                raise TimeoutError('no result within %.3gs' % timeout)
        if self.error is not None:
            raise self.error
        return self.value

    def _run_loop(self, deadline):
        while not self.is_set:
            remaining = seconds_left(deadline)
            self.loop.run_once(remaining)
            if remaining == 0:
                return

    def _sleep(self, timeout):
        """Sleep until set or *timeout* passes."""
        waiter = threading.Lock()
        waiter.acquire()
        with self.lock:
            if self.is_set:
                return
            self.waiters.append(waiter)
        if not acquire_lock(waiter, timeout):
            with self.lock:
                if waiter in self.waiters:
                    self.waiters.remove(waiter)


def deadline_for(timeout):
    """When *timeout* seconds from now end (None: never)."""
    if timeout is None:
        return None
    if timeout != timeout:  # NaN compares false with everything
        raise ValueError('timeout must be None or a number, not nan')
    return now() + timeout


def seconds_left(deadline):
    """Seconds until *deadline* (0 once past), None for none; a day at
    most, so a wait of months (or infinity) is waited in pieces: poll()
    takes ~24.8 days at most, a lock less."""
    if deadline is None:
        return None
    return min(max(deadline - now(), 0), LONGEST_WAIT)


LONGEST_WAIT = 86400


if compat.PY2:  # pragma: no cover - 2.7 locks take no timeout
    def acquire_lock(lock, timeout):
        if timeout is None:
            return lock.acquire()
        deadline = now() + timeout
        delay = 0.0005
        while not lock.acquire(False):
            if now() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        return True
else:
    def acquire_lock(lock, timeout):
        return lock.acquire(True, -1 if timeout is None else timeout)


def poll_once(poller, timeout):
    """*poller*'s events within *timeout* seconds (None: for ever); [] if
    it timed out or a signal interrupted it (Python 2 raises EINTR)."""
    ms = None if timeout is None else int(timeout * 1000 + 0.999)
    try:
        return poller.poll(ms)
    except (select.error, OSError) as exc:
        if exc.args[0] == errno.EINTR:
            return []
        raise


F_SETPIPE_SZ = 1031  # Linux; elsewhere the call fails and nothing changes


def widen_pipe(fd):
    """Ask for a 1 MiB pipe buffer instead of 64 KiB, if *fd* is a pipe:
    a large message then crosses in a few writes and wake-ups, not
    dozens."""
    try:
        fcntl.fcntl(fd, F_SETPIPE_SZ, 1 << 20)
    except (IOError, OSError):
        pass


def set_nonblocking(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)


def set_cloexec(fd):
    flags = fcntl.fcntl(fd, fcntl.F_GETFD)
    fcntl.fcntl(fd, fcntl.F_SETFD, flags | fcntl.FD_CLOEXEC)
