"""The broker's contexts: one per (login, interpreter, become user),
started on first use and kept for the run, with what each holds (module
payloads, calls sent ahead, temp dir bases).

A login context is started by the router method its spec names
(``router.ssh``; ``router.local``, ``router.podman``, ``router.docker``
for those connections); a become user's by the router method of the
become method's name (sudo, su, doas), through the login context.  An ssh
login that fails as a connection is tried again up to the plugin's
``reconnection_retries``; tasks at once on one login each get a context (a
*lane*, see Pool).
"""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, NamedTuple, Optional

import plasmid
from plasmid.core.errors import ConnectError, ContextLost
from plasmid.connect import spawn
from plasmid.ansible import kubectl_login, target
from plasmid.ansible.machines import account_of, machine_of

LOG = logging.getLogger('plasmid.ansible.pool')

# Start a login context with the first Python the account's shell finds:
# ansible discovers the module interpreter later, usually the same one.
FIND_PYTHON = ['/bin/sh', '-c',
               'for p in python3 /usr/bin/python3 /usr/libexec/platform-python'
               ' python; do command -v "$p" >/dev/null 2>&1 && exec "$p" "$@";'
               ' done; echo "plasmid: no python found" >&2; exit 127', 'sh']

# How long a task waits for a lane of its login to be let go before it
# starts another: a worker's broker thread lets go once it sees the worker
# hang up, which may come a little after the next task's worker asks.
RELEASE_WAIT = 0.25

# At most this many lanes of one login start at once.  sshd's default
# MaxStartups (10:30:100) drops connections at random beyond ten that
# have not logged in yet, so many tasks delegated at once to one host
# would otherwise lose some of their logins (as vanilla's do).
MAX_STARTING = 8

# A new lane whose login fails while another lane of that login lives
# (or comes up among the starts under way) is tried again up to this many
# times, pausing LANE_RETRY_PAUSE seconds, then twice that, ... (and taking
# a lane let go meanwhile): the host answers, so the failure is most
# likely the load of the moment (MaxStartups, counting other clients'
# connections, or many tasks' first logins at once).
LANE_RETRIES = 3
LANE_RETRY_PAUSE = 0.5

# A lane beyond its login's first that no task has held for this many
# seconds is shut down, with the become lanes started through it: a busy
# moment's lanes (fifty hosts delegating to one) need not keep fifty
# interpreters on that host for the rest of the run.  As long as the idle
# master connection ansible's ssh keeps (ControlPersist=60s), so a play
# whose tasks come back within a minute finds its lanes up.  The broker
# takes another from PLASMID_ANSIBLE_LANE_IDLE (``Pool(lane_idle=...)``).
LANE_IDLE = 60.0

# Become methods the router starts interpreters with (connection.py's
# HOSTED_BECOME maps plugin names onto these).
BECOME_METHODS = ('sudo', 'su', 'doas')
# Router methods a login spec's 'method' may name: the ssh connection's,
# the local connection's (an interpreter on the broker's machine) and the
# container connections' (one in a container there, or in a pod that
# kubectl there reaches).
LOGIN_METHODS = ('ssh', 'local', 'podman', 'docker', 'kubectl', 'lxc')


class BecomeFailed(Exception):
    """The login worked, becoming the other user did not.  ``kind`` says
    why, in the words the worker matches: ``become-password-refused``,
    ``become-password-missing``, or ``become`` for any other reason (the
    become program's usage, a missing program or Python, a stalled
    start)."""

    def __init__(self, cause: ConnectError) -> None:
        super().__init__(str(cause))
        if spawn.password_refused(cause):
            self.kind = 'become-password-refused'
        elif spawn.password_missing(cause):
            self.kind = 'become-password-missing'
        else:
            self.kind = 'become'


class SentAhead(NamedTuple):
    """A call sent without waiting for its answer, and what to do with that
    answer when a later call finds it come (None: nothing).  A failure
    fails that later call either way."""
    future: Any
    on_answer: Optional[Callable[[Any], None]] = None


