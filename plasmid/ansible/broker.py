"""The broker: one process per ansible-playbook run that holds its contexts.

ansible-core forks a worker per task, and a connection plugin dies with its
worker; the interpreters we keep on the targets must outlive them.  The
first worker that needs one starts this broker (``client.py``); it owns a
threaded plasmid Router with one context per (host, account, interpreter),
and serves every later worker over a UNIX socket.  It exits, shutting all
its contexts down, when the ansible-playbook process it serves is gone.

Run as ``python -m plasmid.ansible.broker SOCKET WATCH_PID``; prints
``ready`` on stdout once it accepts connections.
"""
from __future__ import annotations

import collections
import contextlib
import errno
import json
import logging
import os
import socket
import stat
import struct
import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Iterator, Optional

import plasmid
from plasmid.ansible import (account_changes, chores, commands, hangup,
                             target, wire, zips)
from plasmid.ansible.client import Client, process_alive
from plasmid.ansible.pool import (LANE_IDLE, BecomeFailed, Pool, SentAhead,
                                  Target)
from plasmid.core.errors import CallError, ConnectError, ContextLost
from plasmid.connect import process, spawn
from plasmid.files.transfer import temp_beside

LOG = logging.getLogger('plasmid.ansible.broker')


# Calls sent ahead to one login context that may be on their way at once
# (file chunks are FILE_CHUNK, 4 MiB: 16 MiB in flight keeps a 50 ms link
# busy at 320 MB/s).
WINDOW = 4
FILE_CHUNK = 4 << 20

# A command's or module's output beyond this many bytes stays in its
# context and comes over in FILE_CHUNK pieces, WINDOW on their way, so
# that no result is too large for one message.  PLASMID_ANSIBLE_HOLD_ABOVE
# sets it (bytes); it is kept under half of CONTEXT_MAX_MESSAGE, the bound
# on any one message from a context (a zip, a chunk, a smaller result).
HOLD_ABOVE = 64 << 20
CONTEXT_MAX_MESSAGE = 1 << 30


class ZipWanted(Exception):
    """A module run named a payload the context has not got: the worker
    sends it again with the zip."""


class RunFromScript(Exception):
    """The module must run from its AnsiballZ script, not from RAM
    (``zips.needs_disk``): the worker runs the script as a command."""


def _runs_as_sudo_job(spec: dict) -> bool:
    """Whether a hosted command runs as sudo would run it on a terminal:
    sudo (use_pty, its default since 1.9.14 and Debian's before) gives the
    command a terminal of its own and leaves what it started in the
    background running when it ends; su and doas do not, so under them
    such a process goes with the terminal, as it does here by default."""
    become = spec.get('become')
    return bool(become) and become['method'] == 'sudo'


