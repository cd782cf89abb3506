"""A master that starts busy contexts, prints their pids, then ends.

Usage: exit_modes.py MODE, MODE one of
  normal         leave the Router block and return
  atexit         never shut the Router down; the interpreter exits
  exception      raise inside the Router block
  exception-bare raise with no Router block (atexit cleans up)
  sigterm        wait in a remote call for the test's SIGTERM
  sigint         wait in a remote call for the test's SIGINT

The pids go to stdout as one JSON line, flushed at once.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE),                       # local_fns
                os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402
import local_fns  # noqa: E402


def cpu_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        return int(f.read().rsplit(')', 1)[1].split()[11])  # utime


def wait_spinning(pid, ticks=10, timeout=30.0):
    """Wait until *pid* has burnt *ticks* of user CPU: its loop runs."""
    deadline = time.time() + timeout
    while cpu_ticks(pid) < ticks:
        if time.time() > deadline:
            raise RuntimeError('context %d never started spinning' % pid)
        time.sleep(0.01)


def start_contexts(router):
    """An idle context, two stuck in busy loops, and a busy via chain."""
    idle = router.local(name='idle')
    busy_no_reply = router.local(name='busy-no-reply')
    busy_no_reply.call_no_reply(local_fns.busy_loop)
    busy_async = router.local(name='busy-async')
    busy_async.call_async(local_fns.busy_loop)
    middle = router.local(name='middle', via=idle)
    deep = router.local(name='deep', via=middle)
    deep.call_no_reply(local_fns.busy_loop)
    contexts = [idle, busy_no_reply, busy_async, middle, deep]
    # A round trip to each proves they all run (and the busy ones spin).
    pids = [c.info['pid'] for c in contexts]
    assert [idle.call(local_fns.getpid), middle.call(local_fns.getpid)] == \
        [pids[0], pids[3]]
    for pid in (pids[1], pids[2], pids[4]):
        wait_spinning(pid)
    sys.stdout.write(json.dumps(pids) + '\n')
    sys.stdout.flush()
    return idle


def main(mode):
    if mode in ('atexit', 'exception-bare'):
        router = plasmid.Router()
        start_contexts(router)
        if mode == 'exception-bare':
            raise RuntimeError('deliberate failure without a Router block')
        return
    with plasmid.Router() as router:
        idle = start_contexts(router)
        if mode == 'exception':
            raise RuntimeError('deliberate failure in the Router block')
        if mode in ('sigterm', 'sigint'):
            idle.call(local_fns.sleep_then, 120, None)
            raise AssertionError('the signal never came')


if __name__ == '__main__':
    main(sys.argv[1])
