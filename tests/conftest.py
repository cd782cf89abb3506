"""Shared fixtures: the real-parts ssh test bed (tests/testbed/)."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import Iterator

import pytest

# Make `import testbed` work however pytest imports this file (with or
# without tests/__init__.py, any --import-mode).
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from testbed import SshTestbed, ssh_testbed, unavailable_reason  # noqa: E402

# Masters the tests start keep their disk cache (plasmid/master/cache.py)
# here, not in the home of whoever runs the tests.
_CACHE_DIR = tempfile.mkdtemp(prefix='plasmid-test-cache-')
os.environ.setdefault('PLASMID_CACHE_DIR', _CACHE_DIR)


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir() -> Iterator[None]:
    yield
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def sshd() -> Iterator[SshTestbed]:
    """A private sshd with plasmid-a (password + key) and root (key) able to log in.

    Skips when not root or sshd is missing.  Stops sshd and removes the test
    accounts and sudo rules at session end.
    """
    reason = unavailable_reason()
    if reason:
        pytest.skip(reason)
    with ssh_testbed() as bed:
        yield bed


@pytest.fixture(scope="module")
def podman_container() -> Iterator[str]:
    """A running podman container of the test bed's image (a minimal
    Debian with python3, no network); its name.  Fails where .ci/setup has
    not run: CI must run the container tests."""
    from testbed import containers
    reason = containers.unavailable_reason()
    if reason is not None:
        pytest.fail(reason)
    with containers.container() as name:
        yield name


@pytest.fixture(scope='module')
def container_without_python() -> Iterator[str]:
    """A running container of the test bed's image without Python."""
    from testbed import containers
    reason = containers.unavailable_reason()
    if reason is not None:
        pytest.fail(reason)
    with containers.container_without_python() as name:
        yield name


@pytest.fixture(scope='module')
def docker_host(podman_container) -> Iterator[str]:
    """A DOCKER_HOST for the docker client: podman's Docker API, serving
    the test bed's containers (no Docker engine runs on this machine
    kind)."""
    from testbed import containers
    if shutil.which('docker') is None:
        pytest.skip('no docker client on this machine')
    with containers.docker_api() as host:
        yield host
