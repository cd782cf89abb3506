"""The accelerated ssh connection plugin's behaviour.

Every worker's ``exec_command`` goes to the run's broker, which keeps one
context per (host, account, interpreter) for the whole run:

* a pipelined new-style Python module runs from RAM in the context of the
  become user (``target.run_module``): no ssh session, no sudo, no new
  interpreter and no temp files per task; one that may respawn itself
  under another interpreter (apt, dnf) runs its script instead, in the
  same context (``zips.needs_disk``);
* any other command the become wrapper surrounds runs through ``/bin/sh``
  in that same context; commands without become in the login context;
* a command of a shape we do not recognise, or a become method we cannot
  host ourselves, runs exactly as given, through ``/bin/sh`` in the login
  context, with the become password typed at its prompt (the fallback);
* on a host where no Python starts (``raw`` installing one, say), every
  command and file goes through ansible-core's own ssh plugin instead.

The plugin's option names and their variables are the ssh plugin's, so an
inventory written for ``ssh`` works unchanged.
"""
from __future__ import annotations

import functools
import os
import re
import shlex
from typing import TYPE_CHECKING, Any, Callable, Optional

from ansible import constants as C
from ansible.errors import (AnsibleAuthenticationFailure,
                            AnsibleConnectionFailure, AnsibleError,
                            AnsibleFileNotFound)
from ansible.module_utils.common.text.converters import to_bytes
from ansible.plugins.connection import ConnectionBase
from ansible.release import __version__ as ansible_version
from ansible.utils.display import Display

# commands, payload and client are imported where they are first used:
# every task's worker loads this plugin, and one whose task never reaches
# the host (set_fact, include_tasks) would pay ~1 ms of a forked worker's
# CPU per module for nothing.  A process that forks workers imports them
# ahead instead (import_runtime).
if TYPE_CHECKING:
    from plasmid.ansible import commands, payload
    from plasmid.ansible.client import BrokerError, Client
RUNTIME_MODULES = ('plasmid.ansible.commands', 'plasmid.ansible.payload',
                   'plasmid.ansible.client')


def import_runtime() -> None:
    """Import what running a command needs, and compile the patterns a
    task's command and script go through, for a process about to fork
    workers that will run commands (the preload callback, the strategy)."""
    import importlib
    for name in RUNTIME_MODULES:
        importlib.import_module(name)
    from plasmid.ansible import commands, payload
    commands.compile_patterns(payload.TASK_PATTERNS)


# What ssh's prompt for a token's PIN starts with; vanilla watches for it.
PKCS11_PROMPT = 'Enter PIN for '
_RELEASE = tuple(int(p) for p in ansible_version.split('.')[:2])
_SINCE_2_19 = _RELEASE >= (2, 19)
# 2.22's ssh plugin shows a command's rc alone at -vvv, its output only
# under ANSIBLE_DEBUG: module output may hold secrets not yet masked.
_RESULT_OUTPUT_DEBUG_ONLY = _RELEASE >= (2, 22)
# What the release's ssh plugin raises when the become prompt never shows:
# the host is unreachable since 2.19, the task failed before.
_PROMPT_TIMEOUT_ERROR = AnsibleConnectionFailure if _SINCE_2_19 \
    else AnsibleError
_display = Display()
# What the target appends to a command's output when the become program's
# prompt or success marker did not show in time (target.py).
_BECOME_TIMED_OUT = b'\nplasmid: timed out waiting for become\n'
# become methods the broker hosts in interpreters of their own.
HOSTED_BECOME = {'sudo': 'sudo', 'ansible.builtin.sudo': 'sudo',
                 'su': 'su', 'ansible.builtin.su': 'su',
                 'doas': 'doas', 'community.general.doas': 'doas'}
# A become interpreter that will not start is followed by the command as
# given, whose failure then reads exactly as vanilla's (sudo's usage for a
# bad become_flags, the shell's "not found" for a missing become_exe),
# except where vanilla itself names the failure: a refused or missing
# password (the broker's kinds below).  Hosted become methods whose every
# refusal vanilla shows as the failed command's output: doas.
REFUSED_AS_GIVEN = {'doas'}
_BECOME_PASSWORD_REFUSED = 'become-password-refused'
_BECOME_PASSWORD_MISSING = 'become-password-missing'
_BECOME_FAILURES = ('become', _BECOME_PASSWORD_REFUSED,
                    _BECOME_PASSWORD_MISSING)
# How long each stage of a host's start (reaching its Python, booting it)
# may take at least.  The `timeout` option bounds ssh's connection, as
# vanilla's does (ConnectTimeout); the interpreter's start that follows has
# no bound under vanilla, so a loaded controller or host that takes longer
# than `timeout` to get there must not be called unreachable.
START_STAGE_FLOOR = 60
# Options ansible.cfg often carries for vanilla ssh's ControlPersist: each
# context is one long-lived ssh process, so a control master adds nothing.
# RequestTTY and -t/-tt ask for a terminal, which the context's binary
# stream cannot pass through: left out too, and commands get a terminal
# where vanilla's own ssh plugin would ask for one (``_terminal``).
_LEFT_OUT_OPTIONS = ('controlmaster', 'controlpersist', 'controlpath',
                     'requesttty')
# A word of ssh's one-letter options that take no value, with a t in it
# (the complement of plasmid.connect.ssh.TAKES_VALUE, spelt out: importing
# that module would cost every forked worker its load).
_NO_VALUE = '46AaCfGgKkMNnqsTVvXxYy'
_TERMINAL_FLAGS = re.compile('-[%s]*t[%st]*' % (_NO_VALUE, _NO_VALUE))


