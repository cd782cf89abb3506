"""What a test process's descriptors point at, for leak checks.

A leak shows as a descriptor pointing at something new ('pipe:[inode]',
'socket:[inode]', '/dev/ptmx').  Comparing counts instead would also see
descriptors that other threads of the test run (or the garbage collector,
freeing an earlier test's sockets) close meanwhile.
"""
from __future__ import annotations

import collections
import os


def open_files() -> collections.Counter:
    found: collections.Counter = collections.Counter()
    for fd in os.listdir('/proc/self/fd'):
        try:
            found[os.readlink('/proc/self/fd/' + fd)] += 1
        except OSError:  # the listing's own descriptor, closed by now
            pass
    return found


def new_since(before: collections.Counter) -> collections.Counter:
    """What is open now that was not open when *before* was taken."""
    return open_files() - before
