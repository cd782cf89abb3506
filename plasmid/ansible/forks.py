"""Module processes: every task runs in a fork of its warm target context.

Shipped into target contexts, so stdlib-only (plus the runtime's
``after_reply``) and Python 2.7-compatible.

A fork is the isolation: nothing a module leaves behind (globals, signal
handlers, warnings filters, C-extension state) reaches the next task.  It
costs the context a few milliseconds (copying the page tables of a 20-30 MB
interpreter, then the child's first copy-on-write faults), so a
:class:`Forker` forks a *spare* child once a call's reply has gone out: the
spare sets itself up and waits on a pipe for its work.  A spare serves only
while the context is as it was when the spare forked: whatever changes what
a child would inherit (a new payload, more warm modules) calls
:meth:`Forker.invalidate`, and the next run kills the spare and forks a
fresh child instead.

A child leaves through ``os._exit``: it must never return into the
context's loop, nor flush buffers it shares with the context.  It reports
its exit status and the modules it imported on a pipe and closes its pipes
before it exits, so the answer need not wait for the kernel to tear its
memory down; it is reaped once the answer has gone out (it has exited by
then, or is about to), so that no exited module process lingers as a
zombie on the target while its context waits for the next task.

A spare may also *stay* for later tasks, where the caller's ``may_stay``
says a payload allows it (on Linux, Python 3.8+): its task's output goes
to in-memory files instead of the pipes, comes back with the status in
one frame; then the child puts its state back and, having found it as
it was (``baseline.py``), says so with one more byte and waits for the
next such task.  The answer does not wait for that check: the context
reads the verdict once its reply has gone out.  A fork and a child's
first writes cost several times what most modules do.  ``may_stay`` names
the *kind* of work (a module's name, say): a kind whose process has left
:data:`GIVE_UP_AFTER` times in a row runs in fresh forks from then on, as
a process that always leaves costs more than a fork (it takes its
baseline, then checks it, in vain).  A child that
stayed is *kept*: it serves only payloads that may stay (any other gets
the pristine spare), and a change that merely warms the context
(:meth:`Forker.warmed`) leaves it be, as it holds what changed already.
"""
from __future__ import absolute_import
import errno
import io
import logging
import marshal
import os
import signal
import struct
import sys
import threading

from plasmid.ansible import baseline, shell_spawn
from plasmid.core import child as context_process, dispatch
from plasmid.core.waiting import wait_for

LOG = logging.getLogger('plasmid.ansible.forks')
_LENGTH = struct.Struct('>I')
_FRAME = struct.Struct('>QQQ')  # a staying child's report: its three parts
_STAYS = b'+'  # after its frame, a staying child that may serve again says so
# How long a staying child's check (~0.5 ms) may take before the context
# gives up on it: a task's thread could leave it stuck on a lock.
VERDICT_WAIT = 10.0
# A kind of work whose process left this many times in a row, and never
# stayed since, stops trying (the first run of a kind often imports more,
# and leaves for that: the context learns those imports).
GIVE_UP_AFTER = 3


def can_stay():
    """Whether a module process may stay here: its output needs in-memory
    files (which an old kernel may refuse), its checks ``/proc``."""
    if not (hasattr(os, 'memfd_create') and os.path.isdir('/proc/self/fd')):
        return False
    try:
        os.close(os.memfd_create('plasmid-probe'))
    except OSError:
        return False
    return True


class Child(object):
    """A forked child: its pid and the read ends of its pipes."""

    def __init__(self, pid, out_r, err_r, names_r):
        self.pid = pid
        self.out_r = out_r
        self.err_r = err_r
        self.names_r = names_r
        self.job_w = None        # spares only: where their work is written
        self.generation = None   # spares only: the state they forked from
        self.warmth = None       # spares only: how warm the context was
        self.staying = False     # it stayed after a task, for more
        self.verdict_due = False  # it has yet to say whether it stays
        self.kind = None         # the kind of work it stays for (may_stay's)

    def fds(self):
        return [fd for fd in (self.out_r, self.err_r, self.names_r,
                              self.job_w) if fd is not None]