class Broker:
    """Serves requests from worker processes, one thread per worker."""

    def __init__(self, router: plasmid.Router,
                 hold_above: int = HOLD_ABOVE,
                 lane_idle: float = LANE_IDLE,
                 staying: bool = True) -> None:
        self.pool = Pool(router, lane_idle)
        self.hold_above = min(hold_above, CONTEXT_MAX_MESSAGE // 2)
        # Off: no module process stays for a later task (target.py).
        self.staying = staying
        self.zips = zips.ZipStore()
        # What crossed to the targets, for tests and benchmarks: module
        # runs, shell commands (hosted or as given), zips, files, contexts.
        self.counts: collections.Counter = collections.Counter()
        # pids of the processes that sent requests: one per forked worker,
        # or only ansible-playbook itself when its tasks run on threads.
        self.client_pids: set[int] = set()
        self._local = threading.local()  # per worker thread: its watch
        self.ops = {
            'module': self.run_module, 'shell': self.run_shell,
            'put-file': self.put_file, 'fetch-file': self.fetch_file,
            'reset': self.reset, 'ping': lambda: 'pong',
            'stats': self.stats, 'home': self.home, 'mkdtemp': self.mkdtemp,
            'later': self.later, 'cleanup': self.cleanup,
            'shell-runs': self.shell_runs,
        }

    def serve(self, conn: socket.socket) -> None:
        pid = peer_pid(conn)
        watch = self._local.watch = hangup.HangupWatch(conn)
        try:
            with conn:
                while True:
                    request = wire.receive(conn)
                    self.client_pids.add(pid)
                    self._send_answer(conn, self.answer(request))
        except (wire.BrokerGone, OSError, hangup.WorkerGone):
            return  # the worker is gone: nobody to answer
        finally:
            watch.close()
            self.pool.release()  # its task is over: its lanes are free

    @staticmethod
    def _send_answer(conn: socket.socket, answer: tuple) -> None:
        try:
            wire.send(conn, answer)
        except wire.Unsendable as exc:
            wire.send(conn, ('error', 'broker',
                             'the result could not be sent: %s' % exc))

    def answer(self, request: Any) -> tuple:
        """The answer to *request*, with the warnings met while working
        it out (see wire.py)."""
        warnings = self._local.warnings = []
        answer = self._answer(request)
        return answer + (warnings,) if warnings else answer

    def _answer(self, request: Any) -> tuple:
        try:
            op, args = request
            return ('ok', self.ops[op](*args))
        except BecomeFailed as exc:
            return ('error', exc.kind, str(exc))
        except hangup.WorkerGone:
            raise
        except ZipWanted:
            return ('error', 'zip-wanted', '')
        except RunFromScript:
            return ('error', 'from-script', '')
        except ContextLost as exc:  # first: a start's ViaLost is both
            return ('error', 'lost', as_ssh_tells_it(exc))
        except ConnectError as exc:
            cannot_run = getattr(exc, 'cannot_run', None)
            if cannot_run is not None and cannot_run[0] is not None:
                return ('error', 'cannot-run',
                        '%d %s\n%s' % (cannot_run + (exc,)))
            if spawn.python_missing(exc):
                return ('error', 'no-python', str(exc))
            if spawn.password_refused(exc):  # ssh asked again: its words
                return ('error', 'password-refused', exc.output)
            return ('error', 'connect', as_ssh_tells_it(exc))
        except CallError as exc:
            return ('error', 'call', str(exc))
        except Exception as exc:  # a bad request must not kill the broker
            LOG.exception('request failed')
            return ('error', 'broker', '%s: %s' % (type(exc).__name__, exc))

    def stats(self) -> dict:
        counts = dict(self.counts)
        counts['contexts'] = self.pool.router_contexts()
        counts['login_retries'] = self.pool.login_retries
        counts['lane_retries'] = self.pool.lane_retries
        counts['idle_lanes_shut'] = self.pool.idle_lanes_shut
        counts['client_processes'] = len(self.client_pids)
        return counts

    # ----------------------------------------- ordering and sending ahead

    def _login(self, spec: dict) -> Target:
        return self.pool.get({'login': spec['login'], 'become': None}, None)

    def _defer(self, spec: dict, func, *args: Any,
               on_answer: Optional[Callable[[Any], None]] = None) -> None:
        """Send a call to the login context and answer at once: its
        outcome is checked when the next call of this login returns, and
        its answer given to *on_answer*.  At most WINDOW calls are on
        their way: a large file streams at the pace the target writes it,
        without piling up here."""
        login = self._login(spec)
        while True:
            on_their_way = login.sent_ahead()
            if len(on_their_way) < WINDOW:
                break
            on_their_way[0].future.result()
            self._check_deferred(login)
        in_flight = login.send_ahead(SentAhead(
            login.context.call_async(func, *args), on_answer))
        self.counts['sent_ahead'] += 1
        self.counts['most_in_flight'] = max(self.counts['most_in_flight'],
                                            in_flight)

    def _call(self, spec: dict, found: Target, func, *args: Any) -> Any:
        """Call *func* in *found*, after whatever was sent ahead to its
        login context.  A call to another context of the same login (the
        become user's) goes through the login context then, which runs it
        in order: no round trip is spent waiting for the calls ahead."""
        login = self._login(spec)
        self._enter_dir(spec, found)
        self.counts['round_trips'] += 1
        if found is login or not login.sent_ahead():
            call = found.context.call_async(func, *args)
        elif found.context.via is login.context:
            call = login.context.call_async(target.relay, found.context,
                                            func.__name__, args)
            self.counts['relayed'] += 1
        else:
            # Another login interpreter started *found*: only its parent
            # could relay, so wait for the calls sent ahead instead.
            for sent_ahead in login.sent_ahead():
                sent_ahead.future.result()
            self.counts['round_trips'] += 1
            call = found.context.call_async(func, *args)
        result = self._result(spec, call)
        for sent in {id(login): login, id(found): found}.values():
            self._check_deferred(sent)
        return result

    def _enter_dir(self, spec: dict, found: Target) -> None:
        """The local connection's commands run in the task's directory
        (*spec*'s ``cwd``), as vanilla's do: the context moves there before
        the call, once per directory (its module processes and shells
        inherit it), sent ahead so nobody waits."""
        cwd = spec.get('cwd')
        if cwd and found.cwd != cwd:
            self._call_ahead_of(found, target.change_dir, cwd)
            found.cwd = cwd

    def _result(self, spec: dict, call) -> Any:
        """The result of *call*, unless the worker that asked for it hangs
        up first (its task ran past ``timeout:``).  The call then goes on
        in its context, as the command goes on under vanilla, and the
        login's contexts leave the pool: the host's next task starts
        afresh instead of queueing behind it."""
        watch = getattr(self._local, 'watch', None)
        if watch is not None:
            try:
                watch.wait(call)
            except hangup.WorkerGone:
                self.counts['calls_abandoned'] += 1
                self.pool.abandon(spec, call)
                raise
        return call.result()

    def _call_ahead_of(self, found: Target, func, *args: Any) -> None:
        """Send a call that the next call to *found* needs done first: the
        context runs calls in order, so nobody waits for it."""
        found.send_ahead(SentAhead(found.context.call_async(func, *args)))
        self.counts['sent_ahead'] += 1

    def _check_deferred(self, sent: Target) -> None:
        """Forget the calls sent ahead to *sent* that have finished, giving
        each answer to its handler; raise the first failure among them."""
        failure = None
        for sent_ahead in sent.collect_finished():
            try:
                answer = sent_ahead.future.result()
            except plasmid.Error as exc:
                failure = failure or exc
                continue
            if sent_ahead.on_answer is not None:
                sent_ahead.on_answer(answer)
        if failure is not None:
            raise failure

    def _warn_if_not_removed(self, result: tuple) -> None:
        """Vanilla's warning for a temp dir that was not removed, told to
        the worker whose request found out (the host's next call)."""
        rc, _, stderr = result
        if rc == 0:
            return
        self.counts['cleanups_failed'] += 1
        warnings = getattr(self._local, 'warnings', None)
        if warnings is not None:
            # Word for word, the stray brace included.
            warnings.append(
                'Error deleting remote temporary files (rc: %s, stderr: %s})'
                % (rc, _as_bytes(stderr).decode('utf-8', 'replace')))

    # ------------------------------------------------------ operations

    def run_module(self, spec: dict, python: str, digest: str,
                   zip_data: Optional[bytes], job: dict) -> tuple:
        """Run a module from payload *digest*; *zip_data* may be None
        when the worker expects the context to have it."""
        account = account_changes.account_of(job)
        if account and self.pool.retire_account(spec, account):
            self.counts['contexts_retired'] += 1
        files = self._zip_files(digest, zip_data)
        if zips.needs_disk(files):
            self.counts['modules_from_script'] += 1
            raise RunFromScript()
        found = self._module_context(spec, python)
        self._ensure_zip(found, digest, files, job['module_fqn'])
        self.counts['module_runs'] += 1  # asked for, whatever the answer
        if not self.staying:
            job = dict(job, stay=False)
        answer = self._call(spec, found, target.run_module, digest, job,
                            self.hold_above)
        if answer[0] == target.FROM_SCRIPT:  # too old a Python for the zip
            self.counts['modules_from_script'] += 1
            raise RunFromScript()
        result = self._whole(spec, found, answer)
        self._after_account_change(spec, job, account, result[1])
        return result

    def _after_account_change(self, spec: dict, job: dict,
                              account: Optional[str], stdout: bytes) -> None:
        """Start afresh what a task's change made stale on the machine,
        whichever of its logins made it (see account_changes): the logins
        as an account that changed, everything after a group changed, the
        become interpreters after a change of sudo's rules."""
        groups = account_changes.changes_groups(job)
        rules = account is None and not groups and \
            account_changes.touches_sudo_rules(job)
        if not (account or groups or rules) or \
                not account_changes.reported_change(stdout):
            return
        if groups:
            self.counts['logins_reset'] += bool(self.pool.reset_machine(spec))
        elif account:
            self.counts['logins_reset'] += bool(
                self.pool.reset_account(spec, account))
        else:
            self.counts['contexts_retired'] += self.pool.retire_become(spec)

    def _module_context(self, spec: dict, python: str) -> Target:
        """The context that runs modules under *python*.  If that
        interpreter does not start there, vanilla's run would have failed
        the task with what the shell said ("not found", rc 127), not the
        host: the worker then runs the script as given, in a context of
        any Python the account has."""
        try:
            return self.pool.get(spec, python)
        except (ConnectError, BecomeFailed) as exc:
            if not spawn.python_missing(exc):
                raise
            self.counts['modules_from_script'] += 1
            raise RunFromScript() from None

    def home(self, spec: dict, command: str) -> tuple:
        """``echo ~user``: asked once per login, then answered here."""
        login = self._login(spec)
        if command not in login.homes:
            self.counts['shell'] += 1
            answer = self._call(spec, login, target.run_shell, command)
            if answer[0] != 0:
                return answer
            login.homes[command] = answer
        return login.homes[command]

    def shell_runs(self, spec: dict, shell: str) -> bool:
        """Whether the shell ansible names (its ``executable``) can run
        on the login's host: once there, it is taken to stay; one that is
        not is asked for again (a task may install it), at a cost only to
        commands that go as given anyway."""
        login = self._login(spec)
        if shell not in login.shells:
            if not self._call(spec, login, target.runs_here, shell):
                return False
            login.shells.add(shell)
        return True

    def mkdtemp(self, spec: dict, command: str, base: str,
                name: str) -> tuple:
        """The task's temp dir.  The login's first under *base* is made
        while the worker waits: where it cannot be, the action plugin
        reads the shell's answer and fails the host as vanilla's does.
        Later ones are made ahead, their path answered here."""
        login = self._login(spec)
        made_in = login.tmp_bases.get(base)
        if made_in is None:
            self.counts['shell'] += 1
            answer = self._call(spec, login, target.run_shell, command)
            made_in = _made_in(answer, name)
            if made_in is not None:
                login.tmp_bases[base] = made_in
            return answer
        self._defer(spec, chores.make_dir, command, made_in, name,
                    on_answer=self._count_chore)
        return 0, ('%s=%s/%s\n' % (name, made_in, name)).encode('utf-8'), b''

    def later(self, spec: dict, command: str) -> tuple:
        """A command whose output nobody reads (making the task's files
        executable): its failure fails the call after it."""
        chore = commands.housekeeping(command)
        if chore is not None and chore.kind == 'later':
            self._defer(spec, chores.add_owner_mode, command, chore.bits,
                        list(chore.paths), on_answer=self._count_chore)
        else:
            self._defer(spec, target.run_shell_checked, command)
        return 0, b'', b''

    def cleanup(self, spec: dict, command: str) -> tuple:
        """Removing a task's temp dir.  Vanilla only warns when that
        fails; the next call, perhaps another task's, must not fail for
        it: its failure comes back with that call's answer as vanilla's
        warning, one task late (a run's last removal that fails, when no
        call follows, is not told)."""
        chore = commands.housekeeping(command)
        if chore is not None and chore.kind == 'cleanup':
            self._defer(spec, chores.remove_tree, command, chore.paths[0],
                        on_answer=self._warn_if_not_removed_natively)
        else:
            self._defer(spec, target.run_shell, command,
                        on_answer=self._warn_if_not_removed)
        return 0, b'', b''

    def _warn_if_not_removed_natively(self, answer: tuple) -> None:
        self._warn_if_not_removed(self._count_chore(answer))

    def _count_chore(self, answer: tuple) -> Any:
        """Count how a context did a chore (``chores``: by itself or by
        the shell); the shell's answer."""
        how, result = answer
        self.counts['chores_' + how] += 1
        return result

    def _zip_files(self, digest: str,
                   data: Optional[bytes]) -> list[zips.PayloadFile]:
        """The files of payload *digest*; asks the worker for the zip the
        first time (and again if the store has let it go)."""
        files = self.zips.get(digest)
        if files is None:
            if data is None:
                raise ZipWanted()
            files = self.zips.add(digest, data)
            self.counts['zips_received'] += 1
        return files

    def _ensure_zip(self, found: Target, digest: str,
                    files: list[zips.PayloadFile], module_fqn: str) -> None:
        if digest in found.zips:
            return
        with found.lock:
            if digest not in found.zips:
                part = zips.split(files, found.files)
                self._call_ahead_of(found, target.add_zip_files, digest,
                                    part.known, part.new, module_fqn)
                found.zips.add(digest)
                found.files.update(part.new_digests)
                self.counts['zips_sent'] += 1
                self.counts['zip_files_reused'] += len(part.known)
                self.counts['zip_bytes_sent'] += sum(
                    len(p) for p in part.new.values())

    def run_shell(self, spec: dict, python: Optional[str], command: str,
                  in_data: Optional[bytes], prompt: Optional[bytes],
                  password: Optional[bytes], success: Optional[bytes],
                  terminal: Optional[str] = None, timeout: int = 30,
                  login_shell: bool = False):
        """A shell command in the context for *spec*: by ``/bin/sh``, or
        with *login_shell* by the account's login shell, as ssh runs a
        command the plugin passes on as given."""
        found = self.pool.get(spec, python)
        self.counts['shell_as_given' if success else
                    'shell_become' if spec.get('become') else 'shell'] += 1
        return self._whole(spec, found, self._call(
            spec, found, target.run_shell, command, in_data, prompt,
            password, success, terminal, timeout, _runs_as_sudo_job(spec),
            self.hold_above, login_shell))

    def _whole(self, spec: dict, found: Target, answer: tuple) -> tuple:
        """*answer* as ``(rc, stdout, stderr)``: a result the context
        held for its size (target.HELD) is read from it in pieces."""
        if answer[0] != target.HELD:
            return answer
        _, token, rc, out_size, err_size = answer
        try:
            out = self._read_held(spec, found, token, 0, out_size)
            err = self._read_held(spec, found, token, 1, err_size)
        finally:
            found.context.call_async(target.drop_held, token)
        return rc, out, err

    def _read_held(self, spec: dict, found: Target, token: int, which: int,
                   size: int) -> bytes:
        """*size* bytes of held stream *which*."""
        pieces = list(self._reads_ahead(spec, found.context, target.read_held,
                                        (token, which), 0, size))
        self.counts['result_chunks'] += len(pieces)
        return _joined(pieces)

    def _reads_ahead(self, spec: dict, context: plasmid.Context, read,
                     args: tuple, offset: int,
                     end: Optional[int] = None) -> Iterator[Any]:
        """The answers of ``read(*args, offset, FILE_CHUNK)`` from *offset*
        on, WINDOW of them on their way, so that a large transfer streams
        at the pace of the link rather than one round trip per chunk: up
        to *end* when it is known, else until one comes back short (the
        reads asked for past it answer b'' and nobody waits for them)."""
        ahead: collections.deque = collections.deque()
        asked = offset
        while True:
            while len(ahead) < WINDOW and (end is None or asked < end):
                ahead.append(context.call_async(read, *args, asked,
                                                FILE_CHUNK))
                asked += FILE_CHUNK
            if not ahead:
                return
            self.counts['most_reads_ahead'] = max(
                self.counts['most_reads_ahead'], len(ahead))
            piece = self._result(spec, ahead.popleft())
            yield piece
            if end is None and len(piece) < FILE_CHUNK:
                return

    def put_file(self, spec: dict, source: str, path: str) -> int:
        """Copy the controller's file *source* to *path* on the target,
        read here rather than sent by the worker: the bytes cross one
        socket fewer.  Chunks go ahead of the answer, WINDOW at most on
        their way; the last of several waits, so that a failure shows in
        this call.  A file of one chunk goes ahead: the module that reads
        it runs after it, and its failure shows there.  Over ssh the file
        is made with this one's permission bits less the target's umask,
        as sftp and scp make it (a module that cannot chmod it, as an
        unprivileged become user, leaves them)."""
        offset = 0
        with open(source, 'rb') as handle:
            mode = stat.S_IMODE(os.fstat(handle.fileno()).st_mode) & 0o777 \
                if _copies_as_sftp(spec) else None
            while True:
                chunk = handle.read(FILE_CHUNK)
                last = len(chunk) < FILE_CHUNK
                self.counts['file_chunks_put'] += 1
                if last and offset:
                    return offset + self._call(
                        spec, self._login(spec), target.write_file, path,
                        chunk, offset, False)
                self._defer(spec, target.write_file, path, chunk, offset,
                            offset == 0, mode)
                offset += len(chunk)
                if last:
                    return offset

    def fetch_file(self, spec: dict, path: str, dest: str) -> int:
        """Copy the target's file *path* to the controller's file *dest*,
        written here rather than by the worker (the mirror of put_file).
        The first chunk costs one round trip; when it is full, the rest
        are read ahead (:meth:`_reads_ahead`).  A read past the end is
        short or empty: the first short one ends it.  Over ssh a new file
        gets the target file's permission bits and owner write, less the
        umask, as sftp's does (a private file stays private)."""
        login = self._login(spec)
        # Read before opening: a file that cannot be read leaves none here.
        mode, chunk = self._call(spec, login, target.read_file_head, path,
                                 FILE_CHUNK)
        self.counts['file_chunks_fetched'] += 1
        new_mode = mode | stat.S_IWUSR if _copies_as_sftp(spec) else 0o666
        with replacing(dest, new_mode) as out:
            out.write(chunk)
            offset = len(chunk)
            if len(chunk) == FILE_CHUNK:
                for chunk in self._reads_ahead(spec, login.context,
                                               target.read_file, (path,),
                                               offset):
                    self.counts['file_chunks_fetched'] += 1
                    out.write(chunk)
                    offset += len(chunk)
        return offset

    def reset(self, spec: dict) -> int:
        return self.pool.reset(spec)


def _copies_as_sftp(spec: dict) -> bool:
    """Whether vanilla's connection copies a file as sftp and scp do, with
    the source's permission bits (ssh), or as ``shutil.copyfile`` does,
    with ``open()``'s (local; the container connections are left so)."""
    return spec['login']['method'] == 'ssh'


@contextlib.contextmanager
def replacing(dest: str, new_mode: int = 0o666) -> Iterator[BinaryIO]:
    """A file to write that takes *dest*'s place only once it is whole.
    Two hosts fetched to one path (``flat: true``), on threads of one
    ansible-playbook, would otherwise each checksum the other's half-written
    file.  An existing file keeps its mode, a symlink keeps pointing where
    it did (its target is replaced), and a failed write leaves *dest* as
    it was.  A new file gets *new_mode* less the umask, as ``open()``'s.
    Where ``open()`` would refuse (a read-only file) so does this; where
    only the file is writable, not its folder, it is written in place."""
    dest = os.path.realpath(dest)
    if os.path.exists(dest) and not os.access(dest, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), dest)
    while True:
        partial = temp_beside(dest)
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                         new_mode)
            break
        except FileExistsError:
            continue
        except PermissionError:
            if not os.path.exists(dest):
                raise
            with open(dest, 'wb') as out:
                yield out
            return
    try:
        with os.fdopen(fd, 'wb') as out:
            yield out
        try:
            os.chmod(partial, stat.S_IMODE(os.stat(dest).st_mode))
        except FileNotFoundError:
            pass
        os.replace(partial, dest)
    except BaseException:
        os.unlink(partial)
        raise


