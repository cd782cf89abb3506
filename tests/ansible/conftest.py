"""Fixtures for the accelerator's tests: ansible-core venvs and a target.

The venvs come from .ci/setup (one per tested ansible-core release, with
plasmid installed); the target is the test bed's sshd, logged into as a
dedicated account with password-less sudo.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
from typing import Iterator

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from testbed.accounts import (USER_B, kill_user_processes,  # noqa: E402
                              remove_orphaned_accounts,
                              remove_orphaned_sudoers, remove_temp_files,
                              requiring_tty, write_sudoers)
from testbed.session import SshTestbed, live_sessions  # noqa: E402
from testbed.sshd import SshServer  # noqa: E402
from runner import PASSWORD  # noqa: E402

ANSIBLE_ROOT = os.environ.get('PLASMID_ANSIBLE_ROOT', '/opt/plasmid-ansible')
# One account per test session: sessions running side by side (a developer
# and CI, say) must not delete each other's account.
ACCOUNT_PREFIX = 'plasmid-an'
ACCOUNT_MODULUS = 100000
ACCOUNT = '%s%d' % (ACCOUNT_PREFIX, os.getpid() % ACCOUNT_MODULUS)
SUDOERS = '/etc/sudoers.d/%s' % ACCOUNT
# An account playbooks create, become and delete (it may not exist).
DOOMED_PREFIX = 'plasmid-gn'
DOOMED_ACCOUNT = '%s%d' % (DOOMED_PREFIX, os.getpid() % ACCOUNT_MODULUS)


def ansible_versions() -> list[str]:
    found = sorted(os.path.basename(os.path.dirname(os.path.dirname(p)))
                   for p in glob.glob(os.path.join(ANSIBLE_ROOT, '*', 'bin',
                                                   'ansible-playbook')))
    return found or ['missing']


def _venv_bin(version: str) -> str:
    """The bin/ directory of the ansible-core venv of *version*."""
    if version == 'missing':
        pytest.skip('no ansible-core venv under %s: run .ci/setup'
                    % ANSIBLE_ROOT)
    return os.path.join(ANSIBLE_ROOT, version, 'bin')


@pytest.fixture(params=ansible_versions(), scope='session')
def ansible_bin(request) -> str:
    """The bin/ directory of one ansible-core venv."""
    return _venv_bin(request.param)


# CI's time is bounded: tests marked ``edge_releases`` (those that cost
# most, mainly whole playbooks compared with vanilla) run on the oldest and
# the newest release only, unless PLASMID_EVERY_RELEASE=1 asks for the full
# run.  On every release run the tests that docs/architecture.md names for
# ansible-core's internals a release may move (test_release_selection.py
# checks it), the broadest parity test and the staying modules' check.
EVERY_RELEASE = os.environ.get('PLASMID_EVERY_RELEASE') == '1'


def edge_versions() -> list[str]:
    """The oldest and the newest release (every one in a full run)."""
    found = ansible_versions()
    if EVERY_RELEASE:
        return found
    return sorted({found[0], found[-1]})


def pytest_configure(config) -> None:
    config.addinivalue_line(
        'markers', 'edge_releases: runs on the oldest and the newest '
        'ansible-core only, unless PLASMID_EVERY_RELEASE=1')


def pytest_collection_modifyitems(config, items) -> None:
    """Deselect the middle releases' runs of tests marked edge_releases
    (pytest's summary counts them as deselected)."""
    edges = set(edge_versions())
    kept, dropped = [], []
    for item in items:
        params = getattr(item, 'callspec', None)
        release = params and params.params.get('ansible_bin')
        if release and release not in edges and \
                item.get_closest_marker('edge_releases'):
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope='session')
def newest_ansible_bin() -> str:
    """The newest ansible-core's bin/, for tests of plasmid's own side
    that no release changes and that cost too much to run on each."""
    return _venv_bin(ansible_versions()[-1])


def _bundled_collection(name: str) -> str:
    """A directory for ANSIBLE_COLLECTIONS_PATH holding collection *name*,
    which .ci/setup takes from the "ansible" bundle."""
    path = os.path.join(ANSIBLE_ROOT, 'collections')
    if not os.path.isdir(os.path.join(path, 'ansible_collections',
                                      *name.split('.'))):
        pytest.skip('%s is not under %s: run .ci/setup' % (name, path))
    return path


@pytest.fixture(scope='session')
def community_general() -> str:
    """community.general, for its doas become plugin."""
    return _bundled_collection('community.general')


@pytest.fixture(scope='session')
def ansible_posix() -> str:
    """ansible.posix, for synchronize."""
    return _bundled_collection('ansible.posix')


@pytest.fixture(scope='session')
def containers_podman() -> str:
    """containers.podman, whose podman connection plasmid.accel.podman is
    compared with."""
    return _bundled_collection('containers.podman')


def _writable_lxc_container(without: tuple[str, ...] = ()) -> Iterator[str]:
    """A running LXC container of the test bed whose /tmp, /var/tmp and
    root's home are writable (in memory), as playbooks need, lacking the
    rootfs files *without* names; its name.  Fails where .ci/setup has not
    run: CI must run the LXC tests."""
    from testbed import containers
    reason = containers.lxc_unavailable_reason()
    if reason is not None:
        pytest.fail(reason)
    with containers.lxc_container(containers.ANSIBLE_WRITABLE,
                                  without) as name:
        yield name