class Forker(object):
    """Runs ``entry(payload)`` in forked children, a spare one ready.
    ``may_stay(payload)``: the kind of work *payload* is if its process
    may stay for the next of its kind (hashable), else None."""

    def __init__(self, entry, may_stay=None):
        self.entry = entry
        self.may_stay = may_stay if can_stay() else None
        self.spare = None
        self.kept = None    # a child that stayed after its task
        self.generation = 0
        self.warmth = 0
        self.unreaped = []  # children that reported their status
        self.left_in_a_row = {}  # kind -> its processes' leaving streak
        self.counts = {'fresh': 0, 'spare': 0, 'discarded': 0, 'stayed': 0,
                       'given_up': 0}

    def run(self, payload, then=None):
        """``(status, stdout, stderr, names of modules imported)`` of
        ``entry(payload)`` run in a child; *payload* must marshal for a
        spare to take it (else a fresh child runs it).

        Once the reply to the call running this has been sent, ``then``
        (if given) is called with those names, and a new spare forks.
        """
        self._reap_reported()
        kind = self._staying_kind(payload)
        stay = kind is not None
        child = self._hand_to_spare(payload, stay)
        if child is None:
            child = self._fork(lambda names_w: self.entry(payload))
            self.counts['fresh'] += 1
        if stay and child.job_w is not None:
            child.kind = kind
            status, out, err, names = self._collect_frame(child)
        else:
            status, out, err, names = self._collect(child)
        self._after_reply(then and (lambda: then(names)))
        return status, out, err, names

    def invalidate(self):
        """What a child inherits has changed: spare and kept are stale."""
        self.generation += 1

    def warmed(self):
        """The context holds more modules: a spare forked before is not
        as warm as it could be; a kept child imported them itself."""
        self.warmth += 1

    def prepare_spare(self):
        """Fork the spare now, unless a fresh one waits already."""
        if self.spare is not None:
            if self._current(self.spare):
                return
            self._discard(self.spare)
        job_r, job_w = os.pipe()
        entry = self.entry
        try:
            child = self._fork(
                lambda names_w: _serve_jobs(job_r, names_w, entry),
                close_in_child=[job_w])
        finally:
            os.close(job_r)
        child.job_w = job_w
        child.generation = self.generation
        child.warmth = self.warmth
        self.spare = child

    # ---------------------------------------------------------- parent

    def _staying_kind(self, payload):
        kind = self.may_stay(payload) if self.may_stay is not None else None
        if kind is None or self.left_in_a_row.get(kind, 0) >= GIVE_UP_AFTER:
            return None
        return kind

    def _note_verdict(self, child, stayed):
        """Count the streak of *child*'s kind of work; give up on its
        staying at :data:`GIVE_UP_AFTER` leavings in a row."""
        if stayed:
            self.left_in_a_row[child.kind] = 0
            return
        streak = self.left_in_a_row.get(child.kind, 0) + 1
        self.left_in_a_row[child.kind] = streak
        if streak == GIVE_UP_AFTER:
            self.counts['given_up'] += 1
            LOG.info('module processes for %r left %d times in a row: it '
                     'runs in fresh forks from now on', child.kind, streak)

    def _current(self, child):
        if child.staying:
            return child.generation == self.generation
        return (child.generation, child.warmth) == (self.generation,
                                                   self.warmth)

    def _hand_to_spare(self, payload, stay):
        """Give *payload* to the kept child (if it may stay) or the spare;
        None if neither can take it."""
        if stay:
            self._settle_kept()
        for child in ([self.kept] if stay else []) + [self.spare]:
            if child is None:
                continue
            if not self._current(child):
                self._discard(child)
                continue
            if self._hand(child, payload, stay):
                return child
        return None

    def _hand(self, child, payload, stay):
        try:
            data = marshal.dumps((stay, payload))
        except ValueError:  # not plain data: a fresh child takes it
            return False
        try:
            _write_all(child.job_w, _LENGTH.pack(len(data)) + data)
        except OSError:  # the child died: a fresh one takes it
            self._discard(child)
            return False
        if child is self.spare:
            self.spare = None
            self.counts['spare'] += 1
        else:
            self.kept = None
            self.counts['stayed'] += 1
        if not stay:
            os.close(child.job_w)
            child.job_w = None
        return True

    def _after_reply(self, then):
        """Queue *then* and the next spare's fork behind the reply; outside
        a dispatched call (not in a context) run *then* alone, at once."""
        if not dispatch.after_reply(lambda: self._then_spare(then)):
            if then is not None:
                then()

    def _then_spare(self, then):
        if then is not None:
            then()
        self._settle_kept()
        if self.kept is not None and not self._current(self.kept):
            self._discard(self.kept)  # it could serve no task now
        try:
            self.prepare_spare()
        except OSError as exc:  # out of processes: fork on demand instead
            LOG.warning('could not fork a spare module process: %s', exc)
        self._reap_reported(block=True)

    def _discard(self, spare):
        if spare is self.spare:
            self.spare = None
        if spare is self.kept:
            self.kept = None
        try:
            os.kill(spare.pid, signal.SIGKILL)
        except OSError:
            pass
        for fd in spare.fds():
            os.close(fd)
        self.unreaped.append(spare.pid)
        self.counts['discarded'] += 1

    def _fork(self, main, close_in_child=()):
        """Fork a child that runs ``main(fd of its report pipe)`` with
        fresh fds 0/1/2."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        names_r, names_w = os.pipe()
        before = set(sys.modules)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            inherited = [fd for kept in (self.spare, self.kept) if kept
                         for fd in kept.fds()]
            for fd in [out_r, err_r, names_r] + list(close_in_child) + \
                    inherited:
                os.close(fd)
            _child(main, out_w, err_w, names_w, before)
        for fd in (out_w, err_w, names_w):
            os.close(fd)
        return Child(pid, out_r, err_r, names_r)

    def _collect(self, child):
        out, err, report = _read_all([child.out_r, child.err_r,
                                      child.names_r])
        words = report.decode('utf-8', 'replace').split()
        if words and words[0].startswith('status='):
            status = int(words.pop(0)[len('status='):])
            self.unreaped.append(child.pid)
        else:  # killed before it could say: wait for its status
            status = _wait(child.pid)
        return status, out, err, words

    def _collect_frame(self, child):
        """A staying child's report: status, output, modules imported;
        it is kept if it said it may stay."""
        for fd in (child.out_r, child.err_r):
            if fd is not None:  # the task's output comes in the frame
                os.close(fd)
        child.out_r = child.err_r = None
        frame = _read_frame(child.names_r)
        if frame is None:  # it died in the task: say how
            status, out, err, names, may_stay = _wait(child.pid), b'', \
                b'', [], False
        else:
            status, out, err, names, may_stay = frame
        if may_stay:  # its verdict follows (_settle_kept)
            child.staying = child.verdict_due = True
            self.kept = child
        else:
            self._note_verdict(child, False)
            self._let_go(child, reaped=frame is None)
        return status, out, err, names

    def _let_go(self, child, reaped=False):
        """A staying child that left: close its pipes, reap it later."""
        for fd in child.fds():
            os.close(fd)
        child.job_w = child.names_r = None
        if not reaped:
            self.unreaped.append(child.pid)

    def _settle_kept(self):
        """Read the kept child's verdict on its last task, if it has yet
        to be read: it stays, or it has left (its pipe's end) and is let
        go, or it is stuck in its check and killed.  It comes within the
        check's time after the answer."""
        child = self.kept
        if child is None or not child.verdict_due:
            return
        child.verdict_due = False
        if not wait_for([child.names_r], timeout=VERDICT_WAIT)[0]:
            LOG.warning('module process %d still checking its state after '
                        '%ss: killed', child.pid, VERDICT_WAIT)
            self._note_verdict(child, False)
            self._discard(child)
            return
        stays = _read_exactly(child.names_r, len(_STAYS)) == _STAYS
        self._note_verdict(child, stays)
        if not stays:
            self.kept = None
            self._let_go(child)

    def _reap_reported(self, block=False):
        """Reap the children that said their status (or were killed as
        stale spares).  *block*: wait for each; they are on their way out,
        past everything but the kernel's tear-down."""
        for pid in list(self.unreaped):
            try:
                done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue  # tried again on the next reaping
                done = pid  # not ours any more: nothing to reap
            if done:
                self.unreaped.remove(pid)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ------------------------------------------------------------ the child

def _serve_jobs(job_r, names_w, entry):  # pragma: no cover - in a spare
    """Wait for the payload; run it, and stay for more if it says so.  The
    context closing the pipe unused (it discarded us, or it exited) ends
    the spare."""
    stay, payload = _read_job(job_r)
    if not stay:
        os.close(job_r)
        entry(payload)
        return
    state = _baseline()
    before = set(sys.modules)
    while True:
        status, out, err, waited = _run_in_memory(lambda: entry(payload))
        names = [n for n in list(sys.modules) if n not in before]
        before.update(names)
        # A module imported in the task has its state after it, threads
        # waited for have ended the interpreter's: leave.
        may_stay = state is not None and not names and not waited
        _write_frame(names_w, (status, names, may_stay), out, err)
        # The answer is out: now see whether this process may serve again.
        if not (may_stay and state.restore()):
            os._exit(status)  # the pipe's end says it left
        _write_all(names_w, _STAYS)
        stay, payload = _read_job(job_r)


def _baseline():  # pragma: no cover - in a spare child
    """This process's state before its first task; None if it cannot be
    read here (the task runs, and the process leaves after it)."""
    try:
        return baseline.Baseline()
    except Exception:
        return None


def _read_job(job_r):  # pragma: no cover - in a spare child
    header = _read_exactly(job_r, _LENGTH.size)
    data = header and _read_exactly(job_r, _LENGTH.unpack(header)[0])
    if data is None:
        os._exit(0)
    return marshal.loads(data)


def _run_in_memory(main):  # pragma: no cover - in a staying child
    """Run *main* with fds 1 and 2 on in-memory files: its exit status and
    what it wrote there."""
    files = [os.memfd_create('plasmid-module-out'),
             os.memfd_create('plasmid-module-err')]
    os.dup2(files[0], 1)
    os.dup2(files[1], 2)
    status, waited = _run_main(main, staying=True)
    _clear_exit_handlers()
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    written = []
    for fd in files:
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        written.append(b''.join(chunks))
    return status, written[0], written[1], waited


def _write_frame(fd, meta, out, err):  # pragma: no cover - in the child
    meta = marshal.dumps(meta)
    _write_all(fd, _FRAME.pack(len(meta), len(out), len(err)) + meta)
    _write_all(fd, out)
    _write_all(fd, err)


def _read_frame(fd):
    """``(status, out, err, names, may stay)`` from a staying child's
    frame; None if it ended before writing one whole."""
    header = _read_exactly(fd, _FRAME.size)
    if header is None:
        return None
    sizes = _FRAME.unpack(header)
    parts = [_read_exactly(fd, size) if size else b'' for size in sizes]
    if None in parts:
        return None
    status, names, may_stay = marshal.loads(parts[0])
    return status, parts[1], parts[2], names, may_stay


def _read_exactly(fd, size):  # pragma: no cover - in a spare child
    chunks = []
    while size:
        try:
            chunk = os.read(fd, size)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b''.join(chunks)


def _child(main, out_w, err_w, names_w, before):  # pragma: no cover
    status = 1
    try:
        _set_up(out_w, err_w)
        status = _run_main(lambda: main(names_w))[0]
        _report_end(names_w, before, status)
    finally:
        os._exit(status)


def _run_main(main, staying=False):  # pragma: no cover - in the child
    """Run *main* as the interpreter would run a script: its exit status,
    and whether threads it left were waited for (see _join_threads)."""
    try:
        main()
        status = 0
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:
        status = _uncaught(*sys.exc_info())
    # We leave by os._exit, so do what an interpreter's exit does first:
    # wait for the threads the module left running (and the work it gave
    # a concurrent.futures executor), then run its atexit handlers (its
    # temp dir's clean-up, say).
    waited = _join_threads(staying)
    _run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return status, waited


def _set_up(out_w, err_w):  # pragma: no cover - in the child
    """Make this fork a module process: signals as a fresh Python has
    them, no links, fds 0/1/2 and sys.std* of its own.  A failure here
    (a SIGINT meanwhile, an error in the core's _after_fork) is told on
    the task's stderr: it ended the process with status 1 and not a
    word, the task failing with an empty stderr."""
    told = err_w  # the task's stderr, until it is fd 2
    try:
        # First: a signal from here on meets a fresh Python's handlers.
        # A handler of the context's would run its Python code here, on
        # 2.7 and 3.6 while the links were still the context's.
        _reset_signals()
        _let_go_of_links()  # before _set_streams: it sets sys.stdout/stderr
        _set_fds(out_w, err_w)
        told = 2
        _set_streams()
        _keep_from_commands()
    except BaseException:
        _tell_failure(told)
        raise


def _tell_failure(fd):  # pragma: no cover - in the child
    """Write the exception being handled to *fd*, if anything can."""
    try:
        import traceback
        text = 'plasmid: the module process could not set itself up:\n' + \
            ''.join(traceback.format_exception(*sys.exc_info()))
        if not isinstance(text, bytes):
            text = text.encode('utf-8', 'replace')
        _write_all(fd, text)
    except BaseException:
        pass  # nowhere left to say it: the status says it failed


def _reset_signals():  # pragma: no cover - in the child
    """As a fresh Python (vanilla's module process) has them: SIGINT
    raises KeyboardInterrupt, SIGPIPE is ignored (a write to a closed
    pipe raises BrokenPipeError, which a module may catch)."""
    for signum in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)