def _joined(pieces: list) -> bytes | str:
    """Pieces of one output, joined as the output would have arrived
    whole.  A Python 2 context's ``str`` arrives as text, each piece
    decoded apart (a character may straddle two): join their bytes and
    decode the whole once."""
    if all(isinstance(piece, bytes) for piece in pieces):
        return b''.join(pieces)
    return b''.join(
        piece.encode('utf-8', 'surrogateescape') if isinstance(piece, str)
        else piece for piece in pieces).decode('utf-8', 'surrogateescape')


def _as_bytes(output: bytes | str) -> bytes:
    """A shell command's output as bytes: a Python 2 context's ``str``
    arrives as text, decoded with surrogateescape."""
    if isinstance(output, str):
        return output.encode('utf-8', 'surrogateescape')
    return output


def _made_in(answer: tuple, name: str) -> Optional[str]:
    """The folder a temp dir command made *name* in, from its answer
    (``name=/folder/name``); None if it failed or said something else.
    A Python 2 login context answers in text (see :func:`_as_bytes`)."""
    rc, out, _ = answer
    said = _as_bytes(out).decode('utf-8', 'replace').strip()
    if rc != 0 or not said.startswith(name + '=/') or \
            not said.endswith('/' + name):
        return None
    return said[len(name) + 1:-len(name) - 1]


