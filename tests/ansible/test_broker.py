"""The broker's own parts, without ansible-core."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from plasmid.ansible import broker


def test_an_unreaped_process_counts_as_gone():
    """ansible-playbook's parent may wait for the broker before it reaps
    ansible-playbook (a profiler following children does): a zombie must
    not keep the broker alive."""
    child = subprocess.Popen([sys.executable, '-c', 'pass'])
    deadline = time.monotonic() + 30
    while broker.process_alive(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    # Not reaped yet: still in the process table, as a zombie.
    os.kill(child.pid, 0)
    assert not broker.process_alive(child.pid)
    child.wait()
    assert not broker.process_alive(child.pid)


def test_watch_fires_once_the_process_ended():
    child = subprocess.Popen([sys.executable, '-c',
                              'import sys; sys.stdin.read()'],
                             stdin=subprocess.PIPE)
    fired = threading.Event()
    broker.watch(child.pid, fired.set)
    assert broker.process_alive(child.pid)
    assert not fired.wait(0.5)
    child.stdin.close()
    assert fired.wait(30)
    child.wait()
