"""A master interrupted (SIGINT to itself) at one point of each of its
starts of a local context; prints one JSON line: how many interrupts were
sent, how many contexts the router has, and the programs it started that
still run unknown to the router ("strays"), and how many more descriptors
it has open than before the starts.

Usage: interrupted_starts.py threaded|threadless fork|handshake STARTS

``fork``: as the fork of the new program returns to subprocess; the
handler defers it until the start is done.  ``handshake``: as the
handshake's first poll returns, where it lands at once and the start
fails.
"""
import faulthandler
import json
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402
from late_interrupts import let_late_interrupts_land  # noqa: E402

FIRED = [0]


def interrupt_at(name):
    """A profile hook: SIGINT as the C function *name* returns, once."""
    def hook(frame, event, arg):
        if event == 'c_return' and getattr(arg, '__name__', '') == name:
            sys.setprofile(None)
            FIRED[0] += 1
            os.kill(os.getpid(), signal.SIGINT)
    return hook


def start_interrupted(router, point):
    """Start a context, and call it, with an interrupt at *point*."""
    sys.setprofile(interrupt_at({'fork': 'fork_exec',
                                 'handshake': 'poll'}[point]))
    try:
        router.local().call(os.getpid)
    except KeyboardInterrupt:
        pass
    finally:
        sys.setprofile(None)
        let_late_interrupts_land(0.05)


def strays(router):
    """This process's children that are not the router's contexts."""
    known = set(stream.process.pid for stream in router.streams)
    own = set()
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open('/proc/%s/stat' % name) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except (IOError, OSError):
                continue  # ended meanwhile
            if int(fields[1]) == os.getpid() and fields[0] != 'Z':
                own.add(int(name))
    return sorted(own - known)


def main():
    faulthandler.dump_traceback_later(240, exit=True)  # a hang says where
    threaded, point = sys.argv[1] == 'threaded', sys.argv[2]
    starts = int(sys.argv[3])
    with plasmid.Router(threaded=threaded) as router:
        before = len(os.listdir('/proc/self/fd'))
        for _ in range(starts):
            start_interrupted(router, point)
        contexts, left = len(router.contexts), strays(router)
        fds = len(os.listdir('/proc/self/fd')) - before - 3 * contexts
    print(json.dumps({'interrupts': FIRED[0], 'contexts': contexts,
                      'strays': left, 'more descriptors': fds}))


if __name__ == '__main__':
    main()
