"""End a context whose parent is gone even when its Python cannot run.

A context ends itself when the link to its parent closes: its I/O loop
reads EOF and exits at once (``child._on_parent_lost``).  That needs the
GIL, which C code in a call may hold for ever (``sum(range(10**15))``, a
catastrophic regular expression): such a context outlived its master's
exit, even a SIGKILL of the master, spinning a core on a machine nobody
watched any more.

So the first stage of every context (``spawn.FIRST_STAGE*``) starts a
watchdog before the core runs: a separate process that holds nothing but
two fds and waits in ``poll()``:

- fd 0, the context's link to its parent: POLLHUP there means every writer
  (sshd, sudo, the parent context) is gone;
- the read end of a *lifeline* pipe whose write end only the context (and
  processes it forks) holds: POLLHUP there means the context has exited,
  and the watchdog leaves too.

When the link is lost and the context is still there *grace* seconds
later, the watchdog kills it: SIGKILL, as SIGTERM could meet a Python
handler that the stuck thread would never let run.  Before that it checks
that the pid is still the context (its start time in /proc, where there is
one): a forked copy that kept the lifeline must not turn a reused pid into
a victim.

It is a double fork, so that the context's own ``os.wait()`` never finds
it, and it leaves the context's session, so that signals meant for the
context's process group miss it.  The code is text, not a module: it runs
in the first stage, before the core (and the import machinery) exists, on
any Python from 2.7 on, and adds about 470 bytes to each context's command
line (compressed, in base64).  Its forks happen before any thread starts.
"""
# Seconds a context whose link closed may take to exit by itself; the
# master may change it before starting contexts (spawn passes it on).
GRACE = 5.0

# Defines watch(grace) in the first stage, which calls it.  SIGCHLD ignored
# where the context was started (a daemon's habit, kept across exec) is
# set back first: the wait for the middle process would fail (ECHILD), and
# the context's own subprocesses would all seem to exit with status 0.
# Every byte here is on each context's command line (compressed): hence
# one-space indents and short lines.  fcntl's 2, 1: F_SETFD, FD_CLOEXEC
# (Python 2.7's pipes are inheritable; an exec'd program must not keep the
# watchdog up).
CODE = '''def watch(grace):
 import fcntl,select,signal
 signal.signal(signal.SIGCHLD,signal.SIG_DFL)
 life,keep=os.pipe()
 for fd in life,keep:fcntl.fcntl(fd,2,1)
 pid=os.getpid()
 def born():
  try:
   with open('/proc/'+str(pid)+'/stat','rb') as f:return f.read().rsplit(b')',1)[1].split()[19]
  except Exception:return
 birth=born()
 middle=os.fork()
 if not middle:
  try:
   if not os.fork():
    os.setsid()
    os.closerange(1,life)
    os.closerange(life+1,65536)
    poll=select.poll()
    poll.register(0,0)
    poll.register(life,0)
    hung=[]
    while not hung:
     try:hung=[fd for fd,_ in poll.poll()]
     except Exception:pass
    poll.unregister(0)
    if life not in hung and not poll.poll(int(grace*1000))and born()==birth:os.kill(pid,9)
  finally:os._exit(0)
 os.close(life)
 os.waitpid(middle,0)
'''
