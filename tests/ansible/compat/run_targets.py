#!/usr/bin/env python3
"""Run ansible-core's own integration targets, vanilla and accelerated.

For each ansible-core version, this unpacks the release's sdist (from
/opt/ansible/sdist, or ``--sdist-dir``) into a work dir, starts a private sshd on loopback (the
test bed's ``SshServer``: its own host key and client key, root may log in
with the key) and runs every target with the sdist's own ansible-test::

    ansible-test integration TARGET --target ssh:root@127.0.0.1:PORT,python=3.11@/usr/bin/python3.11

twice: *vanilla* (ansible-test's inventory: connection ``ssh``, pipelining
on) and *plasmid*.  ansible-test writes ``ansible_connection=ssh`` into its
inventory and passes no environment through (so ANSIBLE_TRANSPORT has no
effect), but it does point ANSIBLE_CONNECTION_PLUGINS at
``test/support/integration/plugins/connection`` of the tree it tests when
that directory exists.  In the plasmid copy of the tree, that directory
holds ``ssh.py``: the text of this repository's plasmid.accel.ssh plugin
plus one line that makes the broker write its counters at exit
(PLASMID_ANSIBLE_STATS).  So the name ``ssh`` means the accelerator there,
and the counters prove per target that it ran.

A third mode, *plasmid-strategy* (not run by default: ``--modes
plasmid-strategy``), adds the optional threaded strategy the same way:
ansible-test also points ANSIBLE_STRATEGY_PLUGINS at
``test/support/integration/plugins/strategy``, where ``linear.py`` then is
plasmid.accel.linear (``STRATEGY_SHIM``), which leaves a marker file each
time the strategy is made: the default strategy name ``linear`` means ours, and the
markers prove it ran.  ``free.py`` and ``host_pinned.py`` there are
plasmid.accel.free and plasmid.accel.host_pinned likewise, for targets that
choose those (other strategies, like ``debug``, run ansible-core's).

Targets ansible-test runs "on the controller" (alias context/controller)
get connection ``local`` from ansible-test whatever --target says; the
accelerator never runs in them, and the report says so.

``connection`` (the connection plugins' conformance suite) is a hidden
target; it is run the way connection_ssh runs it: its test.sh with an
inventory of two hosts (pipelining on and off) on the test bed's sshd, with
``ansible_connection`` ssh or plasmid.accel.ssh.

``connection_local`` (beyond the issue's list; ``--targets
connection_local``) runs that suite, and on 2.19+ a playbook of become
password handling, with the local connection.  Its files name
``ansible_connection=local`` themselves, so in a plasmid tree they are
edited to name plasmid.accel.local (``LOCAL_EDITS``: each edit must find
its text, or the run stops, naming the file), and its runme.sh exports
PLASMID_ANSIBLE_STATS so that the counters prove the accelerator ran.

Results go under build/ansible-compat/ (one JSON file and one log per
version, mode and target); the Markdown report (docs/ansible-compat.md) is
written from every result found there.

Needs root (sshd, destructive targets), the ansible-core venvs with plasmid
installed in editable compat mode (/opt/plasmid-ansible/X.Y, else
/opt/ansible/X.Y; ``--venv-root DIR`` looks in DIR/X.Y instead), and the
sdists.  Example::

    python3 tests/ansible/compat/run_targets.py --versions 2.21,2.18 --jobs 2

The plasmid that runs is this file's checkout: the plugin's text comes from
it, and the venv must import plasmid from it too (checked).  To test one
commit while the working tree changes, run the script from a clone with
venvs of its own, and keep the results with the others::

    git clone . /tmp/snap   # then venvs under /opt/snap-venvs/X.Y, with
                            # pip install --config-settings editable_mode=compat -e /tmp/snap
    python3 /tmp/snap/tests/ansible/compat/run_targets.py --venv-root /opt/snap-venvs \
        --results $PWD/build/ansible-compat --doc /tmp/snap-report.md ...
    python3 tests/ansible/compat/run_targets.py --report-only

(the report takes in notes.md of the checkout that writes it, hence the
second command).  The Runs table says which venv ran and which clone, at
which commit.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, 'tests'))

PLUGIN = os.path.join(REPO, 'ansible_collections', 'plasmid', 'accel',
                      'plugins', 'connection', 'ssh.py')
SDIST_DIR = '/opt/ansible/sdist'
VENV_ROOTS = ('/opt/plasmid-ansible', '/opt/ansible')
DEFAULT_RESULTS = os.path.join(REPO, 'build', 'ansible-compat')
DEFAULT_DOC = os.path.join(REPO, 'docs', 'ansible-compat.md')
# Hand-written analysis of the failures, put into the report as it is.
NOTES = os.path.join(HERE, 'notes.md')
TARGET_PYTHON = '3.11@/usr/bin/python3.11'
TARGET_INTERPRETER = '/usr/bin/python3.11'
VERSIONS = ('2.18', '2.19', '2.20', '2.21', '2.22')
MODES = ('vanilla', 'plasmid', 'plasmid-strategy')
DEFAULT_MODES = ('vanilla', 'plasmid')

TARGETS = (
    'command_shell', 'raw', 'script', 'stat', 'file', 'copy', 'template',
    'fetch', 'lineinfile', 'assemble', 'slurp', 'ping', 'environment',
    'module_defaults', 'old_style_modules_posix', 'want_json_modules_posix',
    'module_utils', 'no_log', 'check_mode', 'loops', 'until', 'handlers',
    'blocks', 'register', 'delegate_to', 'async', 'async_fail', 'become_su',
    'become_sudo', 'become_unprivileged', 'remote_tmp',
    'interpreter_discovery_python', 'connection', 'meta_tasks',
    'wait_for_connection', 'gathering_facts',
    # Beyond the list: the conformance suite over the local
    # connection, which plasmid.accel.local takes in a plasmid tree.
    'connection_local',
)

# Targets beyond the that choose the free or host_pinned strategy:
# run in modes vanilla and plasmid-strategy, they try plasmid's threaded
# free and host_pinned (a table of their own in the report).
STRATEGY_TARGETS = ('strategy_free', 'strategy_host_pinned', 'includes',
                    'includes_race', 'handler_race')

# What targets leave behind on the machine that makes their next run fail
# (ansible's CI gives each run a fresh container): removed before each run.
# 'user:NAME' is an account the target creates (removed with its home);
# 'debconf:NAME' a package's answers in the debconf database (purged).
LEFTOVERS = {
    'lineinfile': ['~root/file.txt'],  # 'Create a file without a path' asserts changed
    # The test user's home stays; re-created with another uid, it is not its own.
    'remote_tmp': ['user:tmptest', '/home/tmptest'],
    # Even a passing run leaves two dirs in root's home whose absence the
    # check_mode tests assert; an interrupted one also leaves its user.
    'copy': ['user:tmp_ansible_test_user', '/home/tmp_ansible_test_user',
             '/etc/sudoers.d/tmp_ansible_test_user', '~root/checkmode_subdir',
             '~root/destdir_should_never_exist_because_of_check_mode'],
    # Its first setting of each answer asserts changed.
    'debconf': ['debconf:ddclient', 'debconf:ddclient2',
                'debconf:libnss-ldapd', 'debconf:libnns-ldap'],
}


# Targets that use the same fixed names and so must not run at the same time:
# file's handler "remove users" deletes tmp_ansible_test_user (force: yes),
# the account copy creates for itself, uses up to acls.yml and deletes last.
CONFLICTS = {
    'file': {'copy'},
    'copy': {'file'},
}


# setup_test_user (become, become_su, become_sudo, find, slurp, unarchive)
# gives its account a sudoers file and leaves it when the account goes: a
# later account of that name must not inherit the rights.  Swept after each
# target (which also takes what an interrupted earlier run left).
TEST_USER_PREFIX = 'ansibletest'


def remove_leftovers(target: str) -> None:
    for item in LEFTOVERS.get(target, ()):
        if item.startswith('user:'):
            name = item[5:]
            if subprocess.call(['id', name], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL) == 0:
                subprocess.call(['userdel', '-r', name], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
            continue
        if item.startswith('debconf:'):
            subprocess.run(['debconf-communicate', item[8:]], input=b'PURGE\n',
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            continue
        path = os.path.expanduser(item)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)

STATS_LINE = '''
# Added by tests/ansible/compat/run_targets.py: the broker writes its
# counters here at exit, which shows that the accelerator ran.
import os as _os, uuid as _uuid  # noqa: E402
_os.environ.setdefault('PLASMID_ANSIBLE_STATS', _os.path.join(
    %r, 'broker-%%s.json' %% _uuid.uuid4().hex))
'''

# connection_local's files, edited in a plasmid tree so that its local
# connection is plasmid.accel.local: file -> (text, its replacement); a
# file a release lacks (2.18 has no become playbook) is left out.
LOCAL_TARGET = os.path.join('test', 'integration', 'targets', 'connection_local')
LOCAL_EDITS = {
    'test_connection.inventory': (
        '\nansible_connection=local\n',
        '\nansible_connection=plasmid.accel.local\n'),
    'test_become_password_handling.yml': (
        '- hosts: testhost\n  gather_facts: no\n',
        '- hosts: testhost\n  gather_facts: no\n  vars:\n'
        '    ansible_connection: plasmid.accel.local\n'),
    'runme.sh': (
        '\nset -eux\n',
        # A folder: each ansible run's broker leaves its own counters.
        '\nset -eux\nexport PLASMID_ANSIBLE_STATS=%(stats)s\n'),
}


# Builtin strategy file -> the plasmid class that extends it.
SHIMMED_STRATEGIES = {'linear.py': 'StrategyModule',
                      'free.py': 'FreeStrategyModule',
                      'host_pinned.py': 'HostPinnedStrategyModule'}

STRATEGY_SHIM = '''
# Written by tests/ansible/compat/run_targets.py: in this tree the strategy
# named by this file means plasmid's (plasmid.accel.linear for linear.py).
# ansible-core loads this file under the name of the builtin strategy that
# plasmid's extends: the builtin is loaded under that name first.
import importlib.util as _util, os as _os, sys as _sys, uuid as _uuid
import ansible.plugins.strategy as _package

_me = _sys.modules.get(__name__)
_spec = _util.spec_from_file_location(
    __name__, _os.path.join(_package.__path__[0], %(file)r))
_builtin = _util.module_from_spec(_spec)
_sys.modules[__name__] = _builtin
try:
    _spec.loader.exec_module(_builtin)
    from plasmid.ansible.strategy import %(cls)s as _Accelerated
finally:
    if _me is not None:
        _sys.modules[__name__] = _me


class StrategyModule(_Accelerated):
    """A marker file per strategy made: this strategy ran (and whether on
    threads)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        with open(_os.path.join(%(stats)r, 'strategy-%%s.%%s' %% (
                _uuid.uuid4().hex, 'thread' if self._threaded else 'fork')),
                'w'):
            pass
