"""Run one ansible-playbook and account for everything it leaves behind.

    python3 reap.py RESULT_FILE LOG_FILE TIMEOUT -- ansible-playbook ARGS...

Becomes a child subreaper (prctl), so every process the playbook run
starts -- workers, ssh clients, the ControlPersist masters vanilla ssh
daemonizes, Mitogen's mux process, plasmid's broker -- is reparented to
this process when its parent exits, and is reaped here.  The CPU time of a
reaped process (and of what it reaped) is added to this process's
RUSAGE_CHILDREN, which is therefore the controller CPU of the whole run.

Wall time is from starting ansible-playbook until it exits.  Then the
ControlPersist masters (``ssh: ... [mux]``) still waiting out their 60 s
are sent SIGTERM, and everything else is waited for (plasmid's broker and
Mitogen's helpers stop by themselves once ansible-playbook is gone); what is
still running after LINGER seconds gets SIGTERM, then SIGKILL.

A run still going after TIMEOUT seconds has its process group killed
(rc "timeout").  Writes a JSON object to RESULT_FILE: rc, wall, user, sys
(seconds), teardown (seconds from ansible's exit until the last process
was reaped) and leftovers (commands that had to be killed after LINGER).
"""
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
LINGER = 15.0


def children():
    """pid -> command line of this process's children."""
    me = os.getpid()
    found = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
            if int(fields[1]) != me or fields[0] == 'Z':
                continue
            with open('/proc/%s/cmdline' % name, 'rb') as handle:
                found[int(name)] = handle.read().replace(b'\0', b' ').strip()
        except (OSError, IndexError, ValueError):
            continue
    return found


def reap_nowait():
    """Reap what has exited; False once no child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def signal_all(pids, signum):
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def main():
    result_path, log_path = sys.argv[1], sys.argv[2]
    timeout = float(sys.argv[3])
    argv = sys.argv[sys.argv.index('--') + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_CHILD_SUBREAPER)')
    with open(log_path, 'wb') as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = 'timeout'

        wall = time.perf_counter() - start
    # ControlPersist masters would wait 60 s for another session.
    masters = [pid for pid, cmd in children().items()
               if cmd.startswith(b'ssh: ') and cmd.endswith(b'[mux]')]
    signal_all(masters, signal.SIGTERM)
    ended = time.perf_counter()
    leftovers = []
    while reap_nowait():
        waited = time.perf_counter() - ended
        if waited > LINGER:
            stuck = children()
            leftovers += [c.decode(errors='replace') for c in stuck.values()
                          if c.decode(errors='replace') not in leftovers]
            signal_all(stuck, signal.SIGTERM if waited < LINGER + 3
                       else signal.SIGKILL)
        time.sleep(0.01)
    teardown = time.perf_counter() - ended
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(result_path, 'w') as handle:
        json.dump({'rc': rc, 'wall': wall, 'user': usage.ru_utime,
                   'sys': usage.ru_stime, 'teardown': teardown,
                   'masters': len(masters), 'leftovers': leftovers}, handle)


if __name__ == '__main__':
    main()