class _ZipWanted(Exception):
    """The broker has no copy of a module's payload: send it."""


class _RefusedAsVanillaShowsIt(Exception):
    """The become interpreter did not start for a reason vanilla shows
    as the command's own failure: run the command as given."""


class _NoPythonThere(Exception):
    """The host has no Python our broker could start: what vanilla ssh
    does without one (raw, script, a module's failure) is ssh's to do."""


class _VanillaShadowed(AnsibleError):
    """ansible-core's plugin is this one (installed under its name,
    ``ssh``), so the fallback would call itself without end."""


class _RunFromScript(Exception):
    """The module must run from its script, as a command (it may respawn
    itself under another interpreter, which needs its payload on disk)."""


class Connection(ConnectionBase):
    """ssh, with one persistent interpreter per account on each host."""

    # What action plugins see: they test for 'ssh' to know that the host is
    # reached by OpenSSH with the ssh plugin's options (ansible.posix's
    # synchronize runs rsync over ssh only then), which holds here too.
    transport = 'ssh'
    # ansible-core's plugin for what we do not host (a host without Python).
    VANILLA = 'ansible.builtin.ssh'
    # sshd hands a command to the account's login shell (bash's `[[` works
    # in `raw` there); a container's exec runs /bin/sh or no shell.
    LOGIN_SHELL_RUNS_COMMANDS = True
    # At -vvv vanilla's ssh plugin shows each command's (rc, stdout,
    # stderr) and "Escalation succeeded"; its local plugin does not.
    SHOWS_RESULTS = True
    # Pipelining comes from our 'pipelining' option (default true), never
    # from always_pipeline_modules: that would pipeline async tasks too,
    # which then run synchronously.
    if _SINCE_2_19:
        has_pipelining = True
    else:
        @property
        def has_pipelining(self) -> bool:
            """2.18 has no is_pipelining_enabled to ask (below); its action
            reads this where 2.19+'s asks, before it builds a task's
            module, and no task that stays on the controller reads it:
            the broker starts meanwhile on 2.18 too.  (Its 'pipelining'
            option is read by every task's PlayContext.)"""
            self._start_broker_early()
            return True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client: Optional[Client] = None
        self._vanilla: Optional[ConnectionBase] = None
        self._ssh_says_closed: Optional[bytes] = None  # _closing_line's
        self._broker_looked_for = False  # _start_broker_early's

    # ------------------------------------------------------ connecting

    def _connect(self) -> "Connection":
        if self.client is None:
            self._trace('ESTABLISH PLASMID CONNECTION FOR USER: %s'
                        % self._play_context.remote_user)
            from plasmid.ansible.client import Client
            self.client = Client()
            self._connected = True
        return self

    def _start_broker_early(self) -> None:
        """The run's first task builds its module (~0.13 s) while the
        broker starts (as long): once per connection, where no broker
        listens yet and the connection has no client yet."""
        if self.client is None and not self._broker_looked_for:
            self._broker_looked_for = True
            from plasmid.ansible import client
            client.start_broker_if_missing()

    def _hostname(self) -> str:
        """The address ssh logs in to, as ansible-core's ssh plugin finds
        it (and names it in its errors)."""
        return self.get_option('host') or self._play_context.remote_addr

    def _login_spec(self) -> dict:
        timeout = int(self.get_option('timeout') or 10)
        password = self.get_option('password') or None
        mechanism = self._password_mechanism()
        provider = self.get_option('pkcs11_provider')
        args = self._ssh_args(password, mechanism, provider, timeout)
        if mechanism == 'disable':
            password = None
        port = self.get_option('port')
        return {
            'method': 'ssh',
            'hostname': self._hostname(),
            'name': 'ssh.%s%s' % (self._hostname(),
                                  ':%d' % int(port) if port else ''),
            # The port and user are among ssh_args, where vanilla puts
            # them; as -p and -l they would come first and win over them.
            'account': self.get_option('remote_user'),
            'password': password,
            'ssh_args': args,
            'ssh_path': self.get_option('ssh_executable') or None,
            'connect_timeout': max(timeout, START_STAGE_FLOOR),
            'retries': int(self.get_option('reconnection_retries') or 0),
            'password_prompt': self._password_prompt(password, provider),
            # A prompt that is not the password's (a one-time code, words
            # sshpass_prompt should name) fails the login in `timeout`,
            # naming it, instead of waiting out the start.
            'prompt_timeout': timeout if password else None,
        }

    def _password_prompt(self, password: Optional[str],
                         provider: Optional[str]) -> Optional[str]:
        """The text to type the password at, where it is not ssh's usual
        prompt: as vanilla has sshpass or its askpass helper watch for."""
        if not password:
            return None
        return self.get_option('sshpass_prompt') or \
            (PKCS11_PROMPT if provider else None)

    def _ssh_args(self, password: Optional[str], mechanism: str,
                  provider: Optional[str],
                  timeout: int) -> list[str]:
        """ssh's options, the key file to offer among them (none when the
        key is in the agent).  Each option where vanilla puts it: ssh takes
        an option's first value, so one in ssh_args wins over ours (the
        port and user too), ours over one in the common or extra args.
        (2.18's ssh plugin has no verbosity: its variable means nothing
        there.)"""
        args = _pkcs11_args(provider, password, mechanism)
        if _SINCE_2_19:
            args += _verbosity(self.get_option('verbosity'))
        args += _split_args(self.get_option('ssh_args') or '')
        if not self.get_option('host_key_checking'):
            args += ['-o', 'StrictHostKeyChecking=no']
        port = self.get_option('port')
        if port:
            args += ['-o', 'Port=%d' % int(port)]
        identity_file = self.get_option('private_key_file')
        agent_key = self._agent_key()
        if agent_key is not None:
            # As vanilla: the key in the agent, named by its public half;
            # the key file is then not offered.
            args += ['-o', 'IdentitiesOnly=yes',
                     '-o', 'IdentityFile="%s"' % agent_key]
            identity_file = None
        elif identity_file:
            # As vanilla, an option rather than -i: ssh then says nothing
            # of a key file that is not there (with -i it warns, and the
            # warning joined an unreachable host's message).
            args += ['-o', 'IdentityFile="%s"'
                     % os.path.expanduser(identity_file)]
        user = self.get_option('remote_user')
        if user:
            args += ['-o', 'User="%s"' % user]
        args += ['-o', 'ConnectTimeout=%d' % timeout]
        for option in ('ssh_common_args', 'ssh_extra_args'):
            args += _split_args(self.get_option(option) or '')
        if password and mechanism == 'ssh_askpass':
            # As vanilla's askpass: one prompt, then ssh's own refusal.
            args += ['-o', 'NumberOfPasswordPrompts=1']
        return args

    def _agent_key(self) -> Optional[str]:
        """2.19+: a ``private_key`` (the key's text) goes into the ssh agent
        that ansible-core's SSH_AGENT setting names, by the ssh plugin's
        own method, so that the same checks, messages and key lifetime
        apply; the answer is the file of its public half.  None without
        one, and on 2.18, whose ssh plugin has no such option."""
        if not _SINCE_2_19 or not self.get_option('private_key'):
            return None
        try:
            return str(self._vanilla_plugin()._populate_agent())
        except _VanillaShadowed:
            raise
        except Exception as exc:
            raise AnsibleAuthenticationFailure(
                'Failed to add configured private key into ssh-agent.'
            ) from exc

    def _password_mechanism(self) -> str:
        """How the release's ssh plugin would hand ssh the password: its
        refusals read differently (ssh's own words under ssh_askpass,
        sshpass's "Invalid/incorrect password" under sshpass).  2.18 knows
        only sshpass."""
        if not _SINCE_2_19:
            return 'sshpass'
        return self.get_option('password_mechanism') or 'ssh_askpass'

    def _spec(self, become: bool) -> dict:
        spec: dict[str, Any] = {'login': self._login_spec(), 'become': None}
        if become:
            plugin = self.become
            method = HOSTED_BECOME[plugin.name]
            flags = plugin.get_option('become_flags')
            spec['become'] = {
                'method': method,
                'username': plugin.get_option('become_user') or 'root',
                'password': plugin.get_option('become_pass') or None,
                'flags': _become_flags(method, flags),
                'exe': plugin.get_option('become_exe') or None,
                # sudo's -H only where become_flags say it, as vanilla's.
                'extra': {'set_home': False} if method == 'sudo' else {},
                # A prompt we cannot answer: as long as vanilla waits at it.
                'prompt_timeout': self._prompt_timeout(),
            }
        return spec

    def is_pipelining_enabled(self, wrap_async: bool = False) -> bool:
        """ansible-core 2.19+ asks here.  A become method that does not
        pipeline under vanilla ssh (su, which wants a terminal for its
        password) does here when we host it: its interpreter gets the
        password at start-up, not per command.  An action asks this
        before it builds its module: the broker starts meanwhile."""
        self._start_broker_early()
        plugin = self.become
        if plugin is not None and not getattr(plugin, 'pipelining', True) \
                and plugin.name in HOSTED_BECOME:
            return bool(self.get_option('pipelining')) and not wrap_async
        return super().is_pipelining_enabled(wrap_async)

    def _call(self, op: str, *args: Any) -> Any:
        from plasmid.ansible.client import BrokerError
        self._connect()
        try:
            try:
                return self.client.call(op, *args)
            except BrokerError as exc:
                error = self._error_for(exc)
            # Raised out of the handler: its context is what was being
            # handled when we were called (interpreter discovery's), as
            # vanilla's error has it, which ansible-core shows as a chain
            # ("<<< caused by >>>"); never our BrokerError.
            raise error
        finally:
            self._show_warnings()

    def _error_for(self, exc: Any) -> Exception:
        """What the broker's error *exc* is, raised to ansible-core."""
        if exc.kind == 'zip-wanted':
            return _ZipWanted()
        if exc.kind == 'from-script':
            return _RunFromScript()
        if exc.kind == 'no-python':
            return _NoPythonThere()
        if exc.kind == 'cannot-run':
            return self._cannot_run(*str(exc).split('\n', 1))
        if exc.kind == 'password-refused':
            return self._password_refused(str(exc))
        if exc.kind in _BECOME_FAILURES:
            return self._become_failed(exc.kind)
        return self._broker_error(exc)

    def _cannot_run(self, which: str, message: str) -> Exception:
        """The login's program (ssh, sshpass) would not start: *which* is
        its errno and path, *message* our words.  Vanilla's ssh plugin
        fails the task (the host is not unreachable) with Popen's error:
        in its message on 2.18, as its cause on 2.19+."""
        number, _, program = which.partition(' ')
        cause = OSError(int(number), os.strerror(int(number)),
                        os.fsencode(program))
        if not _SINCE_2_19:
            return AnsibleError('Unable to execute ssh command line on a '
                                'controller due to: %s' % cause)
        error = AnsibleError('Unable to execute ssh command line on a '
                             'controller.')
        error.__cause__ = cause
        return error

    def _show_warnings(self) -> None:
        """What the broker met on this call's way that vanilla would have
        shown (a temp dir it could not remove)."""
        client = self.client
        if client is not None and client.warnings:
            for text in client.warnings:
                _display.warning(text)
            client.warnings.clear()

    def _become_failed(self, kind: str) -> Exception:
        """The error for a become interpreter that did not start, for the
        broker's reason *kind*: vanilla's words for a refused or missing
        password; for anything else, the command is run as given and its
        own failure is vanilla's."""
        method = HOSTED_BECOME[self.become.name]
        if kind == 'become' or method in REFUSED_AS_GIVEN:
            return _RefusedAsVanillaShowsIt()
        if kind == _BECOME_PASSWORD_REFUSED:
            return self._become_password_error('Incorrect')
        # Vanilla knows a missing password only by the words of a plugin
        # that has them (sudo's -n refusal); su's prompt, with nothing to
        # type at it, waits until the time runs out.  We know at once, and
        # say it as vanilla does after the wait.
        if not getattr(self.become, 'missing', ()):
            return _prompt_timed_out(self._prompt_timeout(), b'')
        return self._become_password_error('Missing')

    def _become_password_error(self, what: str) -> AnsibleError:
        """Vanilla's words for a become password *what* ('Incorrect',
        'Missing'), naming the become plugin as it does."""
        name = self.become.name.rpartition('.')[2]
        return AnsibleError('%s %s password' % (what, name))

    def _password_refused(self, said: str) -> Exception:
        """ssh asked again for the login password we typed.  Under
        ssh_askpass it cannot (one prompt: ssh refuses by itself, and the
        error is a failed connection in ssh's words); this is the sshpass
        mechanism's refusal, worded as vanilla's."""
        if self._play_context.no_log:
            said = '<error censored due to no log>'
        return AnsibleAuthenticationFailure(
            'Invalid/incorrect password: %s' % said.rstrip())

    # --------------------------------------------------------- running

    def exec_command(self, cmd: str, in_data: Optional[bytes] = None,
                     sudoable: bool = True) -> tuple[int, bytes, bytes]:
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        self._trace('PLASMID: EXEC %s' % cmd)
        try:
            return self._ours_or_vanillas(
                lambda: self._exec_command(cmd, in_data, sudoable),
                lambda: self._vanilla_plugin().exec_command(
                    cmd, in_data=in_data, sudoable=sudoable))
        except _SshFailed as exc:
            if not (in_data and self._vanilla_pipelines()):
                raise
            said = exc.said
        raise self._data_not_sent(said)

    def _data_not_sent(self, said: str) -> AnsibleConnectionFailure:
        """How vanilla's ssh plugin words a failure of a command it sent
        data with (a pipelined module)."""
        return AnsibleConnectionFailure(
            'Data could not be sent to remote host "%s". Make sure this '
            'host can be reached over ssh: %s' % (self._hostname(), said))

    @staticmethod
    def _ours_or_vanillas(ours: Callable[[], Any],
                          vanillas: Callable[[], Any]) -> Any:
        """*ours*(), or where the host has no Python our broker could
        start, *vanillas*(): called out of the handler, as _call raises,
        so what fails in it does not carry our exception as its context
        (ansible-core 2.19+ would show a chain where vanilla shows none)."""
        try:
            return ours()
        except _NoPythonThere:
            pass
        return vanillas()

    def _vanilla_pipelines(self) -> bool:
        """Whether vanilla's ssh plugin would have sent this module with
        its command (so would word a failure as data not sent).  Its
        pipelining is off unless set (ours is on); it never pipelines
        for a become plugin that does not (su)."""
        value, origin = self.get_option_and_origin('pipelining')
        plugin = self.become
        return bool(value) and origin != 'default' and \
            (plugin is None or getattr(plugin, 'pipelining', True))

    def _exec_command(self, cmd: str, in_data: Optional[bytes],
                      sudoable: bool) -> tuple[int, bytes, bytes]:
        success = self._become_marker(cmd, sudoable)
        result = self._run_command(cmd, in_data, sudoable, success)
        if result[0] == 255:
            self._as_ssh_takes_255(result, in_data)
        if self.SHOWS_RESULTS:
            self._show_result(result, success)
        return result

    def _show_result(self, result: tuple[int, bytes, bytes],
                     success: Optional[str]) -> None:
        """What the release's ssh plugin shows of a command's end.  Each
        message is formatted only when it will show: the output's text
        costs as much as the output."""
        no_log = self._play_context.no_log
        if _display.verbosity >= 3:
            if success and _SINCE_2_19:
                self._trace('Escalation succeeded')
            elif success:  # 2.18 shows it without the host
                _display.vvv('Escalation succeeded')
            if _RESULT_OUTPUT_DEBUG_ONLY:
                self._trace('rc=%s' % result[0])
            else:
                self._trace('rc=%s, stdout and stderr censored due to no log'
                            % result[0] if no_log else str(tuple(result)))
        if _RESULT_OUTPUT_DEBUG_ONLY and C.DEFAULT_DEBUG:
            _display.debug('stdout and stderr censored due to no log'
                           if no_log else 'stdout and stderr: %s'
                           % str(tuple(result[1:])))

    def _run_command(self, cmd: str, in_data: Optional[bytes],
                     sudoable: bool,
                     success: Optional[str]) -> tuple[int, bytes, bytes]:
        from plasmid.ansible import commands
        parsed = commands.parse(cmd, success)
        hosted = parsed is not None and (
            not parsed.become or self.become.name in HOSTED_BECOME) and \
            self._shell_runs(parsed.shell)
        if not hosted:
            return self._run_as_given(cmd, in_data, success, sudoable)
        try:
            return self._run_hosted(parsed, in_data, sudoable)
        except _RefusedAsVanillaShowsIt:
            pass
        return self._run_as_given(cmd, in_data, success, sudoable)

    def _shell_runs(self, shell: str) -> bool:
        """Whether *shell* (ansible's ``executable``) is there to run.
        Where it is not, vanilla's login shell fails each command at it,
        in its own words: so does ours, given the command as it is.  A
        name without a path is looked for on PATH there: taken as found."""
        if shell == '/bin/sh' or not shell.startswith('/'):
            return True
        return self._call('shell-runs', self._spec(False), shell)

    def _run_hosted(self, parsed: commands.Command, in_data: Optional[bytes],
                    sudoable: bool) -> tuple:
        from plasmid.ansible import commands, payload
        spec = self._spec(parsed.become)
        chore = commands.housekeeping(parsed.text) \
            if not parsed.become and not in_data and \
            parsed.shell in _PLAIN_SHELLS else None
        if chore is not None:
            return self._housekeeping(spec, parsed.text, chore)
        job = payload.parse(in_data) if in_data and parsed.interpreter \
            and parsed.shell in _PLAIN_SHELLS else None
        if job is not None and job.interpreter == parsed.interpreter:
            try:
                return self._run_module(
                    spec, job, self._module_env(parsed, sudoable),
                    _sudo_command(spec, parsed))
            except _RunFromScript:
                pass  # the script below, in the same context
        terminal = self._terminal(in_data, sudoable)
        # On a terminal (a script's run, a module from its script: shown
        # to the user) the whole command, ansible's shell and all, goes to
        # the login's shell, as sshd gives it: what that shell prints as
        # it starts (bash reads ~/.bashrc under sshd) shows as under
        # vanilla, and ansible's shell still parses the command.
        login_shell = self.LOGIN_SHELL_RUNS_COMMANDS and \
            terminal is not None and not parsed.become
        text = parsed.text if parsed.shell == '/bin/sh' and \
            not login_shell else \
            ' '.join(shlex.quote(w) for w in (parsed.shell, '-c',
                                              parsed.text))
        return self._as_ssh_ends(*_output_as_bytes(self._call(
            'shell', spec, None, text, in_data, None, None, None, terminal,
            self._prompt_timeout(), login_shell)), terminal)

    def _module_env(self, parsed: commands.Command,
                    sudoable: bool) -> Optional[dict]:
        """The environment a pipelined module gets on top of its
        context's: the command's.  Under a become method that vanilla ssh
        does not pipeline (su), vanilla runs the module on a terminal
        (``-tt``), and sshd sets TERM to the type ssh announces, which su
        passes on; we pipeline it, so the module gets that TERM here (the
        task's own environment still comes first)."""
        plugin = self.become
        if not parsed.become or plugin is None or \
                getattr(plugin, 'pipelining', True):
            return parsed.env  # the usual path: no option looked up
        term = self._terminal(None, sudoable)
        if not term:
            return parsed.env
        return dict({'TERM': term}, **(parsed.env or {}))

    def _run_module(self, spec: dict, job: payload.ModuleJob,
                    env: dict, sudo_command: Optional[list] = None) -> tuple:
        """Ask for the run by the payload's digest; send the zip itself
        only when the broker lacks it (once per run and module).  Raises
        _RunFromScript for a module that must run from its script.
        *sudo_command*: the words vanilla's sudo would run, which the
        module process names in SUDO_COMMAND
        (``target._export_sudo_command``)."""
        if env and any(name.startswith('PYTHON') for name in env):
            # PYTHONPATH, PYTHONOPTIMIZE, PYTHONWARNINGS...: read by an
            # interpreter as it starts, so a fork of a warm one would run
            # the module without them.  Vanilla's fresh one has them.
            raise _RunFromScript()
        to_target = job.to_target(env)
        if env and 'PATH' in env and '/' not in job.interpreter:
            # Vanilla's shell looks a bare name (python3) up on the task's
            # PATH, which may find another Python, or none (rc 127): the
            # target runs the module only if it finds this one.
            to_target['bare_interpreter'] = job.interpreter
        if sudo_command:
            to_target['sudo_command'] = sudo_command
        try:
            return tuple(self._call('module', spec, job.interpreter,
                                    job.digest, None, to_target))
        except _ZipWanted:
            pass
        # Outside the handler: a failure of this call (a task's timeout)
        # must not carry _ZipWanted as its context, which ansible-core
        # prints as a chain of causes where vanilla says one thing.
        return tuple(self._call('module', spec, job.interpreter,
                                job.digest, job.zip_data, to_target))

    def _housekeeping(self, spec: dict, text: str,
                      chore: commands.Housekeeping) -> tuple:
        # A Python 2 login context's answer: as bytes, as ssh gives it.
        if chore.kind == 'home':
            return _output_as_bytes(self._call('home', spec, text))
        if chore.kind == 'mkdtemp':
            return _output_as_bytes(self._call('mkdtemp', spec, text,
                                               chore.base, chore.name))
        return tuple(self._call(chore.kind, spec, text))  # cleanup, later

    def _terminal(self, in_data: Optional[bytes],
                  sudoable: bool) -> Optional[str]:
        """Where vanilla ssh asks for a terminal (``-tt``), so do we:
        ``raw`` and ``script`` output then reads the same (CRLF, stderr
        merged into stdout).  The terminal's type is our TERM, which the
        ssh client would announce ('' if unset: none); None: no terminal."""
        if in_data is None and sudoable and self.get_option('use_tty'):
            return os.environ.get('TERM', '')
        return None

    def _become_marker(self, cmd: str, sudoable: bool) -> Optional[str]:
        plugin = self.become
        if not (sudoable and plugin and plugin.success):
            return None
        return plugin.success if 'echo %s' % plugin.success in cmd else None

    def _run_as_given(self, cmd: str, in_data: Optional[bytes],
                      success: Optional[str],
                      sudoable: bool) -> tuple[int, bytes, bytes]:
        """The fallback: the whole command through the login shell
        (``raw``'s, which may need that shell: bash's ``[[``, say)."""
        prompt = password = None
        plugin = self.become
        if success and plugin.prompt:
            prompt = _prompt_pattern(plugin)
            password = plugin.get_option('become_pass')
            password = to_bytes(password) if password else None
        timeout = self._prompt_timeout()
        terminal = self._terminal(in_data, sudoable)
        rc, out, err = _output_as_bytes(self._call(
            'shell', self._spec(False), None, cmd, in_data, prompt,
            password, to_bytes(success) if success else None,
            terminal, timeout, self.LOGIN_SHELL_RUNS_COMMANDS))
        # Without the marker the become program never got to the command:
        # a kill then was our prompt handling's, not a signal it died of.
        stopped_at_become = bool(success) and to_bytes(success) not in out
        if stopped_at_become:
            self._check_become_failure(out, err, timeout)
        if success:
            out = _without_become_chatter(plugin, to_bytes(success), out)
        return (rc, out, err) if stopped_at_become else \
            self._as_ssh_ends(rc, out, err, terminal)

    def _check_become_failure(self, out: bytes, err: bytes,
                              timeout: int) -> None:
        """Raise vanilla's error for a become program that stopped short
        of the command: its words are looked for in both streams, as
        vanilla's are; a time-out shows what stdout said, as vanilla's."""
        plugin = self.become
        output = out + err
        if plugin.check_incorrect_password(output):
            raise self._become_password_error('Incorrect')
        if plugin.check_missing_password(output):
            raise self._become_password_error('Missing')
        if prompt_seen(plugin, output) > 1:
            raise self._become_password_error('Incorrect')
        if _BECOME_TIMED_OUT in output:
            said = out.replace(_BECOME_TIMED_OUT, b'').strip()
            raise _prompt_timed_out(timeout, said)

    def _prompt_timeout(self) -> int:
        """How long vanilla's ssh plugin waits for the become program's
        prompt or success: its select timeout, 2 s beyond `timeout`."""
        return 2 + int(self.get_option('timeout') or 10)

    # ----------------------------------------------------------- files

    def put_file(self, in_path: str, out_path: str) -> None:
        super().put_file(in_path, out_path)
        self._trace('PUT %s TO %s' % (in_path, out_path))
        if not os.path.exists(in_path):
            raise AnsibleFileNotFound('file or module does not exist: %s'
                                      % in_path)
        # The broker reads the file itself (same user, same machine).
        self._ours_or_vanillas(
            lambda: self._call('put-file', self._spec(False),
                               os.path.abspath(in_path), out_path),
            lambda: self._vanilla_plugin().put_file(in_path, out_path))

    def fetch_file(self, in_path: str, out_path: str) -> None:
        super().fetch_file(in_path, out_path)
        self._trace('FETCH %s TO %s' % (in_path, out_path))
        # The broker writes the file itself (same user, same machine).
        self._ours_or_vanillas(
            lambda: self._call('fetch-file', self._spec(False), in_path,
                               os.path.abspath(out_path)),
            lambda: self._vanilla_plugin().fetch_file(in_path, out_path))

    def _as_ssh_ends(self, rc: int, out: bytes, err: bytes,
                     terminal: Optional[str]) -> tuple[int, bytes, bytes]:
        """A shell command's result as vanilla's ssh gives it.  Our shell
        stands where the login shell does under sshd; when a signal kills
        that, sshd reports the signal, ssh exits 255 and ansible-core's
        ssh plugin calls the host unreachable.  A session on a terminal
        ends with ssh's line saying the connection closed."""
        if rc < 0:
            raise AnsibleConnectionFailure(
                'Failed to connect to the host via ssh: %s' % _shown(
                    err.decode('utf-8', 'replace'),
                    self._play_context.no_log))
        if terminal is not None:
            err += self._closing_line()
        return rc, out, err

    def _closing_line(self) -> bytes:
        """What vanilla's ssh says as a terminal session ends, by the
        settings its ssh would use for this login (asked once a task):
        the configured options as they are, ControlMaster & co. too."""
        if self._ssh_says_closed is None:
            from plasmid.ansible import ssh_effective
            args = _verbosity(self.get_option('verbosity')) \
                if _SINCE_2_19 else []
            args += shlex.split(self.get_option('ssh_args') or '')
            # The port and user where vanilla puts them (a config's
            # `Match user` may change what ssh says).
            port, user = self.get_option('port'), \
                self.get_option('remote_user')
            args += ['-o', 'Port=%d' % int(port)] if port else []
            args += ['-o', 'User=%s' % user] if user else []
            for option in ('ssh_common_args', 'ssh_extra_args'):
                args += shlex.split(self.get_option(option) or '')
            self._ssh_says_closed = ssh_effective.closing_line(
                ssh_effective.settings(
                    self.get_option('ssh_executable') or 'ssh', args,
                    self._hostname()))
        return self._ssh_says_closed

    def _as_ssh_takes_255(self, result: tuple, in_data: Optional[bytes]
                          ) -> None:
        """ssh exits 255 for its own failures, and passes a command's 255
        on: vanilla's ssh plugin takes both for a connection's, so the host
        is unreachable (a module's ``sys.exit(255)``, a script's
        ``exit -1``), unless the output shows a program's error."""
        _, out, err = result
        said = err.decode('utf-8', 'replace')
        if in_data and self._vanilla_pipelines():
            raise self._data_not_sent(said)
        if not any(words in out or words in err for words in _NOT_SSH_ERRORS):
            raise AnsibleConnectionFailure(
                'Failed to connect to the host via ssh: %s' % _shown(
                    said.rstrip(), self._play_context.no_log))

    def _trace(self, text: str) -> None:
        """What vanilla's plugins show at -vvv: each command, each file."""
        _display.vvv(text, host=self._play_context.remote_addr)

    # ------------------------------------------------------- lifecycle

    def reset(self) -> None:
        try:
            self._call('reset', self._spec(False))
        except AnsibleConnectionFailure:
            pass
        if self._vanilla is not None:
            self._vanilla.reset()

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self._vanilla is not None:
            self._vanilla.close()
            self._vanilla = None
        self._connected = False

    def _vanilla_plugin(self) -> ConnectionBase:
        """ansible-core's plugin of this connection (VANILLA), with our
        options (they are its options, by name) and our become plugin."""
        if self._vanilla is None:
            from plasmid.ansible import takeover
            # new_stdin as TaskExecutor gives it: the collections' plugins
            # still require it, ansible-core's no longer use it.
            vanilla = takeover.load_vanilla(self.VANILLA, self._play_context,
                                            new_stdin=None, shell=self._shell)
            if vanilla is None:
                raise AnsibleError(
                    'plasmid hands this to the %s connection plugin, which '
                    'is not installed' % self.VANILLA)
            if isinstance(vanilla, Connection):
                # Installed as ssh.py in a plugin path: 2.19+ then imports
                # the builtin's file under the same module name as ours.
                raise _VanillaShadowed(
                    '%s is plasmid\'s connection plugin here (it is '
                    'installed under the name "%s"); plasmid hands what it '
                    'does not host to ansible-core\'s plugin, so it cannot '
                    'take that plugin\'s place: name it plasmid.accel.%s '
                    'instead' % ((self.VANILLA,) + (self.transport,) * 2))
            known = set(vanilla.option_definitions)
            vanilla.set_options(direct={name: value for name, value in
                                        self._options.items()
                                        if name in known})
            vanilla.set_become_plugin(self.become)
            self._vanilla = vanilla
        return self._vanilla

    def _broker_error(self, exc: BrokerError) -> Exception:
        """The Ansible error for a failure the broker reports."""
        text = str(exc)
        if exc.kind in ('connect', 'lost'):
            return _SshFailed(text, self._play_context.no_log)
        return AnsibleError('plasmid: %s' % text)