def as_ssh_tells_it(exc: ConnectError | ContextLost) -> str:
    """Why a login failed or was lost, as ansible-core shows it: in ssh's
    own words when it gave them (a failed login's stderr if ssh ended by
    itself; a lost one's last words, ``ContextLost.said``), in ours when
    we stopped it (a refused password, a timeout) or it said nothing."""
    if isinstance(exc, ContextLost):
        words = exc.said
    else:
        words = exc.output if exc.ended else ''
    return words or str(exc)


def peer_pid(conn: socket.socket) -> int:
    """The pid of the process at the other end of a UNIX socket."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                            struct.calcsize('3i'))
    return struct.unpack('3i', creds)[0]


def watch(pid: int, on_gone) -> None:
    """Call *on_gone* (from a thread) once process *pid* has exited."""
    def run() -> None:
        while process_alive(pid):
            time.sleep(0.2)
        on_gone()
    threading.Thread(target=run, name='plasmid-watch', daemon=True).start()


def tell_starter_ready() -> None:
    """Write ``ready`` to the process that started us, then let go of the
    pipe.  The starter may be gone already (a run with no remote task ends
    before its early-started broker is up): that is a normal end, which
    the watch on the run's pid handles, not an error to die of."""
    try:
        sys.stdout.write('ready\n')
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    # Nothing more goes to the starter; later output must not hit the pipe.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


