"""A master interrupted (SIGINT to itself) while its start of a local
context waits for a program that is slow to run Python; prints one JSON
line: whether the program lived on after the interrupt long enough to
touch a file half a second later (the start waited a second for it to end
of itself before it killed it).

Usage: interrupted_slow_start.py FOLDER
"""
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.dirname(HERE)))]

import plasmid  # noqa: E402


def interrupt_once_started(started):
    while not os.path.exists(started):
        time.sleep(0.005)
    os.kill(os.getpid(), signal.SIGINT)


def main(folder):
    started = os.path.join(folder, 'started')
    late = os.path.join(folder, 'late')
    slow = ['/bin/sh', '-c', 'touch "$0"; sleep 0.5; touch "$1"; sleep 30',
            started, late]
    threading.Thread(target=interrupt_once_started, args=(started,)).start()
    interrupted = False
    with plasmid.Router() as router:
        try:
            router.local(python_path=slow, connect_timeout=60)
        except KeyboardInterrupt:
            interrupted = True
    time.sleep(1.0)  # as long as the program would have lived
    print(json.dumps({'interrupted': interrupted,
                      'lived on': os.path.exists(late)}))


if __name__ == '__main__':
    main(sys.argv[1])