def _pkcs11_args(provider: Optional[str], password: Optional[str],
                 mechanism: str) -> list[str]:
    """A smartcard's (or token's) key for ssh, its PIN the password:
    vanilla's options, first on ssh's command line as there."""
    if not provider:
        return []
    if not password:
        if mechanism == 'disable':
            return []
        raise AnsibleError(
            'to use pkcs11_provider you must specify a password/pin')
    return ['-o', 'KbdInteractiveAuthentication=no',
            '-o', 'PreferredAuthentications=publickey',
            '-o', 'PasswordAuthentication=no',
            '-o', 'PKCS11Provider=%s' % provider]


def _verbosity(level: Optional[int]) -> list[str]:
    """ssh's -v flags, first on its command line as in vanilla's."""
    return ['-' + 'v' * int(level)] if level and int(level) > 0 else []


def _split_args(text: str) -> list[str]:
    """ssh options from configuration, without ControlMaster & co. and
    terminal requests (see _LEFT_OUT_OPTIONS)."""
    return list(_split_args_once(text))


@functools.lru_cache(maxsize=64)
def _split_args_once(text: str) -> tuple[str, ...]:
    # Every task asks again, mostly with the same few strings: shlex is
    # slow enough to show in a run's profile.
    words = shlex.split(text)
    kept: list[str] = []
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        option = None
        if word == '-o' and i + 1 < len(words):
            option, skip = words[i + 1], True
        elif word.startswith('-o'):
            option = word[2:]
        if option is not None and \
                re.split(r'[\s=]', option.strip(), 1)[0].lower() in \
                _LEFT_OUT_OPTIONS:
            continue
        if _TERMINAL_FLAGS.fullmatch(word):  # -t, -tt, -Ctt: the t's
            word = word.replace('t', '')
            if word == '-':
                continue
        kept += [word, option] if skip else [word]
    return tuple(kept)