def _set_fds(out_w, err_w):  # pragma: no cover - in the child
    """fds 0/1/2 of its own: /dev/null and the task's output pipes."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    for fd in (null, out_w, err_w):
        os.close(fd)


def _set_streams():  # pragma: no cover - in the child
    """sys.std* on fds 0/1/2, no logging handlers or exit handlers of the
    context's, the interpreter's excepthook."""
    if sys.version_info[0] < 3:  # file objects, which take str
        sys.stdin, sys.stdout, sys.stderr = [
            os.fdopen(fd, mode) for fd, mode in ((0, 'r'), (1, 'w'),
                                                 (2, 'w'))]
    else:
        sys.stdin = io.open(0, 'r', closefd=False)
        sys.stdout = io.open(1, 'w', closefd=False)
        sys.stderr = io.open(2, 'w', closefd=False)
    root = logging.getLogger()
    root.handlers = []
    root.setLevel(logging.WARNING)
    _clear_exit_handlers()
    sys.excepthook = sys.__excepthook__


def _let_go_of_links():  # pragma: no cover - in the child
    """What Python 3.7+ does at every fork, the core's fork hook and
    logging's, which Python 2.7 and 3.6 lack: /dev/null over the context's
    links to its parent and to the children it started (a module process
    that held them while it ran hid the context's death from its parent
    and from those children until the module ended), those links closed,
    and fresh locks for the router, the importer, the links and logging.
    Another thread of the context may have held one as we forked (the
    loop's, one logging or printing): the module's first ``getLogger``
    waited for ever on a copy no thread here will release."""
    if hasattr(os, 'register_at_fork'):
        return
    logging._lock = threading.RLock()
    for ref in list(logging._handlerList):
        handler = ref()
        if handler is not None:
            handler.createLock()
    here = context_process.current
    if here is not None:
        here._after_fork()


def _keep_from_commands():  # pragma: no cover - in the child
    """Close-on-exec on every descriptor above 2, so that a command the
    module starts with ``close_fds=False`` inherits fds 0-2 (and what the
    module opens), as under vanilla, whose module process has 0-2 alone.
    The links' copies of /dev/null (the core's fork hook and
    _let_go_of_links put them there by dup2, which makes a descriptor
    inheritable) would be passed on else.  Marked, not closed: those
    copies keep the links' fd numbers taken."""
    fds = set()
    for listing in ('/proc/self/fd', '/dev/fd'):
        try:
            fds.update(int(name) for name in os.listdir(listing))
            break
        except OSError:
            pass
    here = context_process.current
    if here is not None:  # where the system lists nothing
        for stream in [here.parent] + here.children:
            fds.update((stream.rfd, stream.wfd))
    shell_spawn.forbid_inheritance(fds)


