"""Context handles, call futures and ``as_completed``."""
from __future__ import absolute_import
import collections
import threading
import types

from plasmid.core import compat
from plasmid.core.errors import ContextLost, Error, TimeoutError
from plasmid.core.framing import Message
from plasmid.core.logger import Logger
from plasmid.core.loop import Latch, deadline_for, seconds_left
from plasmid.core.router import CALL, SHUTDOWN

LOG = Logger('plasmid.context')
_REFS = {}  # function -> (module, qualname), for functions seen before
_REFS_MAX = 4096


def function_ref(func):
    """Return ``(module, qualname)`` naming *func*, or raise TypeError.

    Calls carry a name, never code, so only functions that the other side
    can import by name may be called.
    """
    try:
        return _REFS[func]
    except (KeyError, TypeError):
        ref = _function_ref(func)
    if len(_REFS) < _REFS_MAX:
        try:
            _REFS[func] = ref
        except TypeError:  # unhashable callable
            pass
    return ref


def _function_ref(func):
    # The master explains a refusal (MasterContext._call_message): the
    # words cost the bootstrap's bytes here.
    owner = getattr(func, '__self__', None)
    module = getattr(func, '__module__', None)
    if isinstance(owner, types.ModuleType):
        module = owner.__name__
    elif isinstance(owner, type):
        module = module or owner.__module__  # a C class method has none
    elif owner is not None:
        module = None  # bound to an instance
    if module == '__main__':
        module = main_module_name()
    qualname = callable(func) and compat.qualified_name(func) or '<'
    if module is None or '<' in qualname:
        raise TypeError('%r cannot be called by name' % (func,))
    return module, qualname


MAIN_ALIAS = '__plasmid_main__'


def main_module_name():
    """The name under which the caller's ``__main__`` can be imported.

    A script run as ``python -m pkg.mod`` is importable as ``pkg.mod``; a
    plain script is served under an alias, so that its
    ``if __name__ == '__main__':`` block does not run in the context.
    """
    import sys
    spec = getattr(sys.modules.get('__main__'), '__spec__', None)
    if spec is not None and spec.name and spec.name != '__main__':
        return spec.name
    return MAIN_ALIAS


class Future(object):
    """The pending result of :meth:`Context.call_async`."""

    def __init__(self, context, latch, handle):
        self.context = context
        self.latch = latch
        self.handle = handle
        self._outcome = None

    def done(self):
        loop = self.context.router.loop
        if not self.latch.is_set and loop.try_own():
            try:
                loop.run_once(0)  # let pending replies in
            finally:
                loop.disown()
        return self.latch.is_set

    def result(self, timeout=None):
        """Return the function's result, or raise what it raised.

        Raises :class:`plasmid.CallError`, :class:`plasmid.ContextLost` or
        :class:`plasmid.TimeoutError` (after which you may wait again).
        """
        if self._outcome is None:
            msg = self.latch.wait(timeout)
            self._outcome = self.context.router.decode(
                msg, self.context.context_factory)
        ok, value = self._outcome
        if ok:
            return value
        raise value

    def add_done_callback(self, callback):
        self.latch.add_callback(lambda latch: _run_callback(callback, self))

    def __repr__(self):
        return '<Future %s on %s>' % (
            self.done() and 'done' or 'pending', self.context.name)


def _run_callback(callback, future):
    # It runs where the future was set: on the loop, amid a batch of
    # replies or of the futures a loss fails.  Raised there, the rest
    # were lost, the I/O thread or an intermediary's loop died.
    try:
        callback(future)
    except Exception:
        LOG.exception('done callback %r of %r failed', callback, future)


