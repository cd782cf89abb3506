"""The life of a context: boot, serve calls, shut down.

Threads: the main thread runs calls, and the I/O loop between them; a
standby thread runs the loop during long calls (see dispatch), so routing,
log forwarding and noticing a lost parent go on whatever a call does.  A
lost parent ends the process at once, even if a call is stuck; where the
call holds the GIL in C code, no thread here runs, and the watchdog the
first stage started (connect/watchdog) kills the process instead.
"""
from __future__ import absolute_import
import os
import select
import sys
import threading

from plasmid.core import logs
from plasmid.core.context import Context
from plasmid.core.dispatch import Dispatcher
from plasmid.core.framing import FrameReader
from plasmid.core.importer import Importer
from plasmid.core.logger import Logger
from plasmid.core.loop import Loop, now, set_cloexec, widen_pipe
from plasmid.core.router import BOOT, HELLO, SHUTDOWN, FROM_PARENT, Router
from plasmid.core.stream import Stream

# The running context, for code (like connect.spawn) that runs inside it.
current = None
SHUTDOWN_GRACE = 2.0   # seconds calls get at least before a forced exit
CHILD_SHUTDOWN_WAIT = 5.0


def read_boot(fd, frame=None):
    """The BOOT frame's value and the reader for what follows it: from
    *frame* (its bytes, which came on the command line), else from *fd*,
    blocking until it arrives."""
    reader = FrameReader()
    messages = reader.feed(frame) if frame is not None else []
    while not messages:
        data = os.read(fd, 65536)
        if not data:
            os._exit(1)
        messages = reader.feed(data)
    boot = messages.pop(0)
    if boot.handle != BOOT:
        os._exit(1)
    # Frames that came with BOOT (a pipelined first call) wait in the
    # reader until the stream starts.
    reader.buffer[0:0] = b''.join(m.to_bytes() for m in messages)
    return boot.value(), reader


def capture_fd(fd):
    """Point *fd* at a new pipe; return the pipe's read end."""
    rfd, wfd = os.pipe()
    os.dup2(wfd, fd)
    os.close(wfd)
    return rfd


