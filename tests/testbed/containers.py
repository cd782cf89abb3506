"""Containers for the container methods' tests, run by podman or LXC.

.ci/setup makes ROOTFS (a minimal Debian with python3) and imports it as
IMAGE.  Each container a test starts is named after the test session's
pid, so a later session removes the containers of sessions that were
killed.  No Docker engine runs on this machine kind: the docker client
talks to podman's Docker API, which `docker_api` serves on a private
socket.  LXC containers run on ROOTFS itself, read-only.
"""
from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from typing import Iterator, Optional

from .procs import alive

IMAGE = 'localhost/plasmid-testbed:bookworm-stdlib'
ROOTFS = '/var/lib/plasmid-testbed/rootfs'
LXC_DIR = '/var/lib/lxc'
LXC_HOST_NAME = 'plasmid-lxc'
NAME_PREFIX = 'plasmid-test-'
_numbers = itertools.count(1)


def unavailable_reason() -> Optional[str]:
    """Why no container can run here, or None."""
    if os.geteuid() != 0:
        return 'the container test bed needs root (podman runs as root)'
    if shutil.which('podman') is None:
        return 'podman is not installed: run .ci/setup'
    if _podman('image', 'exists', IMAGE, check=False).returncode != 0:
        return 'image %s is missing: run .ci/setup' % IMAGE
    return None