def _report_end(names_w, before, status):  # pragma: no cover - in the child
    """Write the exit status and the modules imported, then close every
    pipe the parent reads: it has its answer now."""
    names = ' '.join(n for n in list(sys.modules) if n not in before)
    _write_all(names_w, ('status=%d %s' % (status, names)).encode('utf-8'))
    for fd in (names_w, 1, 2):
        os.close(fd)


def _uncaught(exc_type, exc_value, tb):  # pragma: no cover - in the child
    """Do what the interpreter does with an exception main() let out: call
    sys.excepthook, which a module may have set (2.18's file module turns
    its errors into fail_json there), and take a SystemExit from the hook
    as the exit status.  The traceback starts below our frames (this
    process's machinery), as vanilla's starts at its wrapper's."""
    tb = _below_ours(tb)
    if hasattr(exc_value, 'with_traceback'):  # Python 3.12+ prints this
        exc_value = exc_value.with_traceback(tb)
    try:
        sys.excepthook(exc_type, exc_value, tb)
    except SystemExit as exc:
        return _exit_status(exc.code)
    except BaseException:
        import traceback
        sys.stderr.write('Error in sys.excepthook:\n')
        traceback.print_exc()
        traceback.print_exception(exc_type, exc_value, tb)
    return 1


_OURS = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _below_ours(tb):  # pragma: no cover - in the child
    """*tb* from its first frame outside plasmid's accelerator."""
    while tb is not None and tb.tb_next is not None and \
            tb.tb_frame.f_code.co_filename.startswith(_OURS):
        tb = tb.tb_next
    return tb