@pytest.fixture(scope='module')
def ansible_lxc_container() -> Iterator[str]:
    """A writable LXC container with the test bed's python3."""
    yield from _writable_lxc_container()


@pytest.fixture(scope='module')
def lxc_container_without_python() -> Iterator[str]:
    """As ansible_lxc_container, but its file system has no python3."""
    from testbed import containers
    yield from _writable_lxc_container(containers.PYTHON_FILES)


@pytest.fixture(scope='session')
def lxc_ansible_bin() -> str:
    """The bin/ of the newest ansible-core venv that has the python lxc
    bindings, which community.general.lxc (compared with plasmid.accel.lxc)
    needs: .ci/setup builds them in the newest venv on a Python older than
    3.13, since under 3.13 they abort every attached command."""
    for version in reversed(ansible_versions()):
        python = os.path.join(_venv_bin(version), 'python')
        if subprocess.run([python, '-c', 'import lxc'],
                          capture_output=True).returncode == 0:
            return _venv_bin(version)
    pytest.fail('no python lxc bindings in any venv under %s: run .ci/setup'
                % ANSIBLE_ROOT)


@pytest.fixture(scope='session')
def community_docker() -> str:
    """community.docker, whose docker connection plasmid.accel.docker is
    compared with."""
    return _bundled_collection('community.docker')


@pytest.fixture(scope='session')
def kubernetes_core() -> str:
    """kubernetes.core, whose kubectl connection plasmid.accel.kubectl is
    compared with."""
    return _bundled_collection('kubernetes.core')


@pytest.fixture
def doomed_account(ansible_account) -> str:
    """The name of an account the login may sudo to without a password,
    for playbooks that create and delete it."""
    return DOOMED_ACCOUNT


def _account_sudoers() -> str:
    return ('Defaults:%s timestamp_timeout=0\n'
            '%s ALL=(root) NOPASSWD: ALL\n'
            '%s ALL=(%s) NOPASSWD: ALL\n'
            '%s ALL=(%s) PASSWD: ALL\n'
            % (ACCOUNT, ACCOUNT, ACCOUNT, DOOMED_ACCOUNT, ACCOUNT, USER_B))


@pytest.fixture
def requiretty(ansible_account) -> Iterator[None]:
    """The account's sudo rules with ``requiretty``, for one test."""
    with requiring_tty(SUDOERS, _account_sudoers(), ACCOUNT):
        yield


@pytest.fixture(scope='session')
def ansible_account(sshd) -> Iterator[str]:
    """An account on the test bed that may sudo to anyone without a
    password; removed with its processes at the end."""
    # Those of sessions killed before their clean-up (this one is
    # registered by now: the sshd fixture did it).
    remove_orphaned_accounts((ACCOUNT_PREFIX, DOOMED_PREFIX),
                             live_sessions(), ACCOUNT_MODULUS)
    remove_orphaned_sudoers(ACCOUNT_PREFIX)
    if subprocess.call(['id', ACCOUNT], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL):
        subprocess.check_call(['useradd', '-m', '-s', '/bin/sh', ACCOUNT])
    # A password unlocks the account for sshd's key login and is what
    # sudo asks for when becoming USER_B.
    subprocess.run(['chpasswd'], input='%s:%s\n' % (ACCOUNT, PASSWORD),
                   text=True, check=True)
    write_sudoers(SUDOERS, _account_sudoers())
    sshd.server.authorize(ACCOUNT)
    try:
        yield ACCOUNT
    finally:
        for name in (ACCOUNT, DOOMED_ACCOUNT):
            kill_user_processes(name)
            remove_temp_files(name)
        subprocess.call(['userdel', '-r', DOOMED_ACCOUNT],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.unlink(SUDOERS)
        subprocess.call(['userdel', '-r', ACCOUNT], stderr=subprocess.DEVNULL)


@pytest.fixture(scope='module')
def sshd_without_python(ansible_account) -> Iterator[SshTestbed]:
    """A second sshd whose sessions find no Python at all (a host before
    ``raw`` installs one); the test account may log in."""
    with SshServer(hide_python=True) as server:
        server.authorize(ansible_account)
        yield SshTestbed(server)


@pytest.fixture(scope='module')
def sshd_with_sftp(ansible_account) -> Iterator[SshTestbed]:
    """A second sshd that serves sftp, as most hosts do (vanilla's ssh
    plugin copies files by it); the test account may log in."""
    with SshServer(sftp=True) as server:
        server.authorize(ansible_account)
        yield SshTestbed(server)


@pytest.fixture(scope='module')
def sshd_with_default_limits(ansible_account) -> Iterator[SshTestbed]:
    """A second sshd with OpenSSH's default MaxStartups (10:30:100: beyond
    ten connections not yet logged in, it drops new ones at random) and
    MaxSessions; the test account may log in."""
    with SshServer(default_limits=True) as server:
        server.authorize(ansible_account)
        yield SshTestbed(server)