def _podman(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(['podman', *args], capture_output=True, text=True,
                          check=check, timeout=120)


def _runtime_args() -> list[str]:
    # crun refuses a kernel with hybrid cgroups (this machine kind's).
    return ['--runtime', 'runc'] if shutil.which('runc') else []


def _new_name() -> str:
    """A container name that says which test session made it."""
    return '%s%d-%d' % (NAME_PREFIX, os.getpid(), next(_numbers))


def _left_by_a_dead_session(name: str) -> bool:
    pid = name[len(NAME_PREFIX):].split('-')[0]
    return name.startswith(NAME_PREFIX) and pid.isdigit() and \
        not alive(int(pid))


def remove_leftovers() -> None:
    """Remove containers of test sessions that are gone."""
    names = _podman('ps', '-a', '--format', '{{.Names}}').stdout.split()
    for name in filter(_left_by_a_dead_session, names):
        _podman('rm', '-f', '-t', '0', name, check=False)


@contextlib.contextmanager
def container() -> Iterator[str]:
    """A running container of IMAGE (its first process sleeps; no
    network); yields its name."""
    remove_leftovers()
    name = _new_name()
    _podman(*_runtime_args(), 'run', '-d', '--name', name,
            '--network', 'none',
            # podman would raise these limits past what this VM allows.
            '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096',
            IMAGE, 'sleep', 'infinity')
    try:
        yield name
    finally:
        _podman('rm', '-f', '-t', '0', name, check=False)


@contextlib.contextmanager
def container_without_python() -> Iterator[str]:
    """A running container of IMAGE whose Python is gone (removed from
    its own writable layer; the image keeps it); yields its name."""
    with container() as name:
        _podman('exec', name, 'rm', '-f', '/usr/bin/python3',
                '/usr/bin/python3.11')
        yield name


def first_pid(name: str) -> int:
    """The host pid of container *name*'s first process."""
    return int(_podman('inspect', '-f', '{{.State.Pid}}', name).stdout)


def command_lines(name: str, lxc: bool = False) -> list[str]:
    """The command lines of the processes running in podman's (or *lxc*:
    LXC's) container *name*, but the one listing them."""
    script = ('for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] || '
              'tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done')
    argv = ['lxc-attach', '--name', name, '--'] if lxc else \
        ['podman', 'exec', name]
    out = subprocess.run(argv + ['sh', '-c', script], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def interpreters_in(name: str, lxc: bool = False) -> list[str]:
    """The command lines of the Python processes in podman's (or *lxc*:
    LXC's) container *name*."""
    return [line for line in command_lines(name, lxc) if 'python' in line]


@contextlib.contextmanager
def docker_api() -> Iterator[str]:
    """podman's Docker API on a private socket; yields the DOCKER_HOST
    that points the docker client at it."""
    directory = tempfile.mkdtemp(prefix='plasmid-docker-api-')
    socket_path = os.path.join(directory, 'podman.sock')
    service = subprocess.Popen(
        ['podman', 'system', 'service', '--time=0', 'unix://' + socket_path],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not os.path.exists(socket_path):
            if service.poll() is not None or time.time() > deadline:
                raise RuntimeError('podman system service did not start')
            time.sleep(0.05)
        yield 'unix://' + socket_path
    finally:
        service.terminate()
        try:
            service.wait(10)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()
        shutil.rmtree(directory, ignore_errors=True)


def lxc_unavailable_reason() -> Optional[str]:
    """Why no LXC container can run here, or None."""
    if os.geteuid() != 0:
        return 'the LXC test bed needs root'
    if shutil.which('lxc-start') is None:
        return 'LXC is not installed: run .ci/setup'
    if not os.access(os.path.join(ROOTFS, 'usr/bin/python3'), os.X_OK):
        return '%s lacks python3: run .ci/setup' % ROOTFS
    return None


LXC_CONFIG = """\
lxc.uts.name = %s
lxc.rootfs.path = dir:%%s
lxc.rootfs.options = ro
lxc.net.0.type = empty
lxc.mount.auto = proc:mixed sys:mixed cgroup:mixed
lxc.autodev = 1
lxc.apparmor.profile = unconfined
lxc.init.cmd = /bin/sleep infinity
""" % LXC_HOST_NAME
# What a container without Python lacks (its file system a copy of ROOTFS).
PYTHON_FILES = ('usr/bin/python3*',)


# A directory of the container kept in memory, writable: Ansible's tasks
# need /tmp, /var/tmp and root's home (temp files, what they write).
LXC_TMPFS = 'lxc.mount.entry = tmpfs %s tmpfs rw,nosuid,nodev,mode=%s 0 0\n'
ANSIBLE_WRITABLE = (('tmp', '1777'), ('var/tmp', '1777'), ('root', '0700'))


@contextlib.contextmanager
def lxc_container(writable: tuple = (), without: tuple = ()) -> Iterator[str]:
    """A running LXC container on ROOTFS (read-only, no network, its first
    process sleeps), with a tmpfs on each of *writable*'s (directory,
    mode) pairs; yields its name.  *without*: glob patterns of paths
    (relative, as in PYTHON_FILES) missing from its file system, then a
    copy of ROOTFS made of hard links (read-only, so ROOTFS's files cannot
    change through it)."""
    _remove_lxc_leftovers()
    name = _new_name()
    os.makedirs(os.path.join(LXC_DIR, name))
    try:
        rootfs = _rootfs_without(os.path.join(LXC_DIR, name), without)
        with open(os.path.join(LXC_DIR, name, 'config'), 'w') as handle:
            handle.write(LXC_CONFIG % rootfs)
            for directory, mode in writable:
                handle.write(LXC_TMPFS % (directory, mode))
        subprocess.run(['lxc-start', '--name', name], check=True,
                       capture_output=True, timeout=60)
        yield name
    finally:
        _remove_lxc(name)


def _rootfs_without(directory: str, without: tuple) -> str:
    """ROOTFS, or a copy of it in *directory* lacking *without*."""
    if not without:
        return ROOTFS
    copy = os.path.join(directory, 'rootfs')
    subprocess.run(['cp', '-al', ROOTFS, copy], check=True, timeout=120)
    for pattern in without:
        found = glob.glob(os.path.join(copy, pattern))
        if not found:
            raise FileNotFoundError('nothing in %s matches %s' % (ROOTFS,
                                                                  pattern))
        for path in found:
            os.unlink(path)
    return copy


def _remove_lxc(name: str) -> None:
    subprocess.run(['lxc-stop', '--name', name, '--kill'],
                   capture_output=True, timeout=60)
    shutil.rmtree(os.path.join(LXC_DIR, name), ignore_errors=True)


def _remove_lxc_leftovers() -> None:
    try:
        names = os.listdir(LXC_DIR)
    except FileNotFoundError:
        return
    for name in filter(_left_by_a_dead_session, names):
        _remove_lxc(name)