def _clear_exit_handlers():  # pragma: no cover - in the child
    """Forget the handlers this context registered: they are not the
    module's to run."""
    import atexit
    if hasattr(atexit, '_clear'):
        atexit._clear()
    else:
        atexit._exithandlers[:] = []


def _join_threads(only_if_left):  # pragma: no cover - in the child
    """Wait for the threads the module left (``threading._shutdown``, as an
    interpreter's exit does; it works once per process, and ends its
    threading: a process that did may not stay).  *only_if_left*: only if
    there are any; True if it waited."""
    threading = sys.modules.get('threading')  # none: no thread to wait for
    shutdown = getattr(threading, '_shutdown', None)
    if shutdown is None or (only_if_left and not _threads_left(threading)):
        return False
    try:
        shutdown()
    except Exception:
        pass
    return True


def _threads_left(threading):  # pragma: no cover - in the child
    here = threading.current_thread()
    return any(t is not here and not t.daemon and t.is_alive()
               for t in threading.enumerate())


def _run_exit_handlers():  # pragma: no cover - in the child
    import atexit
    try:
        atexit._run_exitfuncs()
    except Exception:
        pass


def _exit_status(code):
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xff
    try:
        sys.stderr.write('%s\n' % (code,))
    except Exception:
        pass
    return 1


# ---------------------------------------------------------- collecting

def _read_all(fds):
    chunks = dict((fd, []) for fd in fds)
    open_fds = list(fds)
    while open_fds:
        for fd in wait_for(open_fds)[0]:
            data = os.read(fd, 65536)
            if data:
                chunks[fd].append(data)
            else:
                open_fds.remove(fd)
                os.close(fd)
    return [b''.join(chunks[fd]) for fd in fds]


def _wait(pid):
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        return os.WEXITSTATUS(status)
