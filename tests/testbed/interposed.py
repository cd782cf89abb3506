"""An interpreter started behind a Python of ours that delays its stages.

``interposed(python, ...)`` is a ``python_path``: a wrapper that runs
*python* behind pipes of its own and can hold back

- its start, *start* seconds (ssh or sudo slow to reach it);
- what it says after plasmid's ready marker (the core's HELLO), *answer*
  seconds (a slow boot); or, given a path, until that file exists; or,
  given 'exit', for ever: it writes "the boot broke" on stderr, kills the
  interpreter and exits 1 (a boot that fails once the Python is up);
- its stdin until it has answered, with *stdin_held*: ssh forwards a remote
  command's stdin only once that command runs, about a round trip after it
  sent the command, and this is that delay taken to its end.  A boot that
  waits for anything on stdin never finishes behind it.

A hold of -1 lasts for ever (an hour).
"""
from __future__ import annotations

INTERPOSED = r'''
import os, subprocess, sys, threading, time
def hold(what):
    try:
        seconds = float(what)
    except ValueError:
        while not os.path.exists(what):
            time.sleep(0.01)
        return
    time.sleep(3600 if seconds < 0 else seconds)
start, answer, stdin_held = sys.argv[1], sys.argv[2], sys.argv[3] == '1'
hold(start)
child = subprocess.Popen(sys.argv[4:], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
answered = threading.Event()
if not stdin_held:
    answered.set()
def feed():
    answered.wait()
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        child.stdin.write(data)
threading.Thread(target=feed, daemon=True).start()
marker, seen, ready = b'PLASMID-READY', b'', False
while True:
    data = os.read(child.stdout.fileno(), 65536)
    if not data:
        break
    if not ready:
        seen += data
        at = seen.find(marker)
        end = seen.find(b'\n', at) if at >= 0 else -1
        if end >= 0:  # the marker's line, with the Python's version
            ready = True
            cut = end + 1 - (len(seen) - len(data))
            os.write(1, data[:cut])
            if answer == 'exit':
                child.kill()
                sys.stderr.write('the boot broke\n')
                sys.exit(1)
            hold(answer)
            data = data[cut:]
    if ready and data:
        answered.set()
    os.write(1, data)
'''


def interposed(python: str, start: float = 0, answer: float | str = 0,
               stdin_held: bool = False, wrapper: str = '') -> list[str]:
    """A python_path running *python* behind the wrapper, which itself
    runs on *wrapper* (default: *python*)."""
    return [wrapper or python, '-c', INTERPOSED, str(start), str(answer),
            stdin_held and '1' or '0', python]