def _become_flags(method: str, flags: Optional[str]) -> list[str]:
    """The plugin's flags for the interpreter's start: sudo's and doas's
    ``-n`` is ours to add (only where no password is given)."""
    if method == 'sudo':
        return _sudo_flags(flags)
    words = shlex.split(flags or '')
    return [w for w in words if w != '-n'] if method == 'doas' else words


def _sudo_command(spec: dict, parsed: commands.Command) -> Optional[list]:
    """The words vanilla's sudo runs for *parsed* (``/bin/sh``, ``-c``,
    ``echo <marker> ; <interpreter>``), which sudo names in SUDO_COMMAND;
    our interpreter, started once for many tasks, was another command.
    None but under sudo, and where become_flags have sudo run the command
    through a shell (-s, -i): sudo then names the shell and the words
    escaped, for vanilla's command and for ours alike."""
    become = spec['become']
    if not become or become['method'] != 'sudo' or \
            _sudo_runs_a_shell(become['flags']):
        return None
    return parsed.become_runs


# sudo's short options that take a value (the rest of their word, else
# the next word); -h takes one only in its word.
_SUDO_VALUED = 'aCcDgpRrTtUu'


def _sudo_runs_a_shell(flags: list[str]) -> bool:
    """Whether sudo's *flags* have it run its command through a shell:
    -s or -i, alone or among other letters, or their long names (which
    sudo, as getopt_long, also takes shortened)."""
    words = iter(flags)
    for word in words:
        if word == '--':
            break
        if word.startswith('--'):
            if len(word) >= 4 and ('--shell'.startswith(word) or
                                   '--login'.startswith(word)):
                return True
            continue
        if not word.startswith('-'):
            continue
        for at, letter in enumerate(word[1:], 1):
            if letter in 'is':
                return True
            if letter in _SUDO_VALUED or letter == 'h':
                if letter != 'h' and at == len(word) - 1:
                    next(words, None)  # its value
                break
    return False


