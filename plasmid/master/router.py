"""The public Router: starts contexts and owns everything they need.

Threadless by default: no thread is started, and the I/O loop runs inside
whatever call is blocked waiting (``call()``, ``Future.result()``,
``as_completed``).  ``Router(threaded=True)`` runs the loop in a thread
instead, so many threads can call at once.
"""
from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import platform
import sys
import threading
import time
import types
import weakref
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from plasmid.connect import context_log, spawn, ssh as ssh_method, \
    su as su_method, sudo as sudo_method, watchdog
from plasmid.core import codec
from plasmid.core.context import MAIN_ALIAS, Context, Future
from plasmid.core.errors import (CallError, ConnectError, ContextLost, Error,
                                  StreamError, TimeoutError)
from plasmid.core.framing import DEFAULT_MAX_MESSAGE, Message
from plasmid.core.loop import Loop
from plasmid.core.router import (ADD_ROUTE, FROM_ANY, FROM_CHILD,
                                 FROM_PARENT, HELLO, LOG_RECORD, SHUTDOWN,
                                 Router as CoreRouter)
from plasmid.master.arguments import (
    LONGEST_CONNECT_TIMEOUT, checked_args, checked_container, checked_env,
    checked_flag, checked_keepalive, checked_message_limit, checked_name,
    checked_namespaces, checked_password, checked_pid, checked_port,
    checked_program, checked_prompt_timeout, checked_python_path,
    checked_seconds, checked_user, checked_user_name, checked_wait)
from plasmid.master.booting import Boot, BootingFuture
from plasmid.master import interrupts, main_script
from plasmid.master.bootstrap import build_blob
from plasmid.master.compilers import (FROM_PATH, ForeignCompilers,
                                      Interpreters, checked_interpreters)
from plasmid.master.modules import ModuleResponder
from plasmid.master.starts import StartsInFlight

MASTER_ID = 0
# Containers one argument may nest: the codec's limit less the call's own
# two levels (the call tuple, then args or kwargs).
ARGUMENT_DEPTH = codec.MAX_DEPTH - 2
PythonPath = Union[str, Sequence[str], None]
_live_routers: "weakref.WeakSet[Router]" = weakref.WeakSet()


VIA_MARGIN = 10.0
# An ssh context's link is probed after 15 s of quiet and given up after
# three probes unanswered: a silently dead link ends its calls within a
# minute (Router.ssh's keepalive).
SSH_KEEPALIVE = (15, 3)


# Router.shutdown()'s default wait: the router's own shutdown_timeout.
SHUTDOWN_TIMEOUT = object()
# How long a message that met a dead link waits for that link's close
# before its sender is answered without it: past the close's own waits
# (ExitWatch's EXITED_LINK_WAIT, the last words' LAST_WORDS_WAIT).
LOST_ON_SEND_WAIT = 2.0


def _target_python(python_path: PythonPath) -> Any:
    """The interpreter of a container or another process's namespaces:
    one of that filesystem, nothing to do with ours nor with via's;
    python3 on its PATH unless told."""
    if python_path is None or python_path == '':
        return 'python3'
    return checked_python_path(python_path)


def longest_start_of(spec: dict) -> float:
    """How long a start may take: each of its stages may take the whole
    connect_timeout (spawn.Handshake.run), and a sudo under requiretty
    is started a second time, on a terminal."""
    return spawn.START_STAGES * 2 * spawn.connect_timeout(spec)


def _why_not_called_by_name(func: Any) -> Optional[str]:
    """Why a call cannot name *func* for the context to import, or None."""
    if not callable(func):
        return 'it is not callable'
    owner = getattr(func, '__self__', None)
    if owner is not None and not isinstance(owner, (type, types.ModuleType)):
        return ('it is bound to an instance; call a module-level function, '
                'static or class method')
    qualname = getattr(func, '__qualname__', None)
    if qualname is None:  # a partial, an instance with __call__
        return ('a call names a function, class or method to import, and a '
                '%s has no name' % type(func).__name__)
    if '<' in qualname:
        return ('lambdas, closures and nested functions cannot be imported '
                'by name; define it at module level')
    if owner is None and getattr(func, '__module__', None) is None:
        # A C type's static method (str.maketrans) names no module.
        return ('%s names no module to import it from; call a function of '
                'your own that calls it' % qualname)
    return None


def _named(func: Any) -> str:
    """*func* as a refusal names it: a function's or class's repr, but
    only the type and name of anything else (a bound method, a partial, an
    instance), whose repr shows objects' reprs: one may raise, run to
    megabytes or hold secrets (os.environ.get's shows the environment)."""
    if isinstance(func, (types.FunctionType, types.BuiltinFunctionType,
                         type)):
        return repr(func)
    if isinstance(func, types.MethodType):
        return '<bound method %s of a %s>' % (
            getattr(func, '__qualname__', '?'),
            type(func.__self__).__qualname__)
    return 'an object of type %s' % type(func).__qualname__


# The core router a thread is encoding a call for (see _own_reference).
_SENDING = threading.local()


def _own_reference(context: Context) -> tuple:
    """A context handle as a call's argument: refused unless it is one of
    the router the call goes through.  Ids are a router's own: context 2
    of another router would name this router's context 2."""
    sending = getattr(_SENDING, 'core', None)
    if sending is not None and sending is not context.router:
        raise StreamError('cannot send %s: it is a context of another '
                          'router' % context.name)
    return context.context_id, context.name


@contextlib.contextmanager
def _sending_through(core: CoreRouter) -> Iterator[None]:
    """Context handles encoded meanwhile on this thread must be *core*'s
    (see _own_reference)."""
    _SENDING.core = core
    try:
        yield
    finally:
        _SENDING.core = None