'''


# ------------------------------------------------------------------ setup

def venv_for(version: str, roots=VENV_ROOTS) -> str:
    for root in roots:
        venv = os.path.join(root, version)
        if os.path.exists(os.path.join(venv, 'bin', 'ansible-playbook')):
            return venv
    raise SystemExit('no ansible-core %s venv under %s' % (version, ' or '.join(roots)))


def check_venv(venv: str) -> str:
    """The venv's exact ansible-core version; plasmid must be importable,
    and from this checkout (the plugin's text comes from it)."""
    python = os.path.join(venv, 'bin', 'python')
    out = subprocess.run(
        [python, '-c', 'import ansible.release, plasmid.ansible, '
         'ansible_collections.plasmid.accel; print(ansible.release.__version__); '
         'print(plasmid.__file__)'],
        capture_output=True, text=True, cwd='/')
    install = ('install it: %s/bin/pip install -q --config-settings '
               'editable_mode=compat -e %s' % (venv, REPO))
    if out.returncode:
        raise SystemExit('%s cannot import plasmid (%s):\n%s'
                         % (venv, install, out.stderr.strip()))
    version, where = (out.stdout.strip().splitlines() + ['', ''])[:2]
    if os.path.realpath(os.path.dirname(where)) != os.path.realpath(os.path.join(REPO, 'plasmid')):
        raise SystemExit('%s imports plasmid from %s, not from %s (%s)'
                         % (venv, os.path.dirname(where), REPO, install))
    return version


# Targets whose runme.sh makes a venv with --system-site-packages from the
# venv's base Python and runs ansible-playbook in it: that Python must
# import ansible-core's requirements (and plasmid, for the plasmid modes),
# or the target fails on the machine ("No module named 'jinja2'"), not on
# what it tests.
NEEDS_BASE_PYTHON = ('delegate_to',)
BASE_IMPORTS = ('jinja2', 'yaml', 'cryptography', 'packaging', 'resolvelib')


def check_base_python(venv: str, targets, modes) -> None:
    """Warn, at the start, when a target of NEEDS_BASE_PYTHON will fail for
    want of modules in the venv's base Python (with and without the
    accelerator: the report marks it so), saying how to add them."""
    if not set(targets) & set(NEEDS_BASE_PYTHON):
        return
    python = os.path.join(venv, 'bin', 'python')
    base = subprocess.run(
        [python, '-c', 'import os, sys; print(os.path.join(sys.base_prefix, '
         '"bin", "python%d.%d" % sys.version_info[:2]))'],
        capture_output=True, text=True, check=True).stdout.strip()
    wanted = list(BASE_IMPORTS)
    if set(modes) - {'vanilla'}:
        wanted.append('plasmid.ansible')
    missing = [name for name in wanted if subprocess.run(
        [base, '-c', 'import ' + name], capture_output=True, cwd='/').returncode]
    if missing:
        print('WARNING: %s cannot import %s, and the runme.sh of %s makes a venv with '
              '--system-site-packages from it: the target will fail for the machine, not '
              'for what it tests. To run it whole, add them (%s -m pip install jinja2 PyYAML '
              'cryptography packaging resolvelib, then for plasmid %s -m pip install '
              '--config-settings editable_mode=compat -e %s).'
              % (base, ', '.join(missing), ', '.join(NEEDS_BASE_PYTHON), base, base, REPO),
              file=sys.stderr, flush=True)


def sdist_for(full_version: str, sdist_dir: str = SDIST_DIR) -> str:
    path = os.path.join(sdist_dir, 'ansible_core-%s.tar.gz' % full_version)
    if not os.path.exists(path):
        raise SystemExit('missing sdist %s' % path)
    return path


def unpack(sdist: str, dest: str) -> str:
    """Unpack the sdist under dest (once); return the source root."""
    name = os.path.basename(sdist)[:-len('.tar.gz')]
    root = os.path.join(dest, name)
    if not os.path.exists(os.path.join(root, 'test', 'lib', 'ansible_test')):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        with tarfile.open(sdist) as tar:
            tar.extractall(dest, filter='tar')
    return root


class Tree:
    """One unpacked copy of ansible-core that runs one target at a time."""

    def __init__(self, root: str, mode: str, key: str) -> None:
        self.root = root
        self.mode = mode
        self.stats_dir = os.path.join(os.path.dirname(root), 'broker-stats')
        # ansible-test looks for its ssh key pair in test/results/.tmp first.
        tmp = os.path.join(root, 'test', 'results', '.tmp')
        os.makedirs(tmp, exist_ok=True)
        for suffix in ('', '.pub'):
            shutil.copyfile(key + suffix, os.path.join(tmp, 'id_rsa' + suffix))
        os.chmod(os.path.join(tmp, 'id_rsa'), 0o600)
        shutil.rmtree(os.path.join(root, 'test', 'support'), ignore_errors=True)
        if mode != 'vanilla':
            os.makedirs(self.stats_dir, exist_ok=True)
            with open(PLUGIN) as handle:
                text = handle.read()
            self._shim('connection', 'ssh.py', text + STATS_LINE % self.stats_dir)
            self._edit_local_target()
        if mode == 'plasmid-strategy':
            for name, cls in SHIMMED_STRATEGIES.items():
                self._shim('strategy', name, STRATEGY_SHIM % {
                    'file': name, 'cls': cls, 'stats': self.stats_dir})

    def _edit_local_target(self) -> None:
        """connection_local's local connection becomes plasmid.accel.local
        (see LOCAL_EDITS); the edits are made once per unpacked tree."""
        target = os.path.join(self.root, LOCAL_TARGET)
        for name, (text, replacement) in LOCAL_EDITS.items():
            path = os.path.join(target, name)
            if not os.path.exists(path):
                continue
            replacement %= {'stats': self.stats_dir}
            with open(path) as handle:
                content = handle.read()
            if replacement in content:
                continue
            if text not in content:
                raise SystemExit('%s: %r not found: connection_local changed, '
                                 'update LOCAL_EDITS' % (path, text))
            with open(path, 'w') as handle:
                handle.write(content.replace(text, replacement, 1))

    def plugin_dir(self, kind: str) -> str:
        """Where ansible-test looks for the tree's own plugins of *kind*."""
        return os.path.join(self.root, 'test', 'support', 'integration',
                            'plugins', kind)

    def _shim(self, kind: str, name: str, text: str) -> None:
        """A plugin of ours under a builtin's name, in plugin_dir(kind)."""
        shim_dir = self.plugin_dir(kind)
        os.makedirs(shim_dir, exist_ok=True)
        with open(os.path.join(shim_dir, name), 'w') as handle:
            handle.write(text)

    def strategy_runs(self) -> dict:
        """How many times our strategy was made, by kind of worker."""
        found = {'thread': 0, 'fork': 0}
        for path in glob.glob(os.path.join(self.stats_dir, 'strategy-*')):
            found[path.rpartition('.')[2]] += 1
        return found

    def clear_stats(self) -> None:
        for path in glob.glob(os.path.join(self.stats_dir, '*.json')) + \
                glob.glob(os.path.join(self.stats_dir, 'strategy-*')):
            os.unlink(path)

    def collect_stats(self, wait: float) -> list[dict]:
        """Counters of every broker the target started (they write them
        once their ansible process is gone)."""
        deadline = time.time() + wait
        found: list[dict] = []
        stable_since = time.time()
        while True:
            before = len(found)
            found = []
            for path in sorted(glob.glob(os.path.join(self.stats_dir, '*.json'))):
                try:
                    with open(path) as handle:
                        found.append(json.load(handle))
                except (OSError, ValueError):
                    pass
            if len(found) != before:
                stable_since = time.time()
            # A broker writes within a second or so of its run's end.
            if time.time() >= deadline or (found and time.time() - stable_since > 3):
                return found
            time.sleep(0.5)


# ---------------------------------------------------------------- running

from testbed.accounts import remove_orphaned_sudoers  # noqa: E402
from testbed.sshd import SshServer  # noqa: E402


class Sshd(SshServer):
    """The test bed's sshd, with sftp (ansible's ssh plugin transfers files
    with sftp by default, and without it falls back to scp, then to dd) and
    users' own ~/.ssh/authorized_keys.  Run it with use_pam=True: without
    PAM, sshd refuses key logins to accounts without a password (locked),
    which is what the users targets create are."""

    def _write_config(self) -> None:
        super()._write_config()
        with open(self.config) as handle:
            text = handle.read()
        # Targets that create users (copy, become_unprivileged) give them
        # root's ~/.ssh/authorized_keys and log in as them.
        text = re.sub(r'(?m)^AuthorizedKeysFile .*$',
                      lambda m: m.group(0) + ' .ssh/authorized_keys', text)
        # delegate_to reaches 127.0.0.3, .4 and .254 with ssh and checks that the
        # facts it gathers there say so (SSH_CONNECTION).
        text = re.sub(r'(?m)^ListenAddress .*$',
                      lambda m: '\n'.join([m.group(0)] + ['ListenAddress %s' % a
                                                          for a in EXTRA_ADDRESSES]), text)
        with open(self.config, 'w') as handle:
            handle.write(text + 'Subsystem sftp internal-sftp\n')


MARK = 'plasmid-ansible-compat'
EXTRA_ADDRESSES = ('127.0.0.3', '127.0.0.4', '127.0.0.254')


def _strip_marked(path: str, created: bool) -> None:
    """Remove what root_ssh_setup added to path."""
    with open(path) as handle:
        text = handle.read()
    text = re.sub(r'(?ms)^# >>> %s\n.*?^# <<< %s\n' % (MARK, MARK), '', text)
    kept = [l for l in text.splitlines(True) if not l.rstrip().endswith(MARK)]
    if created and not ''.join(kept).strip():
        os.unlink(path)
    else:
        with open(path, 'w') as handle:
            handle.writelines(kept)


SSH_CONFIG_BLOCK = '''\
# >>> {mark}
# Written by tests/ansible/compat/run_targets.py while it runs; removed after.
# Targets marked needs/ssh expect `ssh localhost` (and 127.0.0.3, .4 and
# .254 for delegate_to) to reach an sshd as root: here that is the run's own.
Host localhost
    HostName 127.0.0.1