# What the broker will send every context: its first connection waits on
# the network long enough to work out their closures meanwhile.
SENT_TO_EVERY_CONTEXT = ['plasmid.ansible.target', 'plasmid.connect.sudo']


def prepare_code(router: plasmid.Router) -> None:
    threading.Thread(target=router.responder.prepare,
                     args=(SENT_TO_EVERY_CONTEXT,), daemon=True,
                     name='plasmid-prepare').start()


def write_stats(broker: Broker, path: Optional[str]) -> None:
    """The run's counters, as JSON, to *path* (PLASMID_ANSIBLE_STATS), for
    tests and the compat harness; to ``broker-<pid>.json`` in it if it is
    a folder, so that the runs of a script each leave theirs."""
    if not path:
        return
    if os.path.isdir(path):
        path = os.path.join(path, 'broker-%d.json' % os.getpid())
    with open(path, 'w') as handle:
        json.dump(broker.stats(), handle)


def main(argv: list[str]) -> int:
    path, watch_pid = argv[0], int(argv[1])
    logging.basicConfig(level=logging.WARNING,
                        format='%(asctime)s %(name)s %(message)s')
    # Results beyond hold_above come in pieces; anything else from a
    # context (a zip, a chunk, a smaller result) may be as large as
    # CONTEXT_MAX_MESSAGE rather than the core's default.
    # Source alone, even to targets on this Python's version: the payload
    # compiles there in ~8-10 ms per context, and its bytecode would add
    # ~46 KiB per host (become100 on a 3.11 broker and targets; bytes
    # per host are one of the accelerator's targets).
    router = plasmid.Router(threaded=True,
                            max_message_size=CONTEXT_MAX_MESSAGE,
                            send_bytecode=False)
    prepare_code(router)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(128)

    broker = Broker(router, hold_above_from(os.environ),
                    lane_idle_from(os.environ), staying_from(os.environ))
    broker.pool.start_shutting_idle_lanes()

    def stop() -> None:
        # The socket is the one the run's Client named: it knows the rest.
        Client(watch_pid, os.path.dirname(path)).remove_run_files()
        write_stats(broker, os.environ.get('PLASMID_ANSIBLE_STATS'))
        try:
            router.shutdown(timeout=3.0)
        finally:
            os._exit(0)
    watch(watch_pid, stop)
    tell_starter_ready()
    while True:
        conn = accept(server)
        threading.Thread(target=broker.serve, args=(conn,), daemon=True,
                         name='plasmid-worker').start()


