"""A direct child's boot, finished while the caller's first calls travel.

``router.ssh()`` and the other methods return as soon as the new Python
has written spawn's ready marker: by then ssh has connected and logged in,
any password was taken, and the interpreter runs, so every failure
``ConnectError`` names (refused, unreachable, no Python, wrong password)
has had its chance.  What is left, decompressing, compiling and booting the
core, happens on the target while the first call crosses the network: over
a link of a 50 ms round trip that hides the boot's CPU (10-30 ms) behind
the call's own travel, where waiting for the boot's answer first would add
both.

The answer (HELLO: pid, version, executable) then comes on the stream like
any message; :class:`Boot` takes it.  A boot that fails (the link ends
before HELLO) or overruns ``connect_timeout`` (the process is killed) is a
``ConnectError`` all the same, raised by that context's calls and by
anything that reads its info, instead of by the method that started it.
"""
from __future__ import annotations

from typing import Any, Optional

from plasmid.connect import spawn
from plasmid.core.context import Future
from plasmid.core.errors import (CallError, ConnectError, ContextLost,
                                 TimeoutError)
from plasmid.core.loop import Latch
from plasmid.master import call_errors, futures

# Beyond connect_timeout, how long a reader of the info waits for the
# boot's timer to have fired (it fires on the loop, which may be busy).
WAIT_MARGIN = 5.0


class Boot:
    """Watches one child's boot: its HELLO, or why none came."""

    def __init__(self, loop, name: str, timeout: float) -> None:
        self.loop = loop
        self.name = name
        self.timeout = timeout
        self.hello = Latch(loop)   # the HELLO info, or the ConnectError
        self.stream = None
        self.timer = None
        self.overdue = False
        self.shut_down_id: Optional[int] = None  # see shut_down()

    @property
    def error(self) -> Optional[ConnectError]:
        """Why the boot failed (ContextLost if the master shut the context
        down first); None while it goes on, or once it worked."""
        return self.hello.error

    def watch(self, stream) -> None:
        """Loop thread, before the stream reads: hear of its end first."""
        self.stream = stream
        if self.hello.is_set:
            return
        # First: the calls it fails must find self.error already set.
        stream.on_close.insert(0, self._on_closed)
        self.timer = self.loop.call_later(self.timeout, self._on_overdue)

    def on_hello(self, info: dict) -> None:
        """Loop thread: the core answered."""
        if self.timer is not None:
            self.loop.cancel_timer(self.timer)
        self.hello.set(info)

    def wait(self) -> dict:
        """The HELLO info, once it has come; ConnectError if it will not
        (ContextLost if the master shut the context down first)."""
        try:
            return self.hello.wait(self.timeout + WAIT_MARGIN)
        except TimeoutError:
            raise ConnectError('%s: the Python started but did not boot '
                               'within %gs' % (self.name, self.timeout))

    def shut_down(self, context_id: int) -> None:
        """The master asked the context to exit: if it ends before its
        HELLO, that is why, not a boot that failed."""
        self.shut_down_id = context_id

    def _on_overdue(self) -> None:
        if self.hello.is_set or self.stream.closed:
            return
        self.overdue = True
        self.stream.process.kill()
        self.stream.close()  # a wrapper's child may hold the pipes open

    def _on_closed(self, stream) -> None:
        if self.hello.is_set:
            return
        if self.timer is not None:
            self.loop.cancel_timer(self.timer)
        said = stream.error_output.said() if stream.error_output else ''
        if self.shut_down_id is not None:
            self.hello.set(error=self._shut_down_error(said))
            return
        reason = 'the Python started but did not boot'
        if self.overdue:
            reason += ' within %gs' % self.timeout
        self.hello.set(error=spawn.start_failed(self.name, reason, said,
                                                not self.overdue))

    def end_unheard(self) -> None:
        """The router shut down: a boot not heard of by then never will
        be (its loop is closed; a wait for the HELLO must not run it)."""
        if not self.hello.is_set:
            self.hello.set(error=self._shut_down_error(''))

    def _shut_down_error(self, said: str) -> ContextLost:
        # The words of the core's loss, which calls after the boot get.
        return ContextLost('context %s is gone: it was shut down'
                           % (self.shut_down_id or self.name), said)


class BootingFuture(Future):
    """A call's future on a context started by this master (or only named
    to it: router.ReferencedContext, whose boot is None): if the context
    is lost because its boot failed, the call raises that ConnectError,
    not the ContextLost that a context lost later gives; a CallError the
    user's script raised at its top level says so (call_errors)."""

    def result(self, timeout: Optional[float] = None) -> Any:
        """As the core's, with *timeout* checked (see futures.py)."""
        if timeout is not None:
            timeout = futures.checked_timeout(timeout)
        try:
            if timeout is None or timeout <= futures.LONGEST_PIECE:
                return super().result(timeout)
            return futures.wait_in_pieces(super().result, timeout)
        except ContextLost:
            boot = self.context.boot
            if boot is None or boot.error is None:
                raise
            raise boot.error from None
        except CallError as error:
            if type(error) is not CallError:
                raise
            explained = call_errors.explained(error)
            if explained is error:
                raise
            raise explained from None