def _sudo_flags(flags: Optional[str]) -> list[str]:
    """become_flags for our sudo, which always reads a password with -S
    (``-n`` would stop it from asking when one is needed) at a prompt of
    its own (sudo takes one ``-p`` only; a play's is left out, with its
    value)."""
    kept: list[str] = []
    words = iter(shlex.split(flags or ''))
    for word in words:
        if word in ('-p', '--prompt'):
            next(words, None)
        elif word not in ('-S', '-n') and not word.startswith('--prompt=') \
                and not (word.startswith('-p') and word[1:2] != '-'):
            kept.append(word)
    return kept


# Shells (ansible's ``executable``) that show a module nothing of
# themselves, but bash its ``_`` and SHLVL: a module runs here in our
# interpreter.  Through any other (a wrapper that sets a umask or exports
# variables, one that is missing) it runs as given, through that shell.
_PLAIN_SHELLS = frozenset(
    prefix + name for name in ('sh', 'bash', 'dash')
    for prefix in ('', '/bin/', '/usr/bin/'))


class _SshFailed(AnsibleConnectionFailure):
    """ssh did not get us a context, or lost it: *said* is why, in ssh's
    words when it gave them.  ansible-core's ssh plugin words this as a
    failure to connect, or, where the command carried data (a pipelined
    module), as data that could not be sent (``exec_command`` does
    that)."""

    def __init__(self, said: str, no_log: bool = False) -> None:
        super().__init__('Failed to connect to the host via ssh: %s'
                         % _shown(said.rstrip(), no_log))
        self.said = said  # "data not sent" shows it even under no_log