class ChildContext(object):
    """Everything one context process runs."""

    def __init__(self, blob, boot_frame=None):
        self.blob = blob  # the compressed bootstrap, to start children
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        for fd in (self.rfd, self.wfd):
            widen_pipe(fd)
        # Kept, not fd 0's copy: a call may close or reuse fd 0.
        self.null = os.open(os.devnull, os.O_RDWR)
        set_cloexec(self.null)
        os.dup2(self.null, 0)
        getattr(os, 'register_at_fork', dict)(  # Python 3.7+ (else a no-op)
            after_in_child=self._after_fork)
        self.config, reader = read_boot(self.rfd, boot_frame)
        reader.max_message = self.config['max_message']
        self.loop = Loop()
        self.router = Router(self.loop, self.config['context_id'],
                             self.config['max_message'])
        self.parent = Stream(self.router, self.rfd, self.wfd, 'parent',
                             reader)
        self.router.set_parent(self.parent, self.config['parent_id'])
        self.router.on_parent_lost.append(self._on_parent_lost)
        self.router.add_handler(SHUTDOWN, self._on_shutdown, FROM_PARENT)
        self.contexts = {}
        self.dispatcher = Dispatcher(self.router, self.context_for,
                                     self._drain_output)
        self.importer = Importer(self.router, self.config['master_version'])
        self.stopping = False
        self.flush_until = 0
        self.children = []  # streams of processes this context started

    def _after_fork(self):
        # A fork of this context (a call's os.fork, multiprocessing) has no
        # link.  It lets go of the links to the parent and the children
        # (not of those closed: their fd numbers may be anyone's now),
        # which it would hold open while it lives, hiding this context's
        # exit: /dev/null keeps their fd numbers taken.  Marked
        # closed, they fail its calls (ContextLost) and imports at once.
        # A fresh loop keeps it off the context's pipes and wake-ups (its
        # owner may be a thread the fork lacks), fresh locks off those
        # another thread held as it forked; its output goes to fds 1 and
        # 2, which the context reads and forwards.
        self.router.lock = threading.Lock()
        self.importer.lock = threading.Lock()
        for s in self.children + [self.parent]:
            s.let_go(self.null)
        self.loop.renew()
        sys.stdout = os.fdopen(os.dup(1), 'w', 1)
        sys.stderr = os.fdopen(os.dup(2), 'w', 1)

    def context_for(self, context_id, name):
        """Context handles decoded here all share one router."""
        context = self.contexts.get(context_id)
        if context is None:
            context = self.contexts[context_id] = Context(
                self.router, context_id, name,
                context_factory=self.context_for)
        return context

    def _capture_output(self):
        self.forwarder = logs.install(self.router, self.config['log_level'])
        self.pipes = [logs.PipeReader(self.loop, self.forwarder, origin,
                                      capture_fd(fd))
                      for fd, origin in ((1, logs.STDOUT), (2, logs.STDERR))]
        sys.stdout = logs.OutputWriter(self.forwarder, logs.STDOUT, 1)
        sys.stderr = logs.OutputWriter(self.forwarder, logs.STDERR, 2)
        self.output_waiting = select.poll()
        for pipe in self.pipes:
            self.output_waiting.register(pipe.rfd, select.POLLIN)

    def _drain_output(self):
        # What a call's subprocesses wrote to fds 1 and 2 before it
        # returned goes out before its reply, as its print()s do; left
        # to the loop, it could trail the reply (a quick call: nobody
        # runs the loop meanwhile).  Not while the link is congested
        # (paused): that output waits in its pipe.
        if self.output_waiting.poll(0):
            for pipe in self.pipes:
                if not pipe.paused:
                    pipe.drain()

    def run(self):
        self._capture_output()
        self.importer.install()
        self.router.send_value(self.config['parent_id'], HELLO, {
            'pid': os.getpid(),
            'version': list(sys.version_info[:3]),
            'executable': sys.executable,
        })
        self.loop.defer(self.parent.start)
        for pipe in self.pipes:
            self.loop.defer(pipe.start)
        self.dispatcher.run()
        self._finish()

    # --------------------------------------------------------- shutdown

    def _on_shutdown(self, msg):
        """Loop thread: let the calls queued before it finish, then stop."""
        if self.stopping:
            return
        self.stopping = True
        self.dispatcher.stop()
        # The message holds the seconds the parent waits for us, if any:
        # the calls may run nearly that long (a forced exit at 2 s cut a
        # call it meant to wait for), exiting a little before its wait
        # ends, to say so and flush (a sender that kills us then would
        # cut both; one in a context does not kill), and output still
        # queued at the end may take them.
        waited = min(msg.data and msg.value() or 0, 1e6)
        self.flush_until = now() + waited
        self.grace = max(SHUTDOWN_GRACE, waited - min(1.5, waited * .2))
        self.loop.call_later(self.grace, self._force_exit_if_busy)

    def _force_exit_if_busy(self):
        # Not busy: the main thread is in _finish, waiting (bounded) for
        # the children it told to stop.
        if not self.dispatcher.busy:
            return
        Logger('plasmid.child').error(
            'calls still ran %.1fs after the shutdown: exiting', self.grace)
        self._flush_and_exit(1)

    def _on_parent_lost(self):
        # Nobody is left to report to: end now, whatever the main thread is
        # doing.  Our children see their pipes close and follow.
        os._exit(0)

    def _finish(self):
        """Main thread, after the last call: flush everything, then exit."""
        # Our children may take most of the flush time we were given (what
        # they send passes through us meanwhile), and a second for their
        # pipes: we wait that long for them, some time being left for us.
        left = max(0, self.flush_until - now())
        for cid, stream in list(self.router.routes.items()):
            if not stream.closed:  # every route leads through a child
                self.router.send_value(cid, SHUTDOWN, left * .8)
        self.loop.run_until(
            lambda: all(s.closed for s in list(self.children)),
            max(CHILD_SHUTDOWN_WAIT, min(left, left * .8 + 1.5)))
        self._flush_and_exit(0)

    def _flush_and_exit(self, status):
        for writer in (sys.stdout, sys.stderr):
            try:
                writer.flush()
            except Exception:
                pass
        # Close our ends of fds 1 and 2 so the pipe readers see EOF once
        # no subprocess holds them (/dev/null in their place), then
        # let the loop drain them.
        for fd in (1, 2):
            os.dup2(self.null, fd)
        parent = self.parent
        self.loop.run_until(
            lambda: all(p.closed for p in self.pipes) and
            not parent.outbox, 1.0)
        # Then what is queued goes until the parent stops waiting for us
        # (a slow link, or slow handlers of our records in the master,
        # which reads while it handles none), and nothing more is read.
        for pipe in self.pipes:
            if not pipe.closed:
                pipe.pause(True)
        self.loop.run_until(lambda: not parent.outbox,
                            max(0, self.flush_until - now()))
        os._exit(status)


def main(blob, boot_frame=None):
    """Run this context: *blob* is the compressed core it booted from,
    *boot_frame* its BOOT frame if that came on the command line."""
    global current
    current = ChildContext(blob, boot_frame)
    current.run()