class ViaLost(ConnectError, ContextLost):
    """A start through an intermediary that is gone, or went away while
    the context started: the start failed (ConnectError) because a hop
    was lost (ContextLost), so code that catches either around a start
    sees it.  ``said`` is the loss's, ``output`` empty."""

    def __init__(self, message: str, said: str = '') -> None:
        ConnectError.__init__(self, message)
        self.said = said


class ReferencedContext(Context):
    """A context that a message named and this master did not start (or
    has forgotten since it was shut down): its calls' futures check their
    timeouts as those of the contexts it started do."""

    future_type = BootingFuture
    boot = None  # no boot of ours to blame if it is lost

    def __plasmid_ref__(self) -> tuple:
        return _own_reference(self)

    def _call_message(self, func: Any, args: tuple, kwargs: dict,
                      reply_to: int) -> Message:
        with _sending_through(self.router):
            return super()._call_message(func, args, kwargs, reply_to)


class MasterContext(Context):
    """A context started by this master."""

    future_type = BootingFuture

    def __init__(self, master: "Router", context_id: int, name: str,
                 via: Optional["MasterContext"], info: Optional[dict],
                 stream=None, boot: Optional[Boot] = None) -> None:
        # A direct child's boot may still be going on (see booting.py).
        self.boot = boot
        super().__init__(master.core, context_id, name, via,
                         master.context_for, info)
        self.master = master
        self.stream = stream  # our own link, for direct children only

    def __plasmid_ref__(self) -> tuple:
        return _own_reference(self)

    @property
    def info(self) -> dict:
        """What the context said when it booted: pid, version (a list),
        executable; waits for a boot still going on, and raises its
        ConnectError if it failed (ContextLost if it was shut down
        first)."""
        if not self._info and self.boot is not None:
            self._info = self.boot.wait()
        return self._info

    @info.setter
    def info(self, value: dict) -> None:
        self._info = value

    # The core's three, with *func* positional-only: a keyword argument
    # named func or self goes to the function called.

    def call_async(self, func: Any, /, *args: Any, **kwargs: Any) -> Future:
        """Start ``func(*args, **kwargs)`` remotely; return a Future."""
        return self._start_call(func, args, kwargs)

    def call(self, func: Any, /, *args: Any, **kwargs: Any) -> Any:
        """Run ``func(*args, **kwargs)`` remotely and return its result."""
        return self._start_call(func, args, kwargs).result()

    def call_no_reply(self, func: Any, /, *args: Any, **kwargs: Any) -> None:
        """Send a call and return at once; no reply will come back (see
        the core's)."""
        if self.boot is not None and self.boot.error is not None:
            raise self.boot.error
        if not self.is_alive():  # why, as a call() would say
            raise self.router.lost_error(self.context_id)
        self._send_call(func, args, kwargs)

    def _call_message(self, func: Any, args: tuple, kwargs: dict,
                      reply_to: int) -> Message:
        # Refused here, in words the core's terse refusal (its words cost
        # bootstrap bytes, and it shows repr()) lacks.
        why = main_script.why_not_there(func) or _why_not_called_by_name(func)
        if why is not None:
            raise TypeError('cannot call %s: %s' % (_named(func), why))
        try:
            with _sending_through(self.router):
                return super()._call_message(func, args, kwargs, reply_to)
        except StreamError as exc:
            if 'nested more than' not in str(exc):
                raise
            # The codec counts the call's own tuples: say the arguments'.
            raise StreamError(
                'cannot send arguments nested more than %d containers deep '
                '(a list or dict that holds itself is nested without end)'
                % ARGUMENT_DEPTH) from None

    def _before_call(self, module: str) -> str:
        """The called function's module goes ahead of the call to the
        direct child on the way (this context, or the intermediary it was
        started through): the call then imports it without a round trip to
        the master; a deeper context asks its parent, which has it.  The
        name returned is the module's in this context."""
        if module == MAIN_ALIAS and not main_script.has_source():
            raise TypeError(
                'cannot call a function of __main__: this program has no '
                'source file to send (python -c, a script on stdin, an '
                'interactive session); define the function in a module')
        if module == 'builtins' and self._python_major() == 2:
            return '__builtin__'  # sorted, len, ValueError: Python 2's name
        self.master.responder.push(self.first_hop().context_id, module)
        return module

    def _python_major(self) -> Optional[int]:
        """The major version of this context's Python: known before its
        start returns (a direct child's ready marker, or the HELLO that
        an intermediary's answer carries)."""
        version = self.master.responder.pythons.get(self.context_id) or \
            spawn.python_of(self._info)  # started via another: its HELLO
        return version[0] if version else None

    def first_hop(self) -> "MasterContext":
        """The master's direct child on the route to this context."""
        return Router._path_to(self)[0]

    def note_shut_down(self) -> None:
        """Before SHUTDOWN goes: its loss is then said to be that (also
        to calls waiting for a boot it cuts short), not a broken link."""
        self.master.core.told_to_shut_down.add(self.context_id)
        if self.boot is not None:
            self.boot.shut_down(self.context_id)

    def shutdown(self, wait: bool = True, timeout: float = 10.0) -> None:
        """Ask the context to exit; with *wait*, until its process is gone."""
        timeout = checked_wait('timeout', timeout)
        if not self.is_alive():
            return
        self.note_shut_down()
        try:
            super().shutdown(wait=wait, timeout=timeout)
        except TimeoutError:
            # Still busy at the timeout, like Router.shutdown: kill its
            # process (ours, or the intermediary's that started it); its
            # stream then closes and it is lost at once.
            if not self._kill():
                raise
            try:
                super().shutdown(wait=True, timeout=spawn.REAP_TIMEOUT)
            except ContextLost:
                pass  # the kill's: this SHUTDOWN met the link it closed
        if wait and self.stream is not None and self.stream.process:
            spawn.reap(self.stream.process, timeout)
            self.master._release(self.stream)

    def _kill(self) -> bool:
        """Kill this context's process: ours for a direct child, else by
        a call to the intermediary that started it (which fails in turn if
        that one is busy or gone).  Whether it was killed."""
        if self.stream is not None and self.stream.process:
            self.stream.process.kill()
            return True
        if self.via is None:
            return False
        try:
            return bool(self.via.call_async(spawn.kill_child,
                                            self.context_id).result(
                timeout=spawn.REAP_TIMEOUT))
        except Error:
            return False