# Words in a command's output that tell vanilla's ssh plugin its exit
# status 255 is the command's, not ssh's (ansible-core's own list).
_NOT_SSH_ERRORS = (b'Traceback (most recent call last):', b'PHP Parse error:',
                   b'chmod: invalid mode',
                   b'chmod: A flag or octal number is not correct.')


def _shown(said: str, no_log: bool) -> str:
    """ssh's words as vanilla's ssh plugin shows them in a failure to
    connect: censored for a task with no_log."""
    return '<error censored due to no log>' if no_log else said


def _output_as_bytes(answer: Any) -> tuple[int, bytes, bytes]:
    """A shell command's ``(rc, stdout, stderr)`` with its output as
    bytes, as ssh gives it: a Python 2 context sends its native ``str``,
    which arrives as text (decoded with surrogateescape), and our handling
    of become output works on bytes."""
    rc, out, err = answer
    return rc, _wire_bytes(out), _wire_bytes(err)


def _wire_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogateescape')
    return value




def _prompt_pattern(plugin) -> bytes:
    """The become plugin's password prompt as a regex for the target.  Most
    plugins give the prompt text; su gives True and knows its prompts as
    localised words (``prompt_l10n``)."""
    if isinstance(plugin.prompt, (str, bytes)):
        return re.escape(to_bytes(plugin.prompt).strip())
    try:
        words = plugin.get_option('prompt_l10n')
    except KeyError:
        words = None
    words = words or getattr(plugin, 'SU_PROMPT_LOCALIZATIONS', ['Password'])
    alternatives = b'|'.join(re.escape(to_bytes(w)) for w in words)
    return b'(?:' + alternatives + b')\\s*(?::|\xef\xbc\x9a)'


