"""An interpreter whose stdin is held back until it has answered.

ssh forwards a remote command's stdin only once that command runs, about a
round trip after it sent the command.  ``python_holding_stdin(python)``
is that delay taken to its end: an argv (a ``python_path``) that runs
*python* behind pipes of its own and passes its stdin on only once the
interpreter has said something beyond plasmid's ready marker (the core's
HELLO).  A context whose boot waits for anything on stdin never starts
behind it; one that carries its boot on the command line starts as usual.
"""
from __future__ import annotations

HOLDING_STDIN = r'''
import os, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
answered = threading.Event()
def feed():
    answered.wait()
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        child.stdin.write(data)
threading.Thread(target=feed, daemon=True).start()
marker, seen = b'PLASMID-READY\n', b''
while True:
    data = os.read(child.stdout.fileno(), 65536)
    if not data:
        break
    if not answered.is_set():
        seen += data
        at = seen.find(marker)
        if at >= 0 and len(seen) > at + len(marker):
            answered.set()
    os.write(1, data)
'''


def python_holding_stdin(python: str, wrapper_python: str = '') -> list[str]:
    """A python_path running *python* with its stdin held until it has
    answered; the wrapper itself runs on *wrapper_python* (default:
    *python*)."""
    return [wrapper_python or python, '-c', HOLDING_STDIN, python]
