"""Blocking waits on descriptors outside the loop: a start's handshake,
a module's output, a worker's hang-up.

poll(), unlike select(), takes descriptors above 1023, which a master or
broker with hundreds of contexts has: nothing in plasmid calls select().
Not in the bootstrap (a context that only runs calls never waits this
way): it comes with the modules that use it.
"""
from __future__ import absolute_import
import select

from plasmid.core import compat
from plasmid.core.loop import NVAL, READ, READABLE, WRITE, deadline_for, \
    poll_once, seconds_left

_WRITABLE = WRITE | select.POLLERR | select.POLLHUP | NVAL


def wait_for(readers, writers=(), timeout=None):
    """Wait up to *timeout* seconds (None: for ever) until some of
    *readers* can be read (or are at their end) or some of *writers* can
    be written; return the two lists of those ready, as given (descriptors
    or objects with ``fileno()``)."""
    reading = dict((_fd_of(item), item) for item in readers)
    writing = dict((_fd_of(item), item) for item in writers)
    poller = select.poll()
    for fd in set(reading) | set(writing):
        poller.register(fd, (fd in reading and READ or 0) |
                        (fd in writing and WRITE or 0))
    deadline = deadline_for(timeout)
    while True:
        left = seconds_left(deadline)
        events = poll_once(poller, left)
        if events or left == 0:
            break  # [] before the deadline: a signal interrupted the wait
    ready_r, ready_w = [], []
    for fd, event in events:
        if fd in reading and event & READABLE:
            ready_r.append(reading[fd])
        # A pipe whose reader has gone reports an error: writing then
        # fails at once instead of blocking, which is what callers ask.
        if fd in writing and event & _WRITABLE:
            ready_w.append(writing[fd])
    return ready_r, ready_w


def _fd_of(item):
    return item if isinstance(item, compat.int_types) else item.fileno()