def prompt_seen(plugin, output: bytes) -> int:
    """How many lines of *output* carry the become prompt."""
    if not plugin.prompt:
        return 0
    pattern = re.compile(_prompt_pattern(plugin), re.I)
    return sum(1 for line in output.splitlines() if pattern.search(line))


def _without_become_chatter(plugin, marker: bytes, data: bytes) -> bytes:
    """What vanilla's ssh plugin keeps of a become command's output: all
    but the line with the success marker and the password prompts before
    it.  A prompt ends vanilla's chunk (the program waits for the
    password), so only its line up to the prompt goes: the newline the
    program prints after reading the password stays, as under vanilla."""
    at = data.find(marker)
    if at < 0:
        return data
    start = data.rfind(b'\n', 0, at) + 1
    end = data.find(b'\n', at)
    head, tail = data[:start], b'' if end < 0 else data[end + 1:]
    if plugin.prompt:
        prompt = re.compile(b'[^\n]*?' + _prompt_pattern(plugin), re.I)
        head = prompt.sub(b'', head)
    return head + tail


def _prompt_timed_out(timeout: int, said: bytes) -> Exception:
    """The release's error for a become prompt that was not answered in
    time, in vanilla's words."""
    return _PROMPT_TIMEOUT_ERROR(
        'Timeout (%ds) waiting for privilege escalation prompt: %s'
        % (timeout, said.decode('utf-8', 'replace')))
