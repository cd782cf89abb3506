"""Run in contexts by test_forks.py (any Python, 2.7 too)."""
import logging
import os
import signal
import sys
import time

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


def _leave_work_running(payload):
    """A module that exits with a thread, and a concurrent.futures job,
    still at work: each says so on stdout when done."""
    import threading
    import time

    def late(name):
        time.sleep(0.3)
        sys.stdout.write(name + ' ')
        sys.stdout.flush()
    threading.Thread(target=late, args=('thread',)).start()
    if sys.version_info[0] >= 3:
        import concurrent.futures
        pool = concurrent.futures.ThreadPoolExecutor(1)
        pool.submit(late, 'executor')
    sys.exit(0)


LEAVER = forks.Forker(_leave_work_running)


def run_leaving_work():
    status, out, _, _ = LEAVER.run('go')
    return status, sorted(out.decode('ascii').split())


def _crash(payload):
    raise ValueError('the module crashed')


CRASHER = forks.Forker(_crash)


def run_crashing():
    """The exit status and stderr of a module process whose work raised."""
    status, _, err, _ = CRASHER.run('x')
    return status, err.decode('utf-8')


def change_state():
    STATE.append('changed')
    FORKER.invalidate()


def counts():
    return dict(FORKER.counts)


def _stay_echo(payload):
    """Work a child may stay after: what it saw, then whatever *payload*
    names to change in it."""
    sys.stdout.write(u'%s %d %s %s' % (payload, os.getpid(),
                                        os.environ.get('PLASMID_TEST_SET'),
                                        os.getcwd()))
    sys.stdout.flush()
    if payload == 'big':
        sys.stdout.write(u'x' * (3 << 20))
    elif payload == 'env':
        os.environ['PLASMID_TEST_SET'] = 'yes'
    elif payload == 'chdir':
        os.chdir('/')
    elif payload == 'signal':
        import signal
        signal.signal(signal.SIGUSR1, lambda *_: None)
    elif payload == 'regex':  # a pure cache grows: re's compiled patterns
        import re
        re.compile('plasmid-%d' % os.getpid())
    elif payload == 'usr1':
        import signal
        os.kill(os.getpid(), signal.SIGUSR1)
    elif payload == 'thread':
        import threading
        import time
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    elif payload == 'nondaemon':  # as a module's exit waits for it
        import threading
        import time

        def late():
            time.sleep(0.3)
            sys.stdout.write(u' late')
            sys.stdout.flush()
        threading.Thread(target=late).start()
    elif payload == 'trace':
        sys.settrace(lambda *_: None)
    elif payload == 'die':
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
    elif payload == 'slowcheck':
        _slow_down_the_check(1.0)
    elif payload == 'stuckcheck':
        _slow_down_the_check(3600.0)
    sys.exit(3)


def checked_marker(pid):
    """The file a child whose check was slowed down makes after it."""
    return '/tmp/plasmid-test-checked-%d' % pid


def _slow_down_the_check(seconds):
    """In this child only: its next check of its state takes *seconds*
    more, then makes a file saying it is done."""
    import time
    from plasmid.ansible import baseline
    real = baseline.Baseline.restore

    def slow(state):
        baseline.Baseline.restore = real
        time.sleep(seconds)
        stays = real(state)
        open(checked_marker(os.getpid()), 'w').close()
        return stays
    baseline.Baseline.restore = slow


STAYING = forks.Forker(_stay_echo, lambda payload: None if payload == 'alone'
                       else 'echo')  # every other payload is of one kind


def run_staying(payload):
    """(status, payload, pid, PLASMID_TEST_SET, cwd, output size)."""
    status, out, err, _ = STAYING.run(payload)
    words = out.decode('ascii')[:200].split()
    if not words:
        return status, None, None, None, None, 0
    return (status, words[0], int(words[1]), words[2], words[3][:len(
        os.getcwd())], len(out))


def staying_output(payload):
    """The words a run of *payload* wrote, after its status."""
    status, out, _, _ = STAYING.run(payload)
    return status, out.decode('ascii').split()


def set_verdict_wait(seconds):
    forks.VERDICT_WAIT = seconds


def staying_counts():
    return dict(STAYING.counts)


def staying_invalidate():
    STAYING.invalidate()


def staying_warmed():
    STAYING.warmed()


def _sleep(seconds):
    import time
    time.sleep(seconds)


SLEEPER = forks.Forker(_sleep)


def run_sleeping(seconds):
    """Work that lasts *seconds* in a module process: its exit status."""
    return SLEEPER.run(seconds)[0]


def _log_then_say(payload):
    """A module that logs: its first getLogger takes logging's lock."""
    import logging
    logging.getLogger('a.module').warning('logged')
    sys.stdout.write('logged')
    sys.exit(0)


LOGGING = forks.Forker(_log_then_say)


def run_while_logging_is_locked():
    """Run a module that logs while another thread of the context holds
    logging's lock for a second (as one in logging.getLogger would):
    its status (-9: killed after 10 s, stuck) and output."""
    import logging
    import threading
    held = threading.Event()

    def hold():
        with logging._lock:
            held.set()
            time.sleep(1.0)  # 3.7+ forks wait for it (logging's fork hook)

    def kill_children_after(seconds):
        # A child stuck on a copy of a lock held as it forked waits for
        # ever: killed, it reports the signal.
        if done.wait(seconds):
            return
        here = os.getpid()
        for task in os.listdir('/proc/%d/task' % here):
            with open('/proc/%d/task/%s/children' % (here, task)) as f:
                for pid in f.read().split():
                    os.kill(int(pid), signal.SIGKILL)

    done = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    killer = threading.Thread(target=kill_children_after, args=(10.0,))
    killer.start()
    try:
        status, out, _, _ = LOGGING.run('go')
    finally:
        done.set()
        holder.join()
        killer.join()
    return status, out.decode('ascii')


class _SlowToLock(logging.Handler):
    """A handler of the context's whose lock takes a while to make again
    in a module process (_let_go_of_links makes every handler's anew, on
    Python 2.7 and 3.6): the first process writes its pid to *marker*,
    then waits there (5 s at most, a signal may cut it short); the later
    ones (the spare forked after it) go on at once."""

    def __init__(self, marker):
        self.marker = marker
        self.context_pid = os.getpid()
        logging.Handler.__init__(self)

    def createLock(self):
        logging.Handler.createLock(self)
        if os.getpid() != self.context_pid and \
                not os.path.exists(self.marker):
            with open(self.marker + '.tmp', 'w') as f:
                f.write(str(os.getpid()))
            os.rename(self.marker + '.tmp', self.marker)
            time.sleep(5.0)

    def emit(self, record):
        pass


SLOW_TO_LOCK = []  # logging keeps only a weak reference


def hold_module_processes_as_they_let_go(marker):
    """From now on a module process waits as it lets go of the links
    (see _SlowToLock); the context's own SIGTERM handler, wherever it
    runs, writes that process's pid to *marker* + '.ran'; SIGINT raises
    KeyboardInterrupt, as in a fresh Python."""
    SLOW_TO_LOCK.append(_SlowToLock(marker))

    def on_term(signum, frame):
        with open(marker + '.ran', 'w') as f:
            f.write(str(os.getpid()))
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _say_hello(payload):
    sys.stdout.write('hello')
    sys.exit(0)


HELLO = forks.Forker(_say_hello)


def run_hello():
    """A module process's exit status, stdout and stderr."""
    status, out, err, _ = HELLO.run('x')
    return status, out.decode('ascii'), err.decode('utf-8', 'replace')
