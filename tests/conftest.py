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