def hold_above_from(environ: dict) -> int:
    """PLASMID_ANSIBLE_HOLD_ABOVE (bytes, a positive integer), else
    HOLD_ABOVE: see :func:`tuning_from`."""
    return tuning_from(environ, 'PLASMID_ANSIBLE_HOLD_ABOVE', HOLD_ABOVE, int,
                       lambda value: value > 0, 'a positive number of bytes')


def lane_idle_from(environ: dict) -> float:
    """PLASMID_ANSIBLE_LANE_IDLE (seconds, a number from 0 up; ``inf``
    keeps every lane for the run), else LANE_IDLE: see :func:`tuning_from`."""
    # ``value >= 0`` is false for nan too.
    return tuning_from(environ, 'PLASMID_ANSIBLE_LANE_IDLE', LANE_IDLE, float,
                       lambda value: value >= 0,
                       'a number of seconds from 0 up')


def staying_from(environ: dict) -> bool:
    """PLASMID_ANSIBLE_STAYING (``on`` or ``off``; also 1/0, yes/no,
    true/false), else on: whether a module process may stay for a later
    task of a measured module (``target.STAYING_MODULES``).  Off, every
    module runs in a fresh fork.  See :func:`tuning_from`."""
    return tuning_from(environ, 'PLASMID_ANSIBLE_STAYING', True, _switch,
                       lambda value: True, 'on or off')


