"""Functions the runtime tests call inside contexts.

Contexts import this module from the master (it is not on their path), so
it must stay valid Python 2.7: no f-strings, no annotations.
"""
from __future__ import print_function

import logging
import os
import select
import sys
import threading
import time

# Calls run one at a time on the context's main thread, so a module-level
# list shows the order in which they ran.
RECORDED = []

LOG = logging.getLogger('local_fns')


def getpid():
    return os.getpid()


def getppid():
    return os.getppid()


def version_info():
    return list(sys.version_info[:3])


def loaded_by():
    """How this module got here: (loader class name, __file__)."""
    loader = globals().get('__loader__')
    return type(loader).__name__, __file__


def echo(value):
    return value


def add(a, b):
    return a + b


def keywords(**kwargs):
    return kwargs


def record(value):
    RECORDED.append(value)


def recorded():
    return list(RECORDED)


def fail(message):
    raise ValueError(message)


def fail_to_connect(message):
    import plasmid
    raise plasmid.ConnectError(message)


def nested(levels):
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def return_object():
    return object()


class AttrDict(dict):
    """A common hand-rolled pattern: every missing attribute a KeyError."""
    __getattr__ = dict.__getitem__


class BrokenList(list):
    def __iter__(self):
        raise RuntimeError('no items today')


def return_attr_dict():
    return AttrDict(a=1)


def return_broken_list():
    return BrokenList([1])


def busy_loop():
    while True:
        pass


def busy_in_c():
    """Hours in C code that never lets another thread run."""
    return sum(range(10 ** 13))


def sleep_then(seconds, value):
    time.sleep(seconds)
    return value


def wait_for_file(path, value, timeout=60.0):
    """Block until *path* exists: a remote call the test finishes at will."""
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise RuntimeError('%s never appeared' % path)
        time.sleep(0.005)
    return value


class Tools(object):
    @staticmethod
    def multiply(a, b):
        return a * b

    @classmethod
    def describe(cls, suffix):
        return cls.__name__ + suffix

    def instance_method(self):
        return 'never called remotely'


class ReprFails(Tools):
    """An object whose repr raises."""

    def __repr__(self):
        raise RuntimeError('repr raised')


class ReprShowsSecrets(Tools):
    """An object whose repr is long and holds what must not be logged."""

    def __repr__(self):
        return 'secret-token ' * 100000


# ------------------------------------------------------------ output

def chatter(count, tag):
    """Interleave log records and print() lines; return *count*."""
    log = logging.getLogger('local_fns.chatter')
    for i in range(count):
        log.warning('%s record %d', tag, i)
        print('%s line %d' % (tag, i))
    return count


def log_levels(tag):
    log = logging.getLogger('local_fns.levels')
    log.debug('%s debug', tag)
    log.info('%s info', tag)
    log.warning('%s warning', tag)
    log.error('%s error', tag)
    return tag


def print_to_stderr(text):
    print(text, file=sys.stderr)
    return text


def log_exception(tag):
    try:
        raise KeyError(tag)
    except KeyError:
        logging.getLogger('local_fns.exc').exception('%s caught', tag)
    return tag


def system_echo(text, to_stderr=False):
    """Output from a subprocess, straight to the inherited fd 1 or 2."""
    return os.system('echo %s%s' % (text, to_stderr and ' >&2' or ''))


def print_lines(count, tag):
    for i in range(count):
        print('%s %d' % (tag, i))


def system_lines(count, tag):
    """*count* lines written by a shell loop, not by Python."""
    return os.system('i=0; while [ $i -lt %d ]; do echo "%s $i"; '
                     'i=$((i+1)); done' % (count, tag))


def log_then_sleep(count, seconds):
    """Log *count* records, then keep the call running a while."""
    for i in range(count):
        LOG.warning('before sleep %d', i)
    time.sleep(seconds)
    return count


def call_getpid_of(context):
    """Call another context from this one (it may not be reachable)."""
    return context.call(getpid)


def wait_with_the_wall_clock_frozen(context, seconds, timeout):
    """In this context, with ``time.time`` standing still (a clock set
    back stands still for as long as the step), wait *timeout* seconds for
    a call to *context* that sleeps *seconds*: what came of the wait."""
    from plasmid.core.errors import TimeoutError
    real = time.time
    frozen = real()
    time.time = lambda: frozen
    try:
        future = context.call_async(sleep_then, seconds, 'answered')
        return future.result(timeout=timeout)
    except TimeoutError:
        return 'timed out'
    finally:
        time.time = real


def as_completed_in_pieces(context, piece, timeout):
    """In this context, with waits cut into pieces of *piece* seconds (a
    day, in use), wait *timeout* seconds on as_completed for a call to
    *context* that takes three pieces."""
    import plasmid
    from plasmid.core import loop
    loop.LONGEST_WAIT = piece
    try:
        future = context.call_async(sleep_then, 3 * piece, 'answered')
        return next(plasmid.as_completed([future], timeout=timeout)).result()
    except Exception as exc:
        return '%s: %s' % (type(exc).__name__, exc)
    finally:
        loop.LONGEST_WAIT = 86400


def wait_in_context(context, timeout):
    """In this context, wait for a call to *context* with *timeout*, then
    for the same through as_completed: what came of each."""
    import plasmid
    outcomes = []
    for wait in (lambda future: future.result(timeout=timeout),
                 lambda future: next(plasmid.as_completed(
                     [future], timeout=timeout)).result()):
        try:
            outcomes.append(wait(context.call_async(getpid)))
        except Exception as exc:
            outcomes.append('%s: %s' % (type(exc).__name__, exc))
    return outcomes


def shut_down_the_master(timeout):
    """Ask the master to shut down, from a context: no context may."""
    from plasmid.core import child
    return shut_down(child.current.context_for(0, 'master'), timeout)