Host localhost {addresses}
    Port {port}
    IdentityFile {key}
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    LogLevel ERROR
# <<< {mark}
'''


@contextlib.contextmanager
def root_ssh_setup(server):
    """What ansible-test's own hosts have and targets rely on: root's
    ~/.ssh/authorized_keys holds the key the tests log in with (targets
    copy it to the users they create), and `ssh localhost` as root works.
    Added with a marker, taken out again afterwards."""
    ssh_dir = os.path.expanduser('~root/.ssh')
    os.makedirs(ssh_dir, mode=0o700, exist_ok=True)
    keys = os.path.join(ssh_dir, 'authorized_keys')
    config = os.path.join(ssh_dir, 'config')
    created = {path: not os.path.exists(path) for path in (keys, config)}
    with open(server.client_key + '.pub') as handle:
        key = ' '.join(handle.read().split()[:2])
    try:
        with open(keys, 'a') as handle:
            handle.write('%s %s\n' % (key, MARK))
        os.chmod(keys, 0o600)
        with open(config, 'a') as handle:
            handle.write(SSH_CONFIG_BLOCK.format(mark=MARK, port=server.port,
                                                 key=server.client_key,
                                                 addresses=' '.join(EXTRA_ADDRESSES)))
        os.chmod(config, 0o600)
        yield
    finally:
        for path, new in created.items():
            if os.path.exists(path):
                _strip_marked(path, new)


def run_logged(argv: list[str], log_path: str, cwd: str, env: dict,
               timeout: float) -> tuple[int, bool]:
    """Run argv with output to log_path; kill its process group on timeout."""
    with open(log_path, 'w') as log:
        log.write('$ cd %s && %s\n\n' % (cwd, ' '.join(argv)))
        log.flush()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
        RUNNING.add(proc)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return -1, True
        finally:
            RUNNING.discard(proc)


RUNNING: set = set()


def stop_group(proc: subprocess.Popen) -> None:
    """Stop a target's whole process group (it runs in a session of its own)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            pass


def on_sigterm(*_: object) -> None:
    for proc in list(RUNNING):
        stop_group(proc)
    sys.exit(143)


def base_env(venv: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('ANSIBLE_', 'PLASMID_', 'PYTHON'))}
    env['PATH'] = os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', os.defpath)
    env['ANSIBLE_NOCOLOR'] = '1'
    return env


def ansible_test_argv(venv: str, tree: Tree, target: str, port: int,
                      verbosity: int) -> list[str]:
    # The stub finds the tree's own ansible-test from where it is called:
    # bin/ansible-test, a symlink as in ansible-core's git tree.
    stub = os.path.join(tree.root, 'bin', 'ansible-test')
    if not os.path.lexists(stub):
        os.makedirs(os.path.dirname(stub), exist_ok=True)
        os.symlink('../test/lib/ansible_test/_util/target/cli/ansible_test_cli_stub.py', stub)
    argv = [os.path.join(venv, 'bin', 'python'), stub, 'integration', target,
            '--target', 'ssh:root@127.0.0.1:%d,python=%s' % (port, TARGET_PYTHON),
            '--allow-destructive', '--allow-root', '--allow-disabled',
            '--allow-unstable', '--allow-unsupported', '--color', 'no']
    if verbosity:
        argv.append('-' + 'v' * verbosity)
    return argv


CONNECTION_INVENTORY = """\
[ssh]
ssh-pipelining ansible_ssh_pipelining=true ansible_pipelining=true
ssh-no-pipelining ansible_ssh_pipelining=false ansible_pipelining=false
[ssh:vars]
ansible_host=127.0.0.1
ansible_port={port}
ansible_user=root
ansible_ssh_private_key_file={key}
ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'
ansible_connection={connection}
ansible_python_interpreter={python}
"""


def connection_suite(venv: str, tree: Tree, port: int, key: str,
                     log_path: str, timeout: float, verbosity: int) -> tuple[int, bool]:
    """The hidden `connection` target, run as connection_ssh runs it."""
    suite = os.path.join(tree.root, 'test', 'integration', 'targets', 'connection')
    inventory = os.path.join(os.path.dirname(tree.root), 'connection.inventory')
    with open(inventory, 'w') as handle:
        handle.write(CONNECTION_INVENTORY.format(
            port=port, key=key, python=TARGET_INTERPRETER,
            connection='ssh' if tree.mode == 'vanilla' else 'plasmid.accel.ssh'))
    env = base_env(venv)
    env.update(INVENTORY=inventory, ANSIBLE_HOST_KEY_CHECKING='false',
               ANSIBLE_LOCAL_TEMP=os.path.join(os.path.dirname(tree.root), 'ansible-local'))
    if tree.mode != 'vanilla':
        # A folder: each ansible run's broker leaves its own counters.
        env['PLASMID_ANSIBLE_STATS'] = tree.stats_dir
    if tree.mode == 'plasmid-strategy':
        # test.sh runs ansible-playbook itself, which does take these.
        env['ANSIBLE_STRATEGY_PLUGINS'] = tree.plugin_dir('strategy')
        env['ANSIBLE_STRATEGY'] = 'linear'
    argv = ['bash', './test.sh', '-e', 'target_hosts=ssh', '-e', 'action_prefix=',
            '-e', 'local_tmp=/tmp/ansible-local', '-e', 'remote_tmp=/tmp/ansible-remote']
    if verbosity:
        argv.append('-' + 'v' * verbosity)
    return run_logged(argv, log_path, suite, env, timeout)


def exclusive(tree: Tree, target: str) -> bool:
    """Whether a target changes users or sudo rules of the machine."""
    path = os.path.join(tree.root, 'test', 'integration', 'targets', target, 'aliases')
    try:
        with open(path) as handle:
            aliases = handle.read()
    except OSError:
        return False
    return any(word in aliases for word in (
        'setup_test_user', 'setup_become_user_pair', 'become_unprivileged'))


def target_context(tree: Tree, target: str) -> str:
    path = os.path.join(tree.root, 'test', 'integration', 'targets', target, 'aliases')
    try:
        with open(path) as handle:
            aliases = handle.read()
    except OSError:
        return 'missing'
    if target == 'connection':
        return 'ssh'
    if 'context/controller' in aliases:
        return 'controller'
    return 'target'


# ------------------------------------------------------------ log reading

_IGNORED = re.compile(r'\.\.\.ignoring|ignore_errors')
_FATAL = re.compile(r'^(fatal|failed): \[[^\]]*\]: (?:FAILED|UNREACHABLE)!')
_OTHER = re.compile(r'(ERROR!|\[ERROR\]|^FAILURE|Traceback \(most recent|'
                    r'AssertionError|^[A-Za-z]*Error: |No such file|'
                    r'command not found|^ERROR: (?!Command ".*" returned exit status))')


def _quiet(text: str) -> str:
    """text without ssh's own debug lines (vanilla ssh runs with -vvv)."""
    return '\n'.join(l for l in text.splitlines()
                     if not re.match(r'\s*(OpenSSH_|debug\d: )', l))


def _msg_of(line: str, after: list[str] = ()) -> str:
    """The msg (or stderr) of a fatal line's JSON result, else the line."""
    if line.rstrip().endswith('=> {'):  # a result printed over many lines
        body = []
        for more in after:
            body.append(more)
            if more.startswith('}'):
                break
        line = line.rstrip() + ' ' + ' '.join(body)
    start = line.find('=> {')
    if start >= 0:
        try:
            data = json.loads(line[start + 3:])
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get('assertion'), str):
            return '%s assertion failed: %s' % (line[:start].strip(), data['assertion'])
        if isinstance(data, dict):
            said = ['%s: %s' % (key, ' '.join(_quiet(data[key]).split())[:150])
                    for key in ('msg', 'stderr', 'module_stderr', 'exception')
                    if isinstance(data.get(key), str) and _quiet(data[key]).strip()]
            if said:
                return '%s %s' % (line[:start].strip(), '; '.join(said[:2]))
    return line


def _first_error(lines: list[str]) -> str:
    """The line that says what went wrong, for the report: the last task
    failure that was not ignored (a block's rescue runs after earlier
    ones, and a failed task ends the play), or a later error line of the
    target's script; else ansible-test's own last words."""
    task = ''
    found = ''
    for i, line in enumerate(lines):
        if line.startswith('TASK ['):
            task = line.split('[', 1)[1].rsplit(']', 1)[0]
        if _FATAL.search(line):
            if _IGNORED.search(' '.join(lines[i + 1:i + 3])):
                continue
            text = _msg_of(line, lines[i + 1:i + 200])
            found = ('%s (task: %s)' % (text, task) if task else text)
        elif _OTHER.search(line):
            # ansible prints an [ERROR] block before its fatal: line
            window = ' '.join(lines[i:i + 30])
            if not _IGNORED.search(window) and not _FATAL.search(window):
                found = line.strip()
    if found:
        return found
    for line in reversed(lines):
        if line.startswith('ERROR:') or 'FAILED' in line:
            return line.strip()
    return lines[-1].strip() if lines else '(empty log)'


def timeout_reason(lines: list[str], timeout: float) -> str:
    task = next((l for l in reversed(lines) if l.startswith('TASK [')), '')
    task = task.split('[', 1)[1].rsplit(']', 1)[0] if task else '?'
    return 'timed out after %d s, in task: %s' % (timeout, task)


def first_error(lines: list[str]) -> str:
    text = re.sub(r'\x1b\[[0-9;]*m|\[0m', '', _first_error(lines))
    return ' '.join(text.split())[:300]


# ------------------------------------------------------------------ a run

class Runner:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()

    def run_version(self, version: str) -> None:
        args = self.args
        venv = venv_for(version, args.venv_roots)
        full = check_venv(venv)
        check_base_python(venv, args.targets, args.modes)
        sdist = sdist_for(full, args.sdist_dir)
        vdir = os.path.join(args.results, version)
        os.makedirs(vdir, exist_ok=True)
        with Sshd(use_pam=True) as server, root_ssh_setup(server):
            key = server.client_key
            slots: dict[str, queue.Queue] = {}
            for mode in args.modes:
                slots[mode] = queue.Queue()
                for n in range(args.jobs):
                    root = unpack(sdist, os.path.join(args.results, 'work', version,
                                                      '%s-%d' % (mode, n)))
                    slots[mode].put(Tree(root, mode, key))
            # ansible-test logs in as root with the key we placed in its tree.
            with open(os.path.join(server.dir, 'authorized_keys', 'root'), 'w') as handle:
                with open(key + '.pub') as pub:
                    handle.write(pub.read())
            os.chmod(os.path.join(server.dir, 'authorized_keys', 'root'), 0o644)
            meta_path = os.path.join(vdir, 'meta.json')
            try:
                with open(meta_path) as handle:
                    old = json.load(handle)
            except (OSError, ValueError):
                old = {}
            runs = old.get('runs', [])
            for run in runs:  # runs from before runs said which venv they used
                run.setdefault('venv', old.get('venv', '?'))
            # Later runs of some targets replace those targets' results only.
            runs = [r for r in runs if set(r['targets']) - set(args.targets)]
            runs.append({
                'command': args.command_line, 'targets': list(args.targets),
                'plasmid': plasmid_revision(), 'checkout': REPO, 'venv': venv,
                'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
            })
            meta = {'version': version, 'ansible_core': full, 'venv': venv,
                    'machine': machine(), 'runs': runs}
            with open(meta_path, 'w') as handle:
                json.dump(meta, handle, indent=1)
            any_tree = slots[args.modes[0]].queue[0]
            self.pending = [(target, mode) for target in args.targets for mode in args.modes]
            self.running: list[tuple[str, bool]] = []
            self.exclusive = {t for t in args.targets if exclusive(any_tree, t)}
            self.cond = threading.Condition()
            workers = [threading.Thread(target=self.worker, args=(version, venv, server, slots),
                                        daemon=True) for _ in range(args.jobs)]
            for thread in workers:
                thread.start()
            for thread in workers:
                while thread.is_alive():  # join() with a timeout lets signals in
                    thread.join(1.0)

    def worker(self, version: str, venv: str, server, slots: dict) -> None:
        """Run jobs until none is left.  A target never runs twice at once
        (vanilla and plasmid would share its fixed paths), and targets that
        create users or sudo rules run alone."""
        while True:
            with self.cond:
                while True:
                    if not self.pending:
                        return
                    job = next((j for j in self.pending if self._may_start(j[0])), None)
                    if job is not None:
                        break
                    self.cond.wait()
                self.pending.remove(job)
                entry = (job[0], job[0] in self.exclusive)
                self.running.append(entry)
            try:
                self.run_one(version, venv, server, slots[job[1]], job[0], job[1])
            except Exception as exc:  # report and go on with the others
                print('%s %s %s: runner error %r' % (version, job[1], job[0], exc), flush=True)
            finally:
                with self.cond:
                    self.running.remove(entry)
                    self.cond.notify_all()

    def _may_start(self, target: str) -> bool:
        if any(name == target or alone or name in CONFLICTS.get(target, ())
               for name, alone in self.running):
            return False
        return not (target in self.exclusive and self.running)

    def run_one(self, version: str, venv: str, server, slots: queue.Queue,
                target: str, mode: str) -> None:
        args = self.args
        tree: Tree = slots.get()
        try:
            out_dir = os.path.join(args.results, version, mode)
            os.makedirs(out_dir, exist_ok=True)
            log_path = os.path.join(out_dir, target + '.log')
            context = target_context(tree, target)
            tree.clear_stats()
            remove_leftovers(target)
            started = time.time()
            if context == 'missing':
                with open(log_path, 'w') as handle:
                    handle.write('no such target in ansible-core %s\n' % version)
                rc, timed_out = 127, False
            elif target == 'connection':
                rc, timed_out = connection_suite(venv, tree, server.port, server.client_key,
                                                 log_path, args.timeout, args.verbosity)
            else:
                env = base_env(venv)
                rc, timed_out = run_logged(
                    ansible_test_argv(venv, tree, target, server.port, args.verbosity),
                    log_path, tree.root, env, args.timeout)
            seconds = time.time() - started
            brokers = tree.collect_stats(wait=12.0) if mode != 'vanilla' else []
            strategies = tree.strategy_runs()
            with open(log_path, errors='replace') as handle:
                lines = handle.read().splitlines()
            result = {
                'target': target, 'mode': mode, 'version': version,
                'context': context, 'rc': rc, 'timed_out': timed_out,
                'passed': rc == 0, 'seconds': round(seconds, 1),
                'reason': '' if rc == 0 else (
                    timeout_reason(lines, args.timeout) if timed_out else first_error(lines)),
                'plasmid': plasmid_revision() if mode != 'vanilla' else '',
                'brokers': len(brokers),
                'strategies': strategies,
                'counters': sum_counters(brokers),
                'log': (os.path.relpath(log_path, REPO)
                        if log_path.startswith(REPO + os.sep) else log_path),
                'tail': lines[-40:],
            }
            with open(os.path.join(out_dir, target + '.json'), 'w') as handle:
                json.dump(result, handle, indent=1)
            with self.lock:
                print('%s %-8s %-30s %s %6.1fs%s' % (
                    version, mode, target, 'pass' if rc == 0 else 'FAIL', seconds,
                    ' brokers=%d' % len(brokers) if mode != 'vanilla' else ''),
                    flush=True)
        finally:
            remove_orphaned_sudoers(TEST_USER_PREFIX)
            slots.put(tree)


def plasmid_revision() -> str:
    """The commit plasmid ran from, and whether its code had local changes."""
    head = subprocess.run(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True).stdout.strip() or '?'
    dirty = subprocess.run(['git', '-C', REPO, 'status', '--porcelain', '--',
                            'plasmid', 'ansible_collections'],
                           capture_output=True, text=True).stdout.strip()
    return head + (' + local changes' if dirty else '')


def sum_counters(brokers: list[dict]) -> dict:
    total: dict = {}
    for stats in brokers:
        for key, value in stats.items():
            if isinstance(value, (int, float)):
                total[key] = total.get(key, 0) + value
    return total


def machine() -> str:
    try:
        with open('/proc/cpuinfo') as handle:
            cpu = next((l.split(':', 1)[1].strip() for l in handle
                        if l.startswith('model name')), '?')
    except OSError:
        cpu = '?'
    return '%s %s, %s, %d cores; runner Python %s, controller Python the venv\'s, target /usr/bin/python3.11' % (
        platform.system(), platform.release(), cpu, os.cpu_count() or 0,
        platform.python_version())


# ----------------------------------------------------------------- report

def load_results(results: str) -> tuple[dict, dict]:
    found: dict = {}
    metas: dict = {}
    for path in glob.glob(os.path.join(results, '*', '*', '*.json')):
        with open(path) as handle:
            data = json.load(handle)
        log = path[:-len('.json')] + '.log'
        if not data['passed'] and not data['timed_out'] and os.path.exists(log):
            with open(log, errors='replace') as handle:  # the current reading
                data['reason'] = first_error(handle.read().splitlines())
        found[(data['version'], data['mode'], data['target'])] = data
    for path in glob.glob(os.path.join(results, '*', 'meta.json')):
        with open(path) as handle:
            data = json.load(handle)
        metas[data['version']] = data
    return found, metas


def result_cell(res: dict, van: Optional[dict]) -> str:
    """One mode's result for one target and version, in the table's words."""
    if res['passed']:
        text = 'pass'
    elif res['mode'] != 'vanilla' and van is not None and not van['passed']:
        text = 'FAIL*'
    else:
        text = 'FAIL'
    if res['mode'] != 'vanilla' and not res['brokers']:
        text += ' (local)' if res['context'] == 'controller' else ' (no broker)'
    strategies = res.get('strategies')
    if res['mode'] == 'plasmid-strategy' and strategies is not None:
        if not any(strategies.values()):
            text += ' (no strategy)'
        elif not strategies['thread']:
            text += ' (forked)'
    return text


def results_table(found: dict, versions: list, shown: list, names) -> list[str]:
    """A table of *names* by version, a cell per mode, and its pass counts."""
    out = ['| target | ' + ' | '.join(versions) + ' |',
           '|---|' + '---|' * len(versions)]
    summary: dict = {v: {m: [0, 0] for m in MODES} for v in versions}
    for name in names:
        cells = []
        for v in versions:
            van = found.get((v, 'vanilla', name))
            parts = []
            for mode in shown:
                res = found.get((v, mode, name))
                if res is None:
                    parts.append('–')
                    continue
                if res['context'] == 'missing':
                    parts.append('n/a')
                    continue
                summary[v][mode][1] += 1
                if res['passed']:
                    summary[v][mode][0] += 1
                parts.append(result_cell(res, van))
            cells.append(' / '.join(parts))
        out.append('| %s | %s |' % (name, ' | '.join(cells)))
    out += ['', '| passed | ' + ' | '.join(
        ' / '.join('%d/%d' % tuple(summary[v][m]) for m in shown)
        for v in versions) + ' |', '']
    return out


def write_report(results: str, doc: str, targets: tuple, only=None) -> None:
    found, metas = load_results(results)
    if only:
        found = {k: v for k, v in found.items() if k[0] in only}
        metas = {k: v for k, v in metas.items() if k in only}
    versions = sorted({v for v, _, _ in found}, key=lambda v: tuple(map(int, v.split('.'))),
                      reverse=True)
    names = list(targets) + sorted({t for _, _, t in found} - set(targets))
    out = ['# ansible-core integration targets, vanilla and accelerated', '',
           'Written by `tests/ansible/compat/run_targets.py` (see its docstring for how it',
           'works). Each of ansible-core\'s own integration targets was run with the',
           "release's own ansible-test against a private sshd on 127.0.0.1, logged in as",
           'root; once as ansible-test configures it (*vanilla*: connection `ssh`,',
           'pipelining on) and once with the connection name `ssh` resolving to',
           'plasmid.accel.ssh (*plasmid*). `connection` is the hidden conformance suite,',
           'run like connection_ssh runs it (two hosts, pipelining on and off).', '',
           'A third column, where present, is *plasmid-strategy*: the same plus the',
           'optional threaded strategies, which the strategy names `linear` (the',
           'default), `free` and `host_pinned` resolve to in that copy of the tree',
           '(`--modes plasmid-strategy`; targets that choose another strategy run',
           'that one).', '',
           '## How to reproduce', '',
           'One command runs the targets for the versions it is given and rewrites this',
           'file from every result under build/ansible-compat/ (as root, after .ci/setup',
           'or with plasmid installed in the /opt/ansible venvs):', '',
           '```sh',
           'python3 tests/ansible/compat/run_targets.py --versions 2.21,2.18,2.19,2.20 --jobs 2 --timeout 600',
           '```', '',
           '`--targets a,b` runs some targets only (their results replace the stored ones),',
           '`--modes plasmid` runs one mode only, `--venv-root DIR` takes the venvs from',
           'DIR/X.Y, `--results DIR` keeps results elsewhere (the script\'s docstring shows',
           'how to test a clone at one commit while the working tree changes),',
           '`--report-only` rewrites this file from the stored results. Logs:',
           'build/ansible-compat/VERSION/MODE/TARGET.log (not committed).', '',
           'What the machine needs besides the venvs and the sdists: root, sshd, sudo,',
           '`setfacl` (Debian package acl; lineinfile and the become targets use it),',
           'and, for `delegate_to`, ansible-core\'s requirements (and plasmid) in the base',
           'Python of each venv: its runme.sh makes a venv with `--system-site-packages`',
           'from it (the script warns at the start when they are missing: then the target',
           'fails for the machine, with and without the accelerator).',
           'While it runs, the script adds its key to root\'s ~/.ssh/authorized_keys',
           '(targets copy that file to the users they create) and a `Host localhost',
           '127.0.0.3 127.0.0.4 127.0.0.254` block to root\'s ~/.ssh/config pointing at its sshd',
           '(targets marked needs/ssh run `ssh localhost`); both are marked and taken out',
           'at the end.', '',
           '## Runs', '',
           '"plasmid at": the commit of the checkout the script ran from (a clone',
           'when named: the plasmid it ran); "venv": the ansible-core venv it used.', '',
           '| version | ansible-core | date | plasmid at | venv | command |',
           '|---|---|---|---|---|---|']
    for v in versions:
        meta = metas.get(v, {})
        runs = meta.get('runs') or [meta]
        for run in runs:
            at = run.get('plasmid', '?')
            checkout = run.get('checkout')
            if checkout and os.path.realpath(checkout) != os.path.realpath(REPO):
                at += ' (clone %s)' % checkout
            out.append('| %s | %s | %s | %s | %s | `%s` |' % (
                v, meta.get('ansible_core', '?'), run.get('date', '?'), at,
                run.get('venv', meta.get('venv', '?')), run.get('command', '?')))
    out += ['', 'A later command for some targets replaces their earlier results. The first',
            '2.21 run met gaps of this machine that the script now fills (sshd without',
            'PAM, sftp or users\' own authorized_keys, no `ssh localhost`, no setfacl, files',
            'targets leave behind); the targets they broke were run again.']
    machines = sorted({m.get('machine', '?') for m in metas.values()})
    out += ['', 'Machine: ' + '; '.join(machines), '']
    shown = [m for m in MODES if any(k[1] == m for k in found)]
    out += ['## Results', '',
            'Cells: %s. `pass`, `FAIL`; `FAIL*` = fails without the' % ' / '.join(shown),
            'accelerator too; `(local)` = ansible-test runs this target on the controller',
            '(alias context/controller: connection `local`) and no broker ran, so the',
            'accelerator was not used in it (controller targets whose own inventories use',
            'ssh, like become_unprivileged and delegate_to, do use it); `(no broker)` = a',
            'target-side target in which no broker ran; `n/a` = no such target in that',
            'release; `–` = not run. With the strategy: `(no strategy)` = it was never',
            'made (the target chose another), `(forked)` = it ran with forked workers.', '']
    out += results_table(found, versions, shown, targets)
    extra = [t for t in STRATEGY_TARGETS if any(k[2] == t for k in found)]
    if extra:
        out += ['### Targets that choose free or host_pinned', '',
                'Beyond the issue\'s list: ansible-core\'s targets that run plays with the',
                '`free` or `host_pinned` strategy, which the plasmid-strategy mode resolves',
                'to plasmid.accel.free and plasmid.accel.host_pinned (run with',
                '`--targets %s --modes vanilla,plasmid-strategy`).' % ','.join(STRATEGY_TARGETS),
                '']
        out += results_table(found, versions, shown, extra)
    out += ['## Failures', '',
            'The first meaningful error line of each failing run\'s log.', '']
    for v in versions:
        rows = [found[k] for k in sorted(found) if k[0] == v and not found[k]['passed']
                and found[k]['context'] != 'missing']
        if not rows:
            continue
        out += ['### %s' % v, '']
        for res in sorted(rows, key=lambda r: (names.index(r['target'])
                                               if r['target'] in names else 999, r['mode'])):
            also = ''
            if res['mode'] != 'vanilla':
                van = found.get((v, 'vanilla', res['target']))
                if van is not None and not van['passed']:
                    also = ' (fails without the accelerator too)'
                else:
                    also = ' (**accelerator only**)'
            out.append('- `%s` %s%s: %s' % (res['target'], res['mode'], also,
                                            res['reason'].replace('|', '\\|').replace('`', "'")))
        out.append('')
    if os.path.exists(NOTES):
        with open(NOTES) as handle:
            out += [handle.read().rstrip(), '']
    out += ['## Accelerator use per target', '',
            'Seconds per run (two targets ran at a time on a shared, busy 2-core machine:',
            'indicative only), then the plasmid run\'s brokers and their summed counters:',
            'modules run from RAM, commands through a context\'s shell, commands run as',
            'given (the fallback), contexts (every ansible run\'s broker; before',
            '2026-12-06, `connection` and `connection_local` showed their last run\'s only).',
            '']
    for v in versions:
        out += ['### %s' % v, '', '| target | s vanilla | s plasmid | brokers | module_runs | shell | as given | contexts |',
                '|---|---|---|---|---|---|---|---|']
        for name in names:
            van = found.get((v, 'vanilla', name))
            pla = found.get((v, 'plasmid', name))
            if pla is None and van is None:
                continue
            c = (pla or {}).get('counters', {})
            out.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                name, van and '%.0f' % van['seconds'] or '–',
                pla and '%.0f' % pla['seconds'] or '–',
                pla and pla['brokers'] or 0, c.get('module_runs', 0),
                c.get('shell', 0) + c.get('shell_become', 0), c.get('shell_as_given', 0),
                c.get('contexts', 0)))
        out.append('')
    os.makedirs(os.path.dirname(doc), exist_ok=True)
    with open(doc, 'w') as handle:
        handle.write('\n'.join(out))


# ------------------------------------------------------------------- main

def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--versions',
                        help='comma-separated ansible-core versions (%s; default 2.21, '
                        'or with --report-only every version with results)' % ','.join(VERSIONS))
    parser.add_argument('--targets', default=','.join(TARGETS),
                        help='comma-separated targets (default: the %d of the issue, and connection_local)' % (len(TARGETS) - 1))
    parser.add_argument('--modes', default=','.join(DEFAULT_MODES),
                        help='of %s' % ', '.join(MODES))
    parser.add_argument('--jobs', type=int, default=1, help='targets run at once (at most 2 advised)')
    parser.add_argument('--timeout', type=float, default=1800.0, help='seconds per target')
    parser.add_argument('-v', dest='verbosity', action='count', default=1,
                        help='more ansible-test verbosity (default -v)')
    parser.add_argument('--venv-root', dest='venv_roots', action='append', metavar='DIR',
                        help='look for the ansible-core venvs in DIR/X.Y (may be given '
                        'more than once; default: %s)' % ' then '.join(VENV_ROOTS))
    parser.add_argument('--sdist-dir', default=SDIST_DIR, metavar='DIR',
                        help='where the ansible_core-X.Y.Z.tar.gz sdists are (default: %(default)s)')
    parser.add_argument('--results', default=DEFAULT_RESULTS, metavar='DIR',
                        help='where results are stored and read (default: %(default)s)')
    parser.add_argument('--doc', default=DEFAULT_DOC, metavar='FILE',
                        help='the report written (default: %(default)s)')
    parser.add_argument('--report-only', action='store_true')
    args = parser.parse_args(argv)
    only = [v for v in (args.versions or '').split(',') if v]
    args.versions = only or ['2.21']
    args.targets = [t for t in args.targets.split(',') if t]
    args.modes = [m for m in args.modes.split(',') if m]
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown:
        parser.error('unknown mode %s (modes: %s)' % (', '.join(unknown), ', '.join(MODES)))
    args.venv_roots = tuple(args.venv_roots or VENV_ROOTS)
    args.command_line = 'python3 tests/ansible/compat/run_targets.py ' + ' '.join(argv)
    if not args.report_only:
        # A plain kill still stops sshd and takes the ssh setup out again.
        signal.signal(signal.SIGTERM, on_sigterm)
        if os.geteuid() != 0:
            raise SystemExit('run as root: the targets need sshd and root')
        runner = Runner(args)
        for version in args.versions:
            runner.run_version(version)
    write_report(args.results, args.doc, TARGETS,
                 only if args.report_only and only else None)
    print('wrote', args.doc)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