class Target:
    """One context and what it holds."""

    def __init__(self, context: plasmid.Context) -> None:
        self.context = context
        self.zips: set[str] = set()
        # Digests of the payload files the context holds: a later zip
        # sends only the files that differ (module_utils are shared).
        self.files: set[str] = set()
        self.lock = threading.Lock()  # serialises zip uploads
        # Calls sent ahead without waiting: to a login context temp dirs,
        # small files and clean-up; to any context the zip files its next
        # module needs.  Only the thread holding this lane touches them.
        self._sent_ahead: list[SentAhead] = []
        self.homes: dict[str, tuple] = {}
        self.shells: set[str] = set()  # a login's: those found to run
        # The directory the context was moved to (the local connection's
        # commands run in the task's directory); None: where it started.
        self.cwd: Optional[str] = None
        # Temp dir bases (as ansible-core spells them) where a temp dir
        # was made: the path each names.
        self.tmp_bases: dict[str, str] = {}
        # The broker thread (one per worker, so per task) using it now;
        # None when idle, since idle_since (time.monotonic()).  See Pool.
        self.holder: Optional[int] = None
        self.idle_since = 0.0
        # Made stale (an account or sudo's rules changed) while another
        # thread's task used it: shut down when that task lets go.
        self.stale = False

    def send_ahead(self, entry: SentAhead) -> int:
        """Note a call sent ahead; return how many are now on their way."""
        self._sent_ahead.append(entry)
        return len(self._sent_ahead)

    def sent_ahead(self) -> list[SentAhead]:
        """The calls sent ahead and not yet collected, oldest first."""
        return list(self._sent_ahead)

    def all_answered(self) -> bool:
        """Whether every call sent ahead has its answer."""
        return all(entry.future.done() for entry in self._sent_ahead)

    def collect_finished(self) -> list[SentAhead]:
        """Take the calls sent ahead that have finished."""
        finished: list[SentAhead] = []
        waiting: list[SentAhead] = []
        for entry in self._sent_ahead:
            (finished if entry.future.done() else waiting).append(entry)
        self._sent_ahead = waiting
        return finished


