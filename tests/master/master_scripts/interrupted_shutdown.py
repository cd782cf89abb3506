"""A master interrupted (SIGINT to itself) half a second into a router's
shutdown, while two contexts are busy with a call; prints one JSON line:
whether the shutdown raised KeyboardInterrupt, the contexts' processes
still running two seconds later, the links the router still holds and
the contexts it still counts as up (what a second shutdown() would have
to end), whether the router's I/O thread still runs after that second
shutdown(), and how many more descriptors the master holds than before
the router opened.

Usage: interrupted_shutdown.py threadless|threaded
"""
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(HERE))),
                os.path.dirname(os.path.dirname(HERE))]

import plasmid  # noqa: E402
from testbed.procs import alive  # noqa: E402


def main(mode):
    descriptors = len(os.listdir('/proc/self/fd'))
    router = plasmid.Router(threaded=(mode == 'threaded'))
    contexts = [router.local(name='busy-%d' % n) for n in range(2)]
    pids = [ctx.info['pid'] for ctx in contexts]
    for ctx in contexts:
        ctx.call_no_reply(time.sleep, 60)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    interrupted = False
    try:
        router.shutdown(timeout=10)
    except KeyboardInterrupt:
        interrupted = True
    time.sleep(2.0)
    links = len(router.streams)
    up = [ctx.name for ctx in contexts if ctx.is_alive()]
    router.shutdown(timeout=10)
    io_threads = [t.name for t in threading.enumerate()
                  if t is not threading.current_thread()]
    print(json.dumps({
        'interrupted': interrupted,
        'running': [pid for pid in pids if alive(pid)],
        'links': links,
        'up': up,
        'threads': io_threads,
        'more descriptors': len(os.listdir('/proc/self/fd')) - descriptors,
    }))


if __name__ == '__main__':
    main(sys.argv[1])
