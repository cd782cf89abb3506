"""Containers for the container methods' tests, run by podman.

.ci/setup imports IMAGE (a minimal Debian with python3).  Each container a
test starts is named after the test session's pid, so a later session
removes the containers of sessions that were killed.  No Docker engine runs
on this machine kind: the docker client talks to podman's Docker API, which
`docker_api` serves on a private socket.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import time
from typing import Iterator, Optional

from .procs import alive

IMAGE = 'localhost/plasmid-testbed:bookworm'
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


def remove_leftovers() -> None:
    """Remove containers of test sessions that are gone."""
    names = _podman('ps', '-a', '--format', '{{.Names}}').stdout.split()
    for name in names:
        if not name.startswith(NAME_PREFIX):
            continue
        pid = name[len(NAME_PREFIX):].split('-')[0]
        if pid.isdigit() and not alive(int(pid)):
            _podman('rm', '-f', '-t', '0', name, check=False)


@contextlib.contextmanager
def container() -> Iterator[str]:
    """A running container of IMAGE (its first process sleeps; no
    network); yields its name."""
    remove_leftovers()
    name = '%s%d-%d' % (NAME_PREFIX, os.getpid(), next(_numbers))
    _podman(*_runtime_args(), 'run', '-d', '--name', name,
            '--network', 'none',
            # podman would raise these limits past what this VM allows.
            '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=4096:4096',
            IMAGE, 'sleep', 'infinity')
    try:
        yield name
    finally:
        _podman('rm', '-f', '-t', '0', name, check=False)


def first_pid(name: str) -> int:
    """The host pid of container *name*'s first process."""
    return int(_podman('inspect', '-f', '{{.State.Pid}}', name).stdout)


def command_lines(name: str) -> list[str]:
    """The command lines of the processes running in container *name*
    (but the one listing them)."""
    script = ('for p in /proc/[0-9]*; do [ "$p" = /proc/$$ ] || '
              'tr "\\0" " " < $p/cmdline 2>/dev/null; echo; done')
    out = _podman('exec', name, 'sh', '-c', script).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


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
