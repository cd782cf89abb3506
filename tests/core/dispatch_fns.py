"""Run in contexts by test_dispatch.py (any Python, 2.7 too)."""
import os
import time

from plasmid.core import dispatch

LOG = []


def reply_then_wait_for(path):
    """Answer at once; then, before the next call, wait for *path*."""
    def wait():
        deadline = time.time() + 10
        while not os.path.exists(path) and time.time() < deadline:
            time.sleep(0.01)
        LOG.append(os.path.exists(path) and 'saw the flag' or 'timed out')
    return dispatch.after_reply(wait)


def reply_then_fail():
    def fail():
        LOG.append('failing')
        raise RuntimeError('after-work failed')
    return dispatch.after_reply(fail)


def log():
    return list(LOG)


def fail_in_words(words):
    """Raise with a message of *words* (text: unicode on Python 2)."""
    raise RuntimeError(words)


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError('this exception cannot be shown')


def fail_unprintably(interrupting=None):
    """Raise an exception whose __str__ raises RuntimeError, or the
    builtin named *interrupting* (KeyboardInterrupt, SystemExit)."""
    if interrupting is None:
        raise Unprintable('x')
    raised = {'KeyboardInterrupt': KeyboardInterrupt,
              'SystemExit': SystemExit}[interrupting]

    class Interrupting(Exception):
        def __str__(self):
            raise raised()
    raise Interrupting('x')


def fail_at_length(characters):
    """Raise a ValueError whose message has *characters* characters."""
    raise ValueError('x' * characters)


def fail_named_at_length(characters):
    """Raise an exception whose type's name has *characters* characters."""
    raise type('E' * characters, (Exception,), {})('short')


def limit_memory(mib):
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (mib << 20, mib << 20))


def big_result(mib):
    """A result that fits, where its encoding (a copy) does not."""
    return b'x' * (mib << 20)


class Alarm(Exception):
    pass


def _raise_alarm(*args):
    raise Alarm('the alarm went off')


def set_an_alarm(seconds):
    """A program's SIGALRM timeout, left armed when the call returns: its
    handler then raises between calls, in the context's loop."""
    import signal
    signal.signal(signal.SIGALRM, _raise_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return os.getpid()


def sleep(seconds):
    time.sleep(seconds)
    return seconds