class MasterCore(CoreRouter):
    """The master's core router: a context it asked to shut down is lost
    for that reason (its calls still pending say so), not for a broken
    link.

    It knows the tree, which a context's router does not: a reply to a
    call, or news of a lost route, is taken only from the context itself
    or a router on the way to it.  The link alone, which the core checks,
    is shared by every context behind one intermediary: a sibling there
    (a become account on the same host) could answer calls to another
    (root) in its stead, or have the master drop it.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.told_to_shut_down: set[int] = set()
        # context id -> the contexts between the master and it
        self.ancestors: dict[int, frozenset] = {}

    def lose(self, ids: list, reason: str, said: str = '') -> None:
        told = [cid for cid in ids if self._shut_down_by_us(cid)]
        self.told_to_shut_down.difference_update(told)
        super().lose(told, 'it was shut down', said)
        super().lose([cid for cid in ids if cid not in told], reason, said)
        for cid in ids:
            self.ancestors.pop(cid, None)

    def _lost_on_send(self, msg: Message, stream: Any) -> None:
        """A message met a link whose program has died, unseen so far:
        the link's close, a moment away (its reader sees the end, or its
        program's exit is watched), fails the calls waiting on it with the
        program's last words ("python3 was killed by signal 9"), which an
        answer now would lack.  The answer goes only to a link still open
        by then."""
        def answer_unless_closed() -> None:
            if not stream.closed:
                CoreRouter._lost_on_send(self, msg, stream)
        if msg.reply_to:  # else nobody waits: nothing to answer
            self.loop.defer(self.loop.call_later, LOST_ON_SEND_WAIT,
                            answer_unless_closed)

    def _shut_down_by_us(self, context_id: int) -> bool:
        """Whether we asked *context_id*, or a context it was started
        through (which shuts down those below it first), to shut down."""
        return context_id in self.told_to_shut_down or \
            not self.told_to_shut_down.isdisjoint(
                self.ancestors.get(context_id, ()))

    def _on_the_way_to(self, src: int, context_id: int) -> bool:
        return src in self.ancestors.get(context_id, ())

    def _policy_allows(self, policy: Any, msg: Message) -> bool:
        if policy in (FROM_PARENT, FROM_CHILD, FROM_ANY) or \
                msg.stream is None:
            return super()._policy_allows(policy, msg)
        # A reply awaited from context *policy*: from it, or an error
        # answer of a router that could not pass the call on.
        return msg.src == policy or self._on_the_way_to(msg.src, policy)

    def _on_del_route(self, msg: Message) -> None:
        ids, reason = msg.value()
        self.lose([cid for cid in ids
                   if self.routes.get(cid) is msg.stream and
                   self._on_the_way_to(msg.src, cid)], reason)


class Router:
    """Starts contexts and routes their traffic; see the module docstring."""

    def __init__(self, threaded: bool = False,
                 max_message_size: int = DEFAULT_MAX_MESSAGE,
                 shutdown_timeout: float = 5.0,
                 send_bytecode: bool = True,
                 compilers: Interpreters = FROM_PATH) -> None:
        """*compilers*: where the master finds a Python of a context's
        version, other than its own, to compile the modules it sends
        that context: ``'path'`` (``pythonX.Y`` on PATH), a mapping of
        ``'X.Y'`` to an interpreter, or None (such contexts compile what
        they import).  *send_bytecode* False: every context compiles."""
        interpreters = checked_interpreters(compilers)
        threaded = checked_flag('threaded', threaded)
        send_bytecode = checked_flag('send_bytecode', send_bytecode)
        max_message_size = checked_message_limit(max_message_size)
        shutdown_timeout = checked_wait('shutdown_timeout', shutdown_timeout)
        self.loop = Loop()
        self.core = MasterCore(self.loop, MASTER_ID, max_message_size)
        self.responder = ModuleResponder(self.core)
        # Off: contexts compile what they import (fewer bytes, more target
        # CPU; a slow link).
        self.responder.send_bytecode = send_bytecode
        if send_bytecode and interpreters is not None:
            self.responder.compilers = ForeignCompilers(self.loop,
                                                        interpreters)
        self.core.add_handler(LOG_RECORD, self._on_log, FROM_CHILD)
        self.core.add_handler(HELLO, self._on_hello, FROM_CHILD)
        self.boots: dict[int, Boot] = {}  # direct children still booting
        # Contexts up now: a master that starts thousands over its life
        # keeps none that is gone (each holds its link, ~25 KiB).
        self.contexts: dict[int, MasterContext] = {}
        self.contexts_started = 0  # over the router's life
        self.core.on_lost.append(self._forget)
        self.streams: list = []       # links to our direct children
        self.ids = itertools.count(1)
        self.shutdown_timeout = shutdown_timeout
        self.stopping = False
        self.lock = threading.Lock()
        self.starts = StartsInFlight(self.lock)
        # Whether a shutdown has freed everything: one interrupted while
        # it freed (a second Ctrl-C) is finished by the next shutdown(),
        # unless it still runs (another thread's).
        self.freed = False
        self.shutting_down = False
        if threaded:
            self.loop.start_thread(lambda: self.stopping)
        interrupts.guard(self.loop)
        _live_routers.add(self)

    @property
    def closed(self) -> bool:
        """Shut down (or shutting down): it starts nothing more."""
        return self.starts.closed

    def __enter__(self) -> "Router":
        return self

    def __exit__(self, *exc_info) -> None:
        self.shutdown()

    # ------------------------------------------------- starting contexts

    def local(self, python_path: PythonPath = None, name: Optional[str] = None,
              connect_timeout: float = 30.0,
              via: Optional[MasterContext] = None) -> MasterContext:
        """Start a new Python interpreter on this machine (or *via*'s)."""
        return self._start('local', via, name, connect_timeout,
                           python_path=self._python(python_path, via))

    def ssh(self, hostname: str, port: Optional[int] = None,
            username: Optional[str] = None,
            identity_file: Optional[str] = None,
            password: Optional[str] = None, python_path: PythonPath = None,
            ssh_args: Optional[Sequence[str]] = None,
            ssh_path: Optional[str] = None, name: Optional[str] = None,
            connect_timeout: float = 30.0,
            via: Optional[MasterContext] = None,
            keepalive: Optional[tuple[int, int]] = SSH_KEEPALIVE,
            password_prompt: Optional[str] = None,
            prompt_timeout: Optional[float] = None,
            ) -> MasterContext:
        """Start Python on *hostname* through the system ssh client.
        *keepalive* = (seconds, count): ssh probes a quiet connection
        every *seconds* and gives up after *count* probes unanswered, so
        that a link that dies silently loses the context instead of
        leaving its calls waiting; None leaves it to ssh's configuration
        (ServerAlive options in *ssh_args* win either way).  The
        *password* is typed at a prompt ending in "password:" or
        "passphrase:" (any case; nothing after it, no line break: a line
        of a banner or ``.bashrc`` that ends so is no prompt), or with
        *password_prompt* given, at any output that contains that text.
        *prompt_timeout*, with a password: seconds the start may wait once
        ssh has written on its terminal something that is not that prompt
        (another prompt) and fallen silent; then it fails, naming what ssh
        wrote (see :meth:`su`).  Without a password it is checked but
        unused."""
        if password_prompt is not None and (
                not isinstance(password_prompt, str) or not password_prompt):
            raise ValueError('password_prompt must be a non-empty string, '
                             'not %r' % (password_prompt,))
        prompt_timeout = checked_prompt_timeout(prompt_timeout)
        return self._start('ssh', via, name, connect_timeout,
                           hostname=checked_name('hostname', hostname,
                                                 what='a host name'),
                           port=checked_port(port),
                           username=checked_user_name(username),
                           identity_file=checked_program(
                               'identity_file', identity_file),
                           password=checked_password(password),
                           python_path=python_path or 'python3',
                           ssh_args=checked_args('ssh_args', ssh_args,
                                                 ssh_method.refusal),
                           ssh_path=checked_program('ssh_path', ssh_path),
                           keepalive=checked_keepalive(keepalive),
                           password_prompt=password_prompt,
                           # Without a password ssh has no terminal, and
                           # its warnings on stderr are no prompt.
                           prompt_timeout=prompt_timeout
                           if password is not None else None)

    def sudo(self, username: str = 'root', password: Optional[str] = None,
             via: Optional[MasterContext] = None,
             python_path: PythonPath = None,
             sudo_args: Optional[Sequence[str]] = None,
             sudo_path: Optional[str] = None, name: Optional[str] = None,
             connect_timeout: float = 30.0,
             set_home: bool = True,
             prompt_timeout: Optional[float] = None) -> MasterContext:
        """Start Python as *username* through sudo, here or on *via*.
        *set_home*: run sudo with ``-H`` (HOME is *username*'s); False
        leaves HOME to sudo's policy and *sudo_args* (``-E`` keeps ours).
        *prompt_timeout*: see :meth:`su`."""
        return self._start('sudo', via, name, connect_timeout,
                           username=checked_user_name(username),
                           password=checked_password(password),
                           python_path=self._python(python_path, via),
                           sudo_args=checked_args('sudo_args', sudo_args,
                                                  sudo_method.refusal),
                           sudo_path=checked_program('sudo_path', sudo_path),
                           set_home=checked_flag('set_home',
                                                 set_home),
                           prompt_timeout=checked_prompt_timeout(
                               prompt_timeout))

    def su(self, username: str = 'root', password: Optional[str] = None,
           via: Optional[MasterContext] = None,
           python_path: PythonPath = None,
           su_args: Optional[Sequence[str]] = None,
           su_path: Optional[str] = None, name: Optional[str] = None,
           connect_timeout: float = 30.0,
           prompt_timeout: Optional[float] = None) -> MasterContext:
        """Start Python as *username* through su, here or on *via*; the
        password is typed at su's prompt on a private terminal.
        *prompt_timeout*: seconds the start may wait once the program has
        written something that is not a prompt we answer (a one-time code
        prompt nobody will answer) and fallen silent; then it fails.  None
        leaves only *connect_timeout* to bound it."""
        return self._start('su', via, name, connect_timeout,
                           username=checked_user_name(username),
                           password=checked_password(password),
                           python_path=self._python(python_path, via),
                           su_args=checked_args('su_args', su_args,
                                                su_method.refusal),
                           su_path=checked_program('su_path', su_path),
                           prompt_timeout=checked_prompt_timeout(
                               prompt_timeout))

    def doas(self, username: str = 'root', password: Optional[str] = None,
             via: Optional[MasterContext] = None,
             python_path: PythonPath = None,
             doas_args: Optional[Sequence[str]] = None,
             doas_path: Optional[str] = None, name: Optional[str] = None,
             connect_timeout: float = 30.0,
             prompt_timeout: Optional[float] = None) -> MasterContext:
        """Start Python as *username* through doas, here or on *via*; a
        password is typed at doas's prompt on a private terminal.
        *prompt_timeout*: see :meth:`su`."""
        return self._start('doas', via, name, connect_timeout,
                           username=checked_user_name(username),
                           password=checked_password(password),
                           python_path=self._python(python_path, via),
                           doas_args=checked_args('doas_args', doas_args),
                           doas_path=checked_program('doas_path', doas_path),
                           prompt_timeout=checked_prompt_timeout(
                               prompt_timeout))

    def docker(self, container: str, username: Optional[str] = None,
               via: Optional[MasterContext] = None,
               python_path: PythonPath = None,
               exec_args: Optional[Sequence[str]] = None,
               docker_path: Optional[str] = None, name: Optional[str] = None,
               connect_timeout: float = 30.0,
               docker_args: Optional[Sequence[str]] = None) -> MasterContext:
        """Start Python inside the running *container* through ``docker
        exec``, here or on *via*: as *username* (``--user``: a name or
        uid[:gid] the container knows) or the container's own user.
        *python_path* is an interpreter of the container's (default
        ``python3`` on its PATH); *exec_args* go to ``docker exec`` before
        the container (``-e``, ``-w``, ``--privileged``), *docker_args*
        to ``docker`` before ``exec`` (``--context``, ``--host``)."""
        return self._start_in_container(
            'docker', container, username, via, python_path, exec_args,
            name, connect_timeout,
            docker_path=checked_program('docker_path', docker_path),
            client_args=checked_args('docker_args', docker_args))

    def podman(self, container: str, username: Optional[str] = None,
               via: Optional[MasterContext] = None,
               python_path: PythonPath = None,
               exec_args: Optional[Sequence[str]] = None,
               podman_path: Optional[str] = None, name: Optional[str] = None,
               connect_timeout: float = 30.0,
               podman_args: Optional[Sequence[str]] = None) -> MasterContext:
        """As :meth:`docker`, through ``podman exec``; *podman_args* go to
        ``podman`` before ``exec`` (``--remote``, ``--url``, ``--root``)."""
        return self._start_in_container(
            'podman', container, username, via, python_path, exec_args,
            name, connect_timeout,
            podman_path=checked_program('podman_path', podman_path),
            client_args=checked_args('podman_args', podman_args))

    def lxc(self, container: str, via: Optional[MasterContext] = None,
            python_path: PythonPath = None,
            attach_args: Optional[Sequence[str]] = None,
            lxc_attach_path: Optional[str] = None, name: Optional[str] = None,
            connect_timeout: float = 30.0) -> MasterContext:
        """Start Python inside the running LXC *container* through
        ``lxc-attach --clear-env``, here or on *via*, as the container's
        root; *attach_args* go to lxc-attach (``--uid``, ``--keep-env``).
        *python_path*: as for :meth:`docker`."""
        return self._start('lxc', via, name, connect_timeout,
                           container=checked_container(container),
                           python_path=_target_python(python_path),
                           attach_args=checked_args('attach_args',
                                                    attach_args),
                           lxc_attach_path=checked_program('lxc_attach_path',
                                                           lxc_attach_path))

    def kubectl(self, pod: str, container: Optional[str] = None,
                namespace: Optional[str] = None,
                via: Optional[MasterContext] = None,
                python_path: PythonPath = None,
                kubectl_args: Optional[Sequence[str]] = None,
                exec_args: Optional[Sequence[str]] = None,
                kubectl_path: Optional[str] = None,
                kubectl_env: Optional[Mapping[str, str]] = None,
                name: Optional[str] = None,
                connect_timeout: float = 30.0) -> MasterContext:
        """Start Python inside *pod* of a Kubernetes cluster through
        ``kubectl exec -i``, here or on *via*: in its *container* (default:
        the one kubectl picks) of *namespace* (default: the kubeconfig
        context's), as the user the container runs as.  *kubectl_args* go
        before ``exec`` (``--kubeconfig``, ``--context``), *exec_args*
        after it; *kubectl_env* adds to kubectl's environment (given to
        the program, not on its command line).  *python_path*: as for
        :meth:`docker`."""
        return self._start('kubectl', via, name, connect_timeout,
                           pod=checked_name('pod', pod),
                           container=checked_name('container', container,
                                                  optional=True),
                           namespace=checked_name('namespace', namespace,
                                                  optional=True),
                           python_path=_target_python(python_path),
                           kubectl_args=checked_args('kubectl_args',
                                                     kubectl_args),
                           exec_args=checked_args('exec_args', exec_args),
                           kubectl_path=checked_program('kubectl_path',
                                                        kubectl_path),
                           program_env=checked_env('kubectl_env',
                                                   kubectl_env))

    def _start_in_container(self, method: str, container: str,
                            username: Optional[str],
                            via: Optional[MasterContext],
                            python_path: PythonPath,
                            exec_args: Optional[Sequence[str]],
                            name: Optional[str], connect_timeout: float,
                            **client: Any) -> MasterContext:
        return self._start(method, via, name, connect_timeout,
                           container=checked_container(container),
                           username=checked_user(username),
                           python_path=_target_python(python_path),
                           exec_args=checked_args('exec_args', exec_args),
                           **client)

    def setns(self, pid: int, via: Optional[MasterContext] = None,
              python_path: PythonPath = None,
              namespaces: Optional[Sequence[str]] = None,
              nsenter_path: Optional[str] = None, name: Optional[str] = None,
              connect_timeout: float = 30.0) -> MasterContext:
        """Start Python inside the namespaces of process *pid* (a
        container's first process, say) on this machine or *via*'s,
        through util-linux's ``nsenter``; needs root (or CAP_SYS_ADMIN)
        there.  *namespaces*: None enters every one the process does not
        share with its parent context (``nsenter --all``), or name some of
        mount, uts, ipc, net, pid, cgroup, user, time.  The root directory
        is the process's, so *python_path* (default ``python3``) is looked
        up in its filesystem."""
        return self._start('setns', via, name, connect_timeout,
                           pid=checked_pid(pid),
                           namespaces=checked_namespaces(namespaces),
                           python_path=_target_python(python_path),
                           nsenter_path=checked_program('nsenter_path',
                                                        nsenter_path))

    def _python(self, python_path: PythonPath,
                via: Optional[MasterContext]) -> Any:
        if python_path is not None:
            return checked_python_path(python_path)
        if via is not None:
            self._check_via(via)  # before it is asked for its Python
            return via.python_path or 'python3'
        return sys.executable

    def _check_via(self, via: Any) -> None:
        """*via* must be None or a context of this router: another's id
        means another context here, or none."""
        if via is None:
            return
        if not isinstance(via, Context):
            raise TypeError('via must be None or a context, not %s'
                            % type(via).__name__)
        if via.router is not self.core:
            raise ValueError('cannot start a context via %s: it is a '
                             'context of another router' % via.name)

    def _start(self, method: str, via: Optional[MasterContext],
               name: Optional[str], connect_timeout: float,
               **options: Any) -> MasterContext:
        if self.closed:
            raise ConnectError('this router has been shut down')
        self._check_via(via)
        if via is not None and not via.is_alive():
            lost = self.core.lost_error(via.context_id)
            raise ViaLost('cannot start a context via %s: %s'
                          % (via.name, lost), lost.said)
        connect_timeout = checked_seconds('connect_timeout', connect_timeout,
                                          LONGEST_CONNECT_TIMEOUT)
        if name is not None and not isinstance(name, str):
            raise TypeError('name must be None or a string, not %r'
                            % (name,))
        if 'python_path' in options:
            options['python_path'] = checked_python_path(
                options['python_path'])
        self._sweep()
        context_id = next(self.ids)
        spec = dict(options, method=method, context_id=context_id,
                    connect_timeout=connect_timeout)
        spec['name'] = name or self._default_name(method, spec, context_id)
        spec['master_version'] = platform.python_version()
        spec['log_level'] = context_log.level_of(spec['name'])
        # An intermediary has its own copy of the module: the master's
        # value travels with the start.
        spec['watchdog_grace'] = watchdog.GRACE
        if not self.starts.begin():
            raise ConnectError('this router has been shut down')
        try:
            if via is None:
                context = self._start_direct(spec)
            else:
                context = self._start_via(spec, via)
        except Exception as exc:
            if self.closed:
                raise self._shut_down_meanwhile(spec) from exc
            raise
        finally:
            self.starts.end()
        if self.closed:  # the shutdown stops it (or has stopped it)
            raise self._shut_down_meanwhile(spec)
        return context

    @staticmethod
    def _shut_down_meanwhile(spec: dict) -> ConnectError:
        return ConnectError('%s: the router was shut down while it started'
                            % spec['name'])

    @staticmethod
    def _default_name(method: str, spec: dict, context_id: int) -> str:
        module = spawn.method_module(method)
        return '%s.%d' % (module.default_name(spec), context_id)

    @interrupts.whole  # no program left running, unknown to the router
    def _start_direct(self, spec: dict) -> MasterContext:
        """Start a child of the master; it returns once the child's Python
        is up, and the core boots while the first calls travel."""
        context_id = spec['context_id']
        boot = Boot(self.loop, spec['name'], spawn.connect_timeout(spec))
        self.boots[context_id] = boot  # before its HELLO can come
        procs: list = []

        def started(proc) -> None:
            procs.append(proc)
            self.starts.process_started(proc)
        try:
            stream, ready = spawn.connect(self.core, spec, build_blob(),
                                          watch_boot=boot.watch,
                                          on_process=started)
        except BaseException:
            del self.boots[context_id]
            self.starts.forget(procs)
            raise
        python = spawn.python_of(ready)
        if python is not None:
            # From its ready marker: the modules pushed ahead of the first
            # call, before its HELLO, can carry code for its version.
            self.responder.pythons[context_id] = python
        context = MasterContext(self, context_id, spec['name'], None, None,
                                stream, boot)
        if not self.starts.accept(procs, lambda: self._keep(context, stream)):
            self._discard_late(context)
        return context

    def _on_hello(self, msg: Message) -> None:
        boot = self.boots.pop(msg.src, None)
        if boot is None:
            # Taken once, as the context boots: a later one could claim
            # another Python (so another compile helper) for its imports.
            return
        info = msg.value()
        python = spawn.python_of(info)
        if python is not None:
            self.responder.pythons[msg.src] = python
        boot.on_hello(info)

    @interrupts.whole  # no context left running, unknown to the router
    def _start_via(self, spec: dict, via: MasterContext) -> MasterContext:
        new_id = spec['context_id']
        # Every hop between us and *via* must learn the new route before
        # the new context's first message can pass through it.
        path = self._path_to(via)
        for hop, next_hop in zip(path, path[1:]):
            self.core.send(Message.encoding(hop.context_id, MASTER_ID,
                                            ADD_ROUTE,
                                            (new_id, next_hop.context_id)))
        self.core.ancestors[new_id] = frozenset(c.context_id for c in path)
        self.core.add_route(new_id, self.core.routes[path[0].context_id])
        # connect_child imports the method's module by name, which the
        # push of connect_child's own module cannot see.
        self.responder.push(path[0].context_id,
                            spawn.method_module_name(spec['method']))
        own_limit = longest_start_of(spec)
        longest = own_limit + VIA_MARGIN
        try:
            # The intermediary enforces connect_timeout itself; the margin
            # covers a hop that stops answering altogether.
            info = via.call_async(spawn.connect_child, spec).result(
                timeout=longest)
        except CallError as exc:
            # Not a failed start (connect_child returns its ConnectError),
            # but a call that could not run there: its module not delivered
            # (larger than max_message_size), an error of ours.  It ended,
            # so nothing is left to stop.
            self.core.lose([new_id], 'start-up failed')
            raise ConnectError('cannot start %s via %s: %s' % (
                spec['name'], via.name,
                '%s: %s' % (exc.type_name, exc.message))) from exc
        except BaseException as exc:
            self._stop_late_start(via, new_id)
            self.core.lose([new_id], 'start-up failed')
            if isinstance(exc, TimeoutError):  # a start's failure, named
                raise ConnectError(
                    'cannot start %s via %s: %s did not answer within %ds '
                    '(its own limit for the start was %ds)' % (
                        spec['name'], via.name, via.name, longest,
                        own_limit)) from None
            if isinstance(exc, ContextLost):
                raise ViaLost('cannot start %s via %s: %s' % (
                    spec['name'], via.name, exc), exc.said) from exc
            raise
        if isinstance(info, ConnectError):  # the start failed there
            self.core.lose([new_id], 'start-up failed')
            raise info
        self.responder.started_via(new_id, via.context_id,
                                   spawn.python_of(info))
        context = MasterContext(self, new_id, spec['name'], via, info)
        if not self.starts.accept([], lambda: self._keep(context)):
            self._discard_late(context)
        return context

    @staticmethod
    def _stop_late_start(via: MasterContext, context_id: int) -> None:
        """A start via *via* we stopped waiting for (interrupted, timed
        out) may still succeed there: *via* runs its calls one at a time,
        so a call sent now stops that context once the start has ended."""
        try:
            via.call_no_reply(spawn.stop_child, context_id)
        except Exception:
            pass  # *via* is gone, and its children with it

    def _keep(self, context: MasterContext, stream=None) -> None:
        """Count and keep a started context; under self.lock."""
        if stream is not None:
            self.streams.append(stream)
        self.contexts_started += 1
        self.contexts[context.context_id] = context
        if not context.is_alive():  # lost before it was kept
            self.contexts.pop(context.context_id, None)

    def _discard_late(self, context: MasterContext) -> None:
        """A context that came up after the shutdown stopped waiting for
        starts: stopped here (its process killed, a remote one told)."""
        stream = context.stream
        context.note_shut_down()
        if stream is None:
            try:
                self.core.send(Message(context.context_id, MASTER_ID,
                                       SHUTDOWN))
            except Exception:
                pass  # its intermediary was told to shut down: it ends too
            return
        stream.process.kill()
        loop = self.loop
        if loop.try_own():
            try:
                stream.close()
            finally:
                loop.disown()
        else:
            loop.defer(stream.close)
        spawn.reap(stream.process, 1.0)
        stream.process.close_all()

    def _forget(self, ids: list[int]) -> None:
        for context_id in ids:
            self.contexts.pop(context_id, None)

    @staticmethod
    def _path_to(context: MasterContext) -> list:
        path = []
        while context is not None:
            path.append(context)
            context = context.via
        return path[::-1]

    def context_for(self, context_id: int, name: str) -> Context:
        """What a context reference in a message decodes to."""
        context = self.contexts.get(context_id)
        if context is None:
            return ReferencedContext(self.core, context_id, name,
                                     context_factory=self.context_for)
        return context

    # ------------------------------------------------------------ logs

    def _on_log(self, msg: Message) -> None:
        origin, level, text = msg.value()
        context = self.contexts.get(msg.src)
        name = context.name if context else 'context-%d' % msg.src
        if not isinstance(level, int):
            level = logging.INFO
        context_log.log(name, level, '%s', (text,), extra={
            'plasmid_context': name, 'plasmid_origin': origin})

    # -------------------------------------------------------- shutdown

    def _release(self, stream) -> None:
        """Forget a finished direct child once its process is reaped."""
        if stream.process is not None and stream.process.poll() is not None:
            loop = self.loop
            if not loop.owned_here():
                # The fds belong to the loop's owner (ErrorOutput may be
                # reading stderr): close them as the owner, or let it.
                if loop.try_own():
                    try:
                        self._release(stream)
                    finally:
                        loop.disown()
                else:
                    loop.defer(self._release, stream)
                return
            if stream.process.stderr is not None:
                self.loop.remove_fd(stream.process.stderr)
            stream.process.close_all()
            with self.lock:
                if stream in self.streams:
                    self.streams.remove(stream)

    def _sweep(self) -> None:
        """Reap direct children that have exited, without blocking; forget
        the boots that failed."""
        for stream in list(self.streams):
            if stream.closed:
                self._release(stream)
        for context_id, boot in list(self.boots.items()):
            if boot.error is not None:
                self.boots.pop(context_id, None)

    def shutdown(self, timeout: Any = SHUTDOWN_TIMEOUT) -> None:
        """Stop every context, wait for them at most *timeout* seconds
        (by default the router's ``shutdown_timeout``; None: no limit, as
        for ``result()``), and free every resource."""
        if self.closed:
            # An interrupted shutdown's end; not one another thread runs.
            if not self.freed and not self.shutting_down:
                self._free_everything(time.monotonic(), kill=True)
            return
        if threading.current_thread() is self.loop.thread:
            # It would wait on the loop it stops, then join itself.
            raise RuntimeError(
                "a threaded router cannot be shut down from its own I/O "
                "thread, where a future's callback or a handler of "
                "plasmid.ctx.* logs runs: shut it down from another thread")
        timeout = self.shutdown_timeout if timeout is SHUTDOWN_TIMEOUT \
            else checked_wait('timeout', timeout)
        deadline = time.monotonic() + timeout
        self.shutting_down = True
        try:
            self._shut_down_by(deadline)
        finally:
            self.shutting_down = False

    def _shut_down_by(self, deadline: float) -> None:
        for proc in self.starts.close():
            proc.kill()  # its start fails at once
        try:
            told = self._tell_to_shut_down(set(), deadline)
            # Starts via others fail as those leave; one that got its
            # context up meanwhile has kept it, to be told now.
            self.starts.wait(deadline)
            self._tell_to_shut_down(told, deadline)
            self._wait_streams_closed(deadline)
        except BaseException:
            # Ctrl-C in a wait: what is still up ends now, killed, rather
            # than running on behind a router that counts as shut down.
            self._free_everything(time.monotonic(), kill=True)
            raise
        self._free_everything(deadline)

    def _free_everything(self, deadline: float, kill: bool = False) -> None:
        """The end of a shutdown: stop the loop, close every link, reap
        (killing what has not exited by *deadline*, or at once with
        *kill*) and release it all.  Interrupted, the next shutdown()
        takes it up again (each step may be done twice)."""
        self._stop_loop()
        streams = list(self.streams)
        for stream in streams if kill else ():
            if stream.process is not None:
                stream.process.kill()
        for stream in streams:
            stream.close()  # the loop is stopped: safe from this thread
            if stream.process is not None:
                left = deadline - time.monotonic()
                spawn.reap(stream.process, max(0.1, left))
            self._release(stream)
        for boot in list(self.boots.values()):  # a start may still end
            boot.end_unheard()
        self.responder.close()
        interrupts.release(self.loop)
        _live_routers.discard(self)
        # Last: closed twice, its fd numbers might be another file's.
        self.loop.close()
        self.freed = True

    def forsake(self) -> None:
        """In a fork: let go of every link without a word to the other
        end.  /dev/null takes the links' fd numbers (another open could
        reuse them otherwise, for a stream of ours to close later); the
        links closed, calls through this router fail at once."""
        # Locks another thread held as the fork was made stay held here;
        # the loop's owner and wake-up pipe are the parent's.
        self.lock = threading.Lock()
        self.starts = StartsInFlight(self.lock)
        self.starts.closed = True  # shutdown() has nothing to do
        self.freed = True
        self.core.lock = threading.Lock()
        self.responder.take_fresh_locks()
        interrupts.release(self.loop)
        self.loop.renew()
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for stream in self.streams:
                stream.let_go(null)  # as a context's fork does (child.py)
        finally:
            os.close(null)
        # Calls made before the fork wait here too: they fail now, or
        # would wait for ever for a reply that goes to the parent.
        self.core.lose(list(self.core.routes), 'this process is a fork of '
                       "the master's: its links are the parent's")

    def _tell_to_shut_down(self, told: set, deadline: float) -> set:
        """Send SHUTDOWN to each live context not in *told*, the deepest
        first, with the seconds left until *deadline* (what it has queued
        for us may take them); return the ids told, *told*'s with them."""
        for context in list(self.contexts.values())[::-1]:
            if context.is_alive() and context.context_id not in told:
                told.add(context.context_id)
                context.note_shut_down()
                self.core.send(Message.encoding(
                    context.context_id, MASTER_ID, SHUTDOWN,
                    max(0.0, deadline - time.monotonic())))
        return told

    def _wait_streams_closed(self, deadline: float) -> None:
        def all_closed() -> bool:
            return all(s.closed for s in self.streams)
        if self.loop.threaded:
            while not all_closed() and time.monotonic() < deadline:
                time.sleep(0.005)
        else:
            left = deadline - time.monotonic()
            self.loop.run_until(all_closed, max(0.0, left))

    def _stop_loop(self) -> None:
        thread = self.loop.thread
        if thread is not None:
            self.stopping = True
            self.loop.wake()
            thread.join(5.0)
            self.loop.thread = None


def _forsake_in_fork() -> None:
    """In a fork of the master (os.fork, a multiprocessing worker): the
    routers are the parent's.  The fork lets go of their links, which it
    would hold open while it lives, keeping the parent's contexts running
    after the parent died (they exit when their input ends); and leaves
    them out of its exit, which shut the parent's contexts down."""
    routers = list(_live_routers)
    _live_routers.clear()
    for router in routers:
        router.forsake()


os.register_at_fork(after_in_child=_forsake_in_fork)


@atexit.register
def _shutdown_all() -> None:
    """Routers the program forgot to shut down are shut down at exit."""
    for router in list(_live_routers):
        try:
            router.shutdown(timeout=2.0)
        except Exception:
            pass
