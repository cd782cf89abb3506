"""A master interrupted (SIGINT to itself) just as each write of a
stream's send returns, while it sends calls of 1 MiB arguments, more
than a pipe takes at once; prints one JSON line: how many interrupts
were sent, how many calls went out, and how many of those were answered.

Usage: interrupted_sends.py threaded|threadless CALLS
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

ARGUMENT = b'x' * (1 << 20)
FIRED = [0]


def interrupt_after_writes(frame, event, arg):
    """A profile hook: SIGINT as os.write returns to a stream's send, so
    the handler runs at the send's next instruction."""
    if event == 'c_return' and arg is os.write and \
            frame.f_code.co_name == 'send':
        FIRED[0] += 1
        os.kill(os.getpid(), signal.SIGINT)


def send_interrupted(ctx, calls):
    """The futures of *calls* calls, each sent with its writes
    interrupted (those whose interrupt struck the send are missing)."""
    futures = []
    for _ in range(calls):
        sys.setprofile(interrupt_after_writes)
        try:
            futures.append(ctx.call_async(len, ARGUMENT))
        except KeyboardInterrupt:
            pass
        finally:
            sys.setprofile(None)
        let_late_interrupts_land(0.05)
    return futures


def main():
    faulthandler.dump_traceback_later(240, exit=True)  # a hang says where
    threaded, calls = sys.argv[1] == 'threaded', int(sys.argv[2])
    answered = 0
    with plasmid.Router(threaded=threaded) as router:
        ctx = router.local()
        futures = send_interrupted(ctx, calls)
        for future in futures:
            try:
                answered += future.result(timeout=60) == len(ARGUMENT)
            except plasmid.Error:
                pass
    print(json.dumps({'interrupts': FIRED[0], 'sent': len(futures),
                      'answered': answered}))


if __name__ == '__main__':
    main()