class Context(object):
    """A handle to one remote interpreter."""

    future_type = Future  # what call_async returns

    def __init__(self, router, context_id, name, via=None,
                 context_factory=None, info=None):
        self.router = router
        self.context_id = context_id
        self.name = name
        self.via = via
        self.context_factory = context_factory
        self.info = info or {}

    def __plasmid_ref__(self):
        return self.context_id, self.name

    def __repr__(self):
        return 'Context(%d, %r)' % (self.context_id, self.name)

    @property
    def python_path(self):
        return self.info.get('executable')

    def _call_message(self, func, args, kwargs, reply_to):
        module, qualname = function_ref(func)
        module = self._before_call(module)
        return Message.encoding(self.context_id, self.router.context_id,
                                CALL, (module, qualname, args, kwargs),
                                reply_to)

    def _before_call(self, module):
        """Called with the module of each function called here, before
        the call goes (the master sends the module ahead); returns the
        module's name in the callee."""
        return module

    def call_async(self, func, *args, **kwargs):
        """Start ``func(*args, **kwargs)`` remotely; return a Future."""
        return self._start_call(func, args, kwargs)

    def call(self, func, *args, **kwargs):
        """Run ``func(*args, **kwargs)`` remotely and return its result."""
        return self._start_call(func, args, kwargs).result()

    def call_no_reply(self, func, *args, **kwargs):
        """Send a call and return at once; no reply will come back.

        A burst of these costs no round trip.  Failures are logged by the
        context instead of being raised here.
        """
        self._send_call(func, args, kwargs)

    # The public three take the function's arguments as given; these take
    # them as a tuple and a dict, so that the master's versions can pass a
    # keyword argument named func or self on (positional-only there).

    def _start_call(self, func, args, kwargs):
        latch = Latch(self.router.loop)
        msg = self._call_message(func, args, kwargs, 0)
        msg.reply_to = self.router.expect_reply(self.context_id, latch)
        try:
            self.router.send(msg)
        except Exception:
            self.router.forget_reply(msg.reply_to)
            raise
        return self.future_type(self, latch, msg.reply_to)

    def _send_call(self, func, args, kwargs):
        if self.context_id in self.router.lost:
            raise self.router.lost_error(self.context_id)
        self.router.send(self._call_message(func, args, kwargs, 0))

    def is_alive(self):
        return self.context_id not in self.router.lost

    def shutdown(self, wait=True, timeout=10.0):
        """Ask the context to exit; with *wait*, until it has gone."""
        if not self.is_alive():
            return
        gone = Latch(self.router.loop)
        # The seconds it may take to flush its output: what we wait for
        # it, without limit a long time (None would read as none).
        msg = Message.encoding(self.context_id, self.router.context_id,
                               SHUTDOWN, wait and (1e6 if timeout is None
                                                   else timeout))
        # No answer comes: the context's loss fails the wait, as does a
        # refusal on the way (one may not address a sibling).
        msg.reply_to = self.router.expect_reply(self.context_id, gone)
        try:
            self.router.send(msg)
            if wait:
                try:
                    answer = gone.wait(timeout)
                except ContextLost:  # gone, as asked
                    answer = None
                if answer is not None and self.is_alive():
                    raise self.router.decode(answer)[1]
        finally:
            self.router.forget_reply(msg.reply_to)


class _Completions(object):
    """Futures in the order they finish, for :func:`as_completed`."""

    def __init__(self, loop):
        self.loop = loop
        self.ready = collections.deque()
        self.lock = threading.Lock()
        self.signal = Latch(loop)

    def on_done(self, future):
        with self.lock:
            self.ready.append(future)
            signal = self.signal
        signal.set()

    def next(self, deadline):
        while True:
            with self.lock:
                if self.ready:
                    return self.ready.popleft()
                if self.signal.is_set:
                    self.signal = Latch(self.loop)
                signal = self.signal
            try:
                signal.wait(seconds_left(deadline))
            except TimeoutError:  # a day's piece of a longer wait, maybe
                if not self.ready and seconds_left(deadline) == 0:
                    raise TimeoutError('futures still pending at timeout')


def as_completed(futures, timeout=None):
    """Yield *futures* as they finish; raise TimeoutError at *timeout*."""
    futures = list(futures)
    if not futures:
        return
    deadline = deadline_for(timeout)
    completions = _Completions(futures[0].context.router.loop)
    for future in futures:
        future.add_done_callback(completions.on_done)
    for _ in range(len(futures)):
        yield completions.next(deadline)


__all__ = ['Context', 'Future', 'as_completed', 'function_ref', 'Error']
