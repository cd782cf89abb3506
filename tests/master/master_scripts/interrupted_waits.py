"""A threadless master interrupted (SIGINT from a timer) while it waits
for a burst of replies; prints one JSON line: how many rounds the
interrupt hit, and how many replies never came in those rounds.

Usage: interrupted_waits.py ROUNDS
"""
import faulthandler
import json
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE),                       # local_fns
                os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402
from late_interrupts import let_late_interrupts_land  # noqa: E402
import local_fns  # noqa: E402

CALLS = 3000


def interrupted_round(ctx, delay):
    """Whether the interrupt came during the waits, and the futures that
    never finished."""
    futures = [ctx.call_async(local_fns.echo, i) for i in range(CALLS)]
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        for future in futures:
            future.result(timeout=30)
        hit = False
    except KeyboardInterrupt:
        hit = True
    timer.cancel()
    timer.join()
    # Replies come in order: once a later call's is here, all are.
    ctx.call_async(local_fns.echo, 'later').result(timeout=30)
    return hit, [f for f in futures if not f.done()]


def main():
    faulthandler.dump_traceback_later(240, exit=True)  # a hang says where
    rounds = int(sys.argv[1])
    hits = lost = 0
    with plasmid.Router() as router:
        ctx = router.local()
        ctx.call(os.getpid)
        for number in range(rounds):
            try:
                hit, never = interrupted_round(ctx, 0.001 * (1 + number % 8))
            except KeyboardInterrupt:  # landed after the waits: again
                continue
            hits += hit
            lost += len(never)
        let_late_interrupts_land(0.1)
    print(json.dumps({'hits': hits, 'lost': lost}))


main()
