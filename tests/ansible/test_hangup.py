"""plasmid.ansible.hangup: a broker thread waits for a context's answer and
notices when the worker that asked for it hangs up."""
from __future__ import annotations

import concurrent.futures
import socket
import threading

import pytest

from plasmid.ansible.hangup import HangupWatch, WorkerGone


def test_the_wait_ends_when_the_future_is_done():
    broker_end, worker_end = socket.socketpair()
    watch = HangupWatch(broker_end)
    try:
        for value in range(3):  # wake-ups left by one call do not confuse
            future = concurrent.futures.Future()
            threading.Timer(0.05, future.set_result, (value,)).start()
            watch.wait(future)
            assert future.result() == value
    finally:
        watch.close()
        broker_end.close()
        worker_end.close()


def test_a_worker_that_hangs_up_ends_the_wait():
    broker_end, worker_end = socket.socketpair()
    watch = HangupWatch(broker_end)
    future = concurrent.futures.Future()
    try:
        threading.Timer(0.05, worker_end.close).start()
        with pytest.raises(WorkerGone):
            watch.wait(future)
        assert not future.done()
    finally:
        watch.close()
        broker_end.close()
    # The abandoned call finishing after the watch closed writes nowhere.
    future.set_result('late')


class _Interrupted(Exception):
    """Stands in for ansible-core's TaskTimeoutError."""


def test_a_client_interrupted_mid_call_hangs_up():
    """Its connection would otherwise read the interrupted call's answer as
    the next call's; hanging up also tells the broker nobody waits."""
    import signal
    from plasmid.ansible.client import Client
    broker_end, worker_end = socket.socketpair()
    client = Client(pid=1)
    client.sock = worker_end

    def interrupt(signum, frame):
        raise _Interrupted()
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(_Interrupted):
            client.call('ping')  # the broker end never answers
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert client.sock is None
    assert broker_end.recv(65536)  # the request got there ...
    assert broker_end.recv(1) == b''  # ... and then the worker hung up
    broker_end.close()
