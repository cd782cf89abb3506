"""A master that records how many threads it has at every step.

Prints one JSON list of samples: where, thread names, /proc/self/task count.
Samples are also taken from a logging handler fed by a context's records
and from a signal handler, both of which run while the I/O loop runs
inside a blocking call.
"""
import json
import logging
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE),                       # local_fns
                os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402
import local_fns  # noqa: E402

samples = []


def sample(where):
    samples.append({'where': where,
                    'threads': [t.name for t in threading.enumerate()],
                    'tasks': len(os.listdir('/proc/self/task'))})


class Sampler(logging.Handler):
    def emit(self, record):
        sample('log: ' + record.getMessage())


def main():
    ctx_log = logging.getLogger('plasmid.ctx')
    ctx_log.setLevel(logging.INFO)
    ctx_log.addHandler(Sampler())
    ctx_log.propagate = False
    sample('start')
    with plasmid.Router() as router:
        sample('router created')
        a = router.local(name='a')
        sample('local started')
        b = router.local(name='b', via=a)
        sample('via started')
        a.call(local_fns.log_then_sleep, 3, 0.2)
        sample('between calls')
        signal.signal(signal.SIGALRM, lambda *_: sample('signal'))
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        b.call(local_fns.log_then_sleep, 2, 1.0)
        futures = [a.call_async(local_fns.sleep_then, 0.1, 1),
                   b.call_async(local_fns.sleep_then, 0.2, 2)]
        results = []
        for fut in plasmid.as_completed(futures, timeout=60):
            results.append(fut.result())
            sample('completed')
        assert sorted(results) == [1, 2], results
        a.call_no_reply(local_fns.chatter, 2, 'last')
        sample('after call_no_reply')
    sample('router closed')
    print(json.dumps(samples))


if __name__ == '__main__':
    main()