class Pool:
    """Contexts by (login, interpreter, become), started on first use.

    A context runs one call at a time, so tasks that reach the same host
    and account at once (several hosts' tasks delegated to one, inventory
    names for one machine) must not queue in one context: vanilla runs
    them side by side, each over its own ssh session.  So each key has
    *lanes*: a broker thread (serving one worker, so one task) holds the
    lanes it uses until its worker is done (:meth:`release`); a thread
    that finds every lane of a key held starts another.  Tasks that come
    one after another all use the first lane, and a busy moment's lanes
    serve the rest of the run, unless idle for *lane_idle* seconds
    (:meth:`shut_idle_lanes`).  A become lane is used only by the thread
    holding the login lane it was started through, so that calls sent
    ahead to that login come before it (``target.relay``).
    """

    def __init__(self, router: plasmid.Router,
                 lane_idle: float = LANE_IDLE) -> None:
        self.router = router
        self.lane_idle = lane_idle
        self.targets: dict[tuple, list[Target]] = {}
        # Indexes, so that a task's lookups do not grow with the number of
        # hosts: the keys of each (login, become), the lanes each broker
        # thread holds.
        self.keys_of: dict[tuple, set[tuple]] = collections.defaultdict(set)
        self.held: dict[int, list[Target]] = {}
        self.login_retries = 0  # logins started again (reconnection_retries)
        self.lane_retries = 0  # extra lanes started again (LANE_RETRIES)
        self.idle_lanes_shut = 0  # lanes shut after lane_idle unused
        self.starting: collections.Counter = collections.Counter()
        self.lock = threading.Lock()
        self.released = threading.Condition(self.lock)

    def get(self, spec: dict, python: Optional[str]) -> Target:
        """This thread's context for *spec*: its login, then its become
        user."""
        login = _freeze(spec['login'])
        become = _freeze(spec.get('become'))
        if python is None:
            python = self._any_python(login, become)
        if not become:
            return self._lane(
                (login, python, None), None,
                lambda: self._log_in(dict(spec['login']), python))
        via = self.get({'login': spec['login'], 'become': None}, python)

        def start() -> plasmid.Context:
            try:
                return self._become(spec, spec['become'], via, python)
            except ContextLost:
                raise  # the login went (ViaLost): the host, not become
            except ConnectError as exc:
                raise BecomeFailed(exc) from None
        return self._lane((login, python, become), via, start)

    def release(self) -> None:
        """Let go of the lanes this thread holds: its worker is done.
        Those made stale meanwhile are shut down now."""
        me = threading.get_ident()
        now = time.monotonic()
        with self.lock:
            for found in self.held.pop(me, ()):
                if found.holder == me:
                    found.holder = None
                    found.idle_since = now
            stale = self._take_locked(
                lambda key, found: found.stale and found.holder is None)
            self.released.notify_all()
        for _, found in stale:
            found.context.shutdown(wait=False)

    def _lanes(self, key: tuple) -> list[Target]:
        """Under the lock: the lanes of *key*, an empty list at first."""
        lanes = self.targets.get(key)
        if lanes is None:
            lanes = self.targets[key] = []
            self.keys_of[key[0], key[2]].add(key)
        return lanes

    def _hold(self, found: Target, me: int) -> Target:
        """Under the lock: *found* is thread *me*'s until it lets go."""
        if found.holder != me:
            found.holder = me
            self.held.setdefault(me, []).append(found)
        return found

    def shut_idle_lanes(self) -> int:
        """Shut down the login lanes, but each login's first, that no task
        has held for *lane_idle* seconds and whose calls sent ahead (temp dir
        clean-ups) have all been answered, with the become lanes started
        through them; return how many contexts that was."""
        idle_before = time.monotonic() - self.lane_idle
        with self.lock:
            spare = self._idle_extra_logins(idle_before)
            doomed = self._take_locked(
                lambda key, found: id(found.context) in spare or
                id(found.context.via) in spare)
            self.idle_lanes_shut += len(doomed)
        # A login context takes the contexts started through it down.
        for _, found in doomed:
            if found.context.via is None or \
                    id(found.context.via) not in spare:
                found.context.shutdown(wait=False)
        return len(doomed)

    def start_shutting_idle_lanes(self) -> threading.Event:
        """Look for idle lanes (:meth:`shut_idle_lanes`) from a thread of
        their own, each second (or four times per *lane_idle*, if shorter,
        but at most ten times a second: each look takes the pool's lock),
        until the event returned is set (the broker never sets it: it ends
        with its process)."""
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(max(min(self.lane_idle / 4, 1.0), 0.1)):
                try:
                    self.shut_idle_lanes()
                except Exception:  # keep looking: the next round may do
                    LOG.exception('could not shut idle lanes')
        threading.Thread(target=run, name='plasmid-idle-lanes',
                         daemon=True).start()
        return stop

    def _idle_extra_logins(self, idle_before: float) -> set[int]:
        """Under the lock: ids of the contexts of the login lanes that
        :meth:`shut_idle_lanes` may shut: not the first living lane of any
        key they are known under, idle since before *idle_before*, their
        become lanes idle too, and nothing sent ahead to any of them still
        unanswered."""
        first = set()
        logins = {}
        for (_, _, become), lanes in self.targets.items():
            living = [t for t in lanes if t.context.is_alive()]
            if living:
                first.add(id(living[0].context))
            if become is None:
                logins.update((id(t.context), t) for t in living)
        through = collections.defaultdict(list)
        for (_, _, become), lanes in self.targets.items():
            if become is not None:
                for found in lanes:
                    through[id(found.context.via)].append(found)
        return {
            ident for ident, found in logins.items()
            if ident not in first and found.holder is None
            and found.idle_since < idle_before and found.all_answered()
            and all(t.holder is None and t.all_answered()
                    for t in through[ident])}

    def _idle_lane(self, key: tuple, via: Optional[Target],
                   me: int) -> Optional[Target]:
        """Under the lock: the lane of *key* held by *me*, else an idle one
        started through *via* (if given), else None.  Forgets dead ones."""
        lanes = self._lanes(key)
        lanes[:] = [t for t in lanes if t.context.is_alive()]
        for found in lanes:
            if found.holder == me:
                return found
        for found in lanes:
            if found.holder is None and (
                    via is None or found.context.via is via.context):
                return found
        return None

    def _any_python(self, login: tuple, become: tuple) -> Optional[str]:
        """The interpreter of a context of this login and become user:
        this thread's own first, then an idle one's."""
        me = threading.get_ident()
        with self.lock:
            known = [(_rank(found.holder, me), key[1])
                     for key in self.keys_of.get((login, become), ())
                     for found in self.targets[key]
                     if found.context.is_alive()]
        return min(known, key=lambda rank_py: rank_py[0])[1] \
            if known else None

    def _lane(self, key: tuple, via: Optional[Target], start) -> Target:
        """The lane of *key* this thread holds, else an idle one (started
        through *via*, for a become user), else a new one.  A login whose
        lanes are all held waits RELEASE_WAIT for one first, and starts at
        most MAX_STARTING more at once; a new lane of it that fails to
        start while others live is tried again (see LANE_RETRIES)."""
        me = threading.get_ident()
        wait = RELEASE_WAIT
        failures = 0
        while True:
            with self.lock:
                found = self._await_lane(key, via, me, wait, failures > 0)
                if found is not None:
                    return found
                self.starting[key] += 1
            try:
                made = Target(start())
            except BaseException as exc:
                with self.lock:
                    self._start_ended(key)
                    retry = (via is None and failures < LANE_RETRIES
                             and isinstance(exc, ConnectError)
                             and worth_retrying(exc)
                             and self._login_answers(key))
                    self.lane_retries += retry
                if not retry:
                    raise
                failures += 1
                wait = LANE_RETRY_PAUSE * 2 ** (failures - 1)
                continue
            with self.lock:
                self._hold(made, me)
                self._start_ended(key)
                self._lanes(key).append(made)
                if key[1] is None:  # started with the first Python found
                    login, _, become = key
                    self._lanes((login, made.context.python_path,
                                 become)).append(made)
            return made

    def _await_lane(self, key: tuple, via: Optional[Target], me: int,
                    wait: float, after_failure: bool) -> Optional[Target]:
        """Under the lock: hold and return the lane of *key* this thread
        may take, waiting up to *wait* seconds for one to be let go (and
        then as long as MAX_STARTING lanes are starting); None: start one.
        A become lane, or a login's first, starts at once, but for a pause
        after a failed start."""
        deadline = time.monotonic() + wait
        while True:
            found = self._idle_lane(key, via, me)
            if found is not None:
                return self._hold(found, me)
            left = deadline - time.monotonic()
            if via is not None or not self.targets[key]:
                if not after_failure or left <= 0:
                    return None
            elif left <= 0 and self.starting[key] < MAX_STARTING:
                return None
            self.released.wait(left if left > 0 else None)

    def _login_answers(self, key: tuple) -> bool:
        """Under the lock: whether a lane of *key* lives, once the starts
        under way have ended (each within its connection timeouts).  A
        host that answers none fails every task at once, as vanilla's."""
        while True:
            if any(t.context.is_alive() for t in self.targets.get(key, ())):
                return True
            if not self.starting[key]:
                return False
            self.released.wait()

    def _start_ended(self, key: tuple) -> None:
        """Under the lock: a start of *key* ended, well or not; wake the
        threads waiting for a lane or a start slot."""
        self.starting[key] -= 1
        self.released.notify_all()

    def _log_in(self, login: dict, python: Optional[str]) -> plasmid.Context:
        """The login's context, by the router method the spec names; an ssh
        login is tried again up to its ``retries`` times while it fails as
        a connection, pausing between tries as vanilla's ssh plugin does."""
        method = login.pop('method')
        login.pop('account', None)  # the login's user, for the broker
        if method not in LOGIN_METHODS:
            raise ValueError('no such login method: %r' % (method,))
        if method == 'kubectl':
            return _starting_sh_itself(kubectl_login.start(
                self.router, login, python or FIND_PYTHON))
        if method != 'ssh':
            start = getattr(self.router, method)
            return _starting_sh_itself(
                start(python_path=python or FIND_PYTHON, **login))
        retries = login.pop('retries', 0) or 0
        attempt = 0
        while True:
            try:
                return self.router.ssh(python_path=python or FIND_PYTHON,
                                       **login)
            except ConnectError as exc:
                if attempt >= retries or not worth_retrying(exc):
                    raise
            time.sleep(min(2 ** attempt - 1, 30))
            attempt += 1
            self.login_retries += 1

    def _become(self, spec: dict, options: dict, via: Target,
                python: Optional[str]) -> plasmid.Context:
        """Start the become user's interpreter with the router method of
        the same name (sudo, su, doas), whose arguments say the same."""
        method = options.get('method') or 'sudo'
        if method not in BECOME_METHODS:
            raise ValueError('no such become method: %r' % (method,))
        start = getattr(self.router, method)
        return start(**{
            'via': via.context,
            'username': options.get('username') or 'root',
            'password': options.get('password'),
            method + '_args': options.get('flags') or [],
            method + '_path': options.get('exe') or None,
            'python_path': python or via.context.python_path,
            'connect_timeout': spec['login'].get('connect_timeout') or 30,
            'prompt_timeout': options.get('prompt_timeout'),
            **(options.get('extra') or {})})

    def retire_account(self, spec: dict, username: str) -> int:
        """Shut down the contexts on *spec*'s machine that run as
        *username*: become contexts as that user, and the other logins as
        that account (usermod refuses to change a uid or home while a
        process of the account runs); the next task as that user starts
        one afresh."""
        login = _freeze(spec['login'])
        machine = machine_of(login)
        return self._shut_down(
            lambda key, _: machine_of(key[0]) == machine and (
                (key[2] is not None and
                 dict(key[2]).get('username') == username) or
                (key[0] != login and account_of(key[0]) == username)))

    def reset_account(self, spec: dict, username: str) -> int:
        """Shut down every context of the logins on *spec*'s machine as
        account *username* (its groups, fixed at login, changed)."""
        machine = machine_of(_freeze(spec['login']))
        return self._shut_down(
            lambda key, _: machine_of(key[0]) == machine and
            account_of(key[0]) == username)

    def reset_machine(self, spec: dict) -> int:
        """Shut down every context on *spec*'s machine (a group changed:
        any account's groups may have)."""
        machine = machine_of(_freeze(spec['login']))
        return self._shut_down(lambda key, _: machine_of(key[0]) == machine)

    def retire_become(self, spec: dict) -> int:
        """Shut down every become context on *spec*'s machine, whatever
        login it runs under (sudo's rules changed: each is checked again
        as it starts)."""
        machine = machine_of(_freeze(spec['login']))
        return self._shut_down(
            lambda key, _: machine_of(key[0]) == machine and
            key[2] is not None)

    def router_contexts(self) -> int:
        """Contexts started so far (a started context counts once even
        when it is known under two interpreter names)."""
        return self.router.contexts_started

    def reset(self, spec: dict) -> int:
        """Shut down every context of *spec*'s login, every lane; the next
        task starts afresh (``meta: reset_connection``)."""
        login = _freeze(spec['login'])
        return self._shut_down(lambda key, _: key[0] == login)

    def abandon(self, spec: dict, busy) -> int:
        """Forget this thread's lane of *spec*'s login and the become lanes
        started through it: one of them runs a call whose worker has gone
        (future *busy*).  They are shut down once it finishes (or with the
        run); the host's next task takes another lane or starts one, as its
        vanilla counterpart opens a new ssh session, instead of queueing
        behind that call.  Other tasks' lanes go on."""
        login = _freeze(spec['login'])
        me = threading.get_ident()
        with self.lock:
            mine = [t for (lg, _, bc), lanes in self.targets.items()
                    if lg == login and bc is None
                    for t in lanes if t.holder == me]
        contexts = {id(t.context) for t in mine}
        doomed = self._take(lambda key, found: key[0] == login and (
            id(found.context) in contexts or
            id(found.context.via) in contexts))

        # A login context takes the contexts it started down with it.
        def shut_down(_future) -> None:
            for found in mine:
                found.context.shutdown(wait=False)
        busy.add_done_callback(shut_down)
        return len(doomed)

    def _take(self, chosen) -> list[tuple[tuple, Target]]:
        """Remove the contexts that *chosen* picks (by key and lane) from
        the pool; return each once, with one of its keys (a login started
        with the first Python found is known under two, which differ only
        in the interpreter)."""
        with self.lock:
            return self._take_locked(chosen)

    def _take_locked(self, chosen) -> list[tuple[tuple, Target]]:
        """:meth:`_take`, under the lock."""
        taken = {}
        for key, lanes in self.targets.items():
            for found in lanes:
                if chosen(key, found):
                    taken.setdefault(id(found), (key, found))
        for lanes in self.targets.values():
            lanes[:] = [t for t in lanes if id(t) not in taken]
        return list(taken.values())

    def _shut_down(self, chosen) -> int:
        """Shut down the contexts that *chosen* picks, become contexts
        before the login contexts they run under.  One that another
        thread's task is using is marked stale instead, and shut down when
        that task lets go (``release``): its task ends as it began."""
        me = threading.get_ident()
        with self.lock:
            picked = {id(found): found for key, lanes in self.targets.items()
                      for found in lanes if chosen(key, found)}
            for found in picked.values():
                if found.holder not in (None, me):
                    found.stale = True
            doomed = self._take_locked(
                lambda key, found: id(found) in picked and not found.stale)
        for key, found in sorted(doomed, key=lambda kt: kt[0][2] is None):
            try:
                found.context.shutdown(wait=True, timeout=5.0)
            except plasmid.Error:
                pass
        return len(picked)


def _rank(holder: Optional[int], me: int) -> int:
    """Lanes in the order a thread would take them: its own, idle, held."""
    return 0 if holder == me else 1 if holder is None else 2


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _starting_sh_itself(context: plasmid.Context) -> plasmid.Context:
    """A login *context* whose vanilla plugin starts ``/bin/sh`` itself
    (local, the containers'), not through the account's shell as sshd
    does: its first call says so (``target.commands_start_sh``), so that
    its commands get no ``_`` such a shell would have exported.  A context
    whose boot failed is left to say so at its first call, as before."""
    try:
        context.call_no_reply(target.commands_start_sh)
    except plasmid.Error:
        pass
    return context


def worth_retrying(exc: ConnectError) -> bool:
    """Whether a login that failed is tried again (up to the plugin's
    ``reconnection_retries``), as vanilla tries ssh again when it fails as
    a connection: not when the interpreter is missing, nor when ssh asked
    again for the password we typed (vanilla stops at sshpass's refusal,
    so as not to lock the account)."""
    return not (spawn.python_missing(exc) or spawn.password_refused(exc))
