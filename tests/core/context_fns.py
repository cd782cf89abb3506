"""Run in contexts by test_context.py (any Python, 2.7 too)."""
import time

CALLED = []


def sleep(seconds):
    time.sleep(seconds)
    return seconds


def failing_callback(future):
    CALLED.append('failing')
    raise ValueError('a callback of the program failed')


def noting_callback(future):
    CALLED.append('noted')


def leave_a_failing_callback(child):
    """In an intermediary: a call to *child* left pending, whose done
    callback raises when the child is lost."""
    child.call_async(sleep, 60).add_done_callback(failing_callback)
    return 'left'


def called():
    return list(CALLED)
