"""wait_for: the blocking waits outside the loop, on real pipes and
sockets."""
from __future__ import annotations

import os
import resource
import socket
from typing import Iterator

import pytest

from plasmid.core.waiting import wait_for


@pytest.fixture
def high_pipe() -> Iterator[tuple[int, int]]:
    """A pipe whose two ends are numbered above 1023, where select() gives
    up, as a master with hundreds of contexts has them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1600:
        pytest.skip('the hard limit on open files (%d) is too low' % hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1600), hard))
    r, w = os.pipe()
    high = (1500, 1501)
    for fd, to in zip((r, w), high):
        os.dup2(fd, to)
        os.close(fd)
    yield high
    for fd in high:
        try:
            os.close(fd)
        except OSError:
            pass
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_wait_for_takes_descriptors_above_1023(
        high_pipe: tuple[int, int]) -> None:
    r, w = high_pipe
    assert wait_for([r], [], 0.05) == ([], [])  # nothing to read yet
    assert wait_for([r], [w], 5) == ([], [w])   # room to write
    os.write(w, b'x')
    assert wait_for([r], [], 5) == ([r], [])
    assert os.read(r, 1) == b'x'
    os.close(w)
    assert wait_for([r], [], 5) == ([r], [])    # the end: read gives b''
    assert os.read(r, 1) == b''


def test_wait_for_hands_back_what_it_was_given(pipe: tuple[int, int]) -> None:
    r, w = pipe
    left, right = socket.socketpair()
    try:
        right.sendall(b'x')
        ready_r, ready_w = wait_for([left, r], [w, right], 5)
        assert ready_r == [left]
        assert ready_r[0] is left
        assert len(ready_w) == 2 and w in ready_w and right in ready_w
        os.close(r)
        # A pipe whose reader has gone is "ready": writing fails at once.
        assert wait_for([], [w], 5) == ([], [w])
        with pytest.raises(BrokenPipeError):
            os.write(w, b'x')
    finally:
        left.close()
        right.close()