def shut_down(context, timeout):
    """Shut another context down from this one (it may not be reachable)."""
    context.shutdown(timeout=timeout)
    return context.is_alive()


def fork_sleeper(seconds):
    """Fork a child that sleeps *seconds* and exits; return its pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork
        time.sleep(seconds)
        os._exit(0)
    return pid


def exit_now(status):
    os._exit(status)


def routes_known():
    """The ids of the contexts this one routes to (its descendants)."""
    from plasmid.core import child
    return sorted(child.current.router.routes)


def links_to_children():
    """How many links to children this context keeps."""
    from plasmid.core import child
    return len(child.current.children)


def fork_and_return(pause, fail):
    """Sleep *pause* seconds (long enough, the standby thread has taken
    the loop), fork, and in both processes return the fork's pid (0 in
    the fork), or raise if *fail*: a mistake, as the fork should
    os._exit(), but one that must not leave the fork behind."""
    time.sleep(pause)
    pid = os.fork()
    if fail and pid == 0:
        raise ValueError('the fork failed')
    return pid


def exit_status(pid, timeout):
    """Reap child *pid* within *timeout* seconds: its exit status, or None
    if it is still running."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def write_a_record_then(data):
    """Write a log record's frame and *data* on this context's link to its
    parent, in one write (so one read at the other end)."""
    from plasmid.core import child
    from plasmid.core.framing import Message
    from plasmid.core.router import LOG_RECORD
    here = child.current
    record = Message.encoding(0, here.config['context_id'], LOG_RECORD,
                              ('stdout', logging.INFO, 'before the noise'))
    os.write(here.router.parent.wfd, record.to_bytes() + data)


def write_on_the_link(data):
    """Write *data* straight onto this context's link to its parent, as a
    job a start-up file left behind would onto ssh's stdout."""
    from plasmid.core import child
    os.write(child.current.router.parent.wfd, data)


def hold_both_link_ends(seconds):
    """Start a process that holds both ends of this context's link to its
    parent (as a fork on Python 2.7 or 3.6 would, which has no hook to let
    go of them): writes to the context still succeed after it is gone."""
    import subprocess
    from plasmid.core import child
    parent = child.current.router.parent
    return subprocess.Popen(['sleep', str(seconds)], stdin=parent.rfd,
                            stdout=parent.wfd, close_fds=True).pid


def hold_link_open(seconds):
    """Start a process that holds this context's end of its link to the
    parent open (as a daemon a call started might): its pid."""
    import subprocess
    from plasmid.core import child
    with open(os.devnull) as null:
        return subprocess.Popen(
            ['sleep', str(seconds)], stdin=null, stderr=null,
            stdout=child.current.router.parent.wfd, close_fds=True).pid


def forge_reply(dst, handle, value):
    """Send a reply to handle *handle* of context *dst* in this context's
    own name, as a hostile sibling of the context it awaits would."""
    from plasmid.core import child
    from plasmid.core.framing import Message
    router = child.current.router
    router.send(Message.encoding(dst, router.context_id, handle,
                                 (True, value)))


def forge_del_route(dst, victims):
    """Tell context *dst* that the contexts *victims* are gone."""
    from plasmid.core import child
    from plasmid.core.router import DEL_ROUTE
    child.current.router.send_value(dst, DEL_ROUTE,
                                    (list(victims), 'forged'))


def fork_and_try(what, other, pause):
    """Sleep *pause* seconds (the standby thread owns the loop by then),
    fork, and in the fork try what needs the context's link: 'call' the
    context *other*, 'import' a module only the master has, or 'print'.
    Return what the fork wrote down (see _in_a_fork)."""
    time.sleep(pause)
    return _in_a_fork(lambda: _try_in_fork(what, other))


def _try_in_fork(what, other):
    if what == 'call':
        return 'answered %r' % (other.call(os.getpid),)
    if what == 'import':
        import fetched_late
        return fetched_late.VALUE
    print('printed by fork %d' % os.getpid())
    sys.stdout.flush()
    return 'printed'


def fork_while_locked(what, other):
    """Fork while another thread holds the locks a call and an import take
    here (as a thread in the middle of a send would), and in the fork try
    *what* as fork_and_try does."""
    from plasmid.core import child
    here = child.current
    locks = [here.parent.lock, here.router.lock, here.importer.lock]
    held, done = threading.Event(), threading.Event()

    def hold():
        for lock in locks:
            lock.acquire()
        held.set()
        done.wait()
        for lock in locks:
            lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    try:
        return _in_a_fork(lambda: _try_in_fork(what, other))
    finally:
        done.set()
        holder.join()


def _in_a_fork(work):
    """Run *work* in a fork; what it returned or raised, as the fork wrote
    it down ('' if it ended saying nothing, None if it said nothing within
    10 s: then it is killed)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the fork
        os.close(r)
        try:
            outcome = work()
        except BaseException as exc:
            outcome = '%s: %s' % (type(exc).__name__, exc)
        os.write(w, outcome.encode())
        os._exit(0)
    os.close(w)
    try:
        if not select.select([r], [], [], 10)[0]:
            os.kill(pid, 9)
            return None
        return os.read(r, 4096).decode()
    finally:
        os.close(r)
        os.waitpid(pid, 0)


def import_value(name):
    return __import__(name).VALUE


def say_hello_again(version):
    """Send this context's parent a HELLO claiming Python *version*."""
    from plasmid.core import child
    from plasmid.core.router import HELLO
    context = child.current
    context.router.send_value(context.config['parent_id'], HELLO, {
        'pid': os.getpid(), 'version': version,
        'executable': '/usr/bin/python2.7'})
