"""Run in contexts by test_forks.py (any Python, 2.7 too)."""
import os
import sys

from plasmid.ansible import forks

STATE = []  # what the context holds; children see it as at their fork


def _echo(payload):
    STATE.append(payload)
    sys.stdout.write(u'%s %d %d' % (payload, os.getpid(), len(STATE)))
    sys.stdout.flush()
    sys.exit(7)


FORKER = forks.Forker(_echo)


def run(payload):
    status, out, err, _ = FORKER.run(payload)
    words = out.decode('ascii').split()
    return status, words[0], int(words[1]), int(words[2]), len(err)


class Token(object):
    """A payload marshal cannot carry to a spare."""

    def __str__(self):
        return 'token'


def run_token():
    return run(Token())


def change_state():
    STATE.append('changed')
    FORKER.invalidate()


def counts():
    return dict(FORKER.counts)
