"""A master interrupted (SIGINT to itself) at one point of each of its
starts of a local context; prints one JSON line: how many interrupts were
sent, how many contexts the router has, and the programs it started that
still run unknown to the router ("strays"), and how many more descriptors
it has open than before the starts.

Usage: interrupted_starts.py threaded|threadless fork|handshake|via STARTS

``fork``: as the fork of the new program returns to subprocess; the
handler defers it until the start is done.  ``handshake``: as the
handshake's first poll returns, where it lands at once and the start
fails.  ``via``: starts through an intermediary, as the master's first
poll in the wait for its reply begins; the strays are then the
intermediary's children still running 10 s later.
"""
import faulthandler
import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402
from late_interrupts import let_late_interrupts_land  # noqa: E402

FIRED = [0]


def interrupt_at(name, event_wanted='c_return'):
    """A profile hook: SIGINT as the C function *name* returns (or is
    called), once."""
    def hook(frame, event, arg):
        if event == event_wanted and getattr(arg, '__name__', '') == name:
            sys.setprofile(None)
            FIRED[0] += 1
            os.kill(os.getpid(), signal.SIGINT)
    return hook


# Through an intermediary, the interrupt comes as the wait for the reply
# begins; deferred there (the hook is no place to raise), it is sent again
# 20 ms later: a start that lasts longer takes it in that wait, whatever
# this machine's speed.
SLOW_PYTHON = ['/bin/sh', '-c', 'sleep 0.3; exec "$0" "$@"', sys.executable]
POINTS = {'fork': ('fork_exec', 'c_return'), 'handshake': ('poll', 'c_return'),
          'via': ('poll', 'c_call')}


def start_interrupted(router, point, via):
    """Start a context, and call it, with an interrupt at *point*."""
    sys.setprofile(interrupt_at(*POINTS[point]))
    try:
        router.local(via=via, python_path=SLOW_PYTHON if via else None
                     ).call(os.getpid)
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


def running_children():
    """In an intermediary: the pids of its children still running."""
    from plasmid.core import child
    return [stream.process.pid for stream in child.current.children
            if not stream.closed]


def strays_via(hop, router):
    """*hop*'s children that are not the router's contexts, once those
    told to stop have had 10 s to."""
    known = len([c for c in router.contexts.values() if c.via is hop])
    deadline = time.time() + 10
    while True:
        running = hop.call(running_children)
        if len(running) <= known or time.time() > deadline:
            return running[known:]
        time.sleep(0.05)


def extra_descriptors(router, before, direct):
    """Descriptors open beyond *before* and those of the contexts started
    (*direct*: by this process; via a hop, their pipes are the hop's).  A
    context's stderr pipe closes once it has taken over its fd 2, at a
    moment of its own: counted as it is at each try, for up to 2 s.  So
    does the pidfd that watches its program's exit, if any."""
    for _ in range(40):
        held = sum(len(set((s.rfd, s.wfd))) + (s.process.stderr is not None)
                   + (s.process.pidfd is not None)
                   for s in router.streams) if direct else 0
        extra = len(os.listdir('/proc/self/fd')) - before - held
        if extra == 0:
            break
        time.sleep(0.05)
    return extra


def main():
    faulthandler.dump_traceback_later(240, exit=True)  # a hang says where
    threaded, point = sys.argv[1] == 'threaded', sys.argv[2]
    starts = int(sys.argv[3])
    with plasmid.Router(threaded=threaded) as router:
        hop = router.local(name='hop') if point == 'via' else None
        if hop is not None:
            hop.call(running_children)  # the pipe of its first words closes
        before = len(os.listdir('/proc/self/fd'))
        for _ in range(starts):
            start_interrupted(router, point, hop)
        contexts = len(router.contexts) - (hop is not None)
        left = strays_via(hop, router) if hop else strays(router)
        fds = extra_descriptors(router, before, hop is None)
    print(json.dumps({'interrupts': FIRED[0], 'contexts': contexts,
                      'strays': left, 'more descriptors': fds}))


if __name__ == '__main__':
    main()