def _switch(text: str) -> bool:
    word = text.strip().lower()
    if word in ('1', 'on', 'yes', 'true'):
        return True
    if word in ('0', 'off', 'no', 'false'):
        return False
    raise ValueError(text)


def tuning_from(environ: dict, name: str, default: Any,
                parse: Callable[[str], Any], acceptable: Callable[[Any], bool],
                wanted: str) -> Any:
    """The broker's setting *name* from *environ*, parsed, else *default*.
    A value that *parse* refuses or that is not *acceptable* is ignored
    with a warning in the broker's log (saying it is not *wanted*): these
    tune the accelerator, they never change a result."""
    text = environ.get(name)
    if text is None:
        return default
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not acceptable(value):
        LOG.warning('%s=%r is not %s: using %s', name, text, wanted, default)
        return default
    return value


def accept(server: socket.socket) -> socket.socket:
    """The next worker's connection.  Out of descriptors, it waits for
    some to be freed (the worker waits in the backlog meanwhile) rather
    than end the broker and every host's context with it; each connection
    also raises the soft limit when it comes close (see
    ``process.make_room_for_descriptors``)."""
    warned = False
    while True:
        try:
            conn, _ = server.accept()
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if not process.make_room_for_descriptors(None):
                if not warned:
                    LOG.warning('out of file descriptors: workers wait (%s)',
                                exc)
                    warned = True
                time.sleep(0.05)
            continue
        # A HangupWatch will open two more.
        process.make_room_for_descriptors(conn.fileno() + 2)
        return conn


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
