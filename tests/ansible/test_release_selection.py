"""CI runs the tests marked ``edge_releases`` on the oldest and the newest
ansible-core only (conftest.py); the tests that guard ansible-core's
internals, those docs/architecture.md names, must still run on every
release."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHITECTURE = os.path.join(HERE, '..', '..', 'docs', 'architecture.md')
TABLE_HEADING = "## What the accelerator assumes of ansible-core"
# A test with no parameter but the release.
ONE_PER_RELEASE = 'test_reboot.py::test_reboot_matches_vanilla'


def collected(*args: str, every_release: bool = False) -> list[str]:
    """The node ids pytest collects from this directory with *args*."""
    env = dict(os.environ)
    env.pop('PLASMID_EVERY_RELEASE', None)
    if every_release:
        env['PLASMID_EVERY_RELEASE'] = '1'
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '--collect-only', '-q',
         '-p', 'no:cacheprovider', *args, HERE],
        env=env, capture_output=True, text=True, timeout=300)
    # A broken collection must fail here, not leave empty lists behind.
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.split('tests/ansible/', 1)[-1]
            for line in done.stdout.splitlines() if '::' in line]


def guarding_names() -> set[str]:
    """The test files and functions the table of internals names."""
    text = open(ARCHITECTURE).read()
    table = text[text.index(TABLE_HEADING):]
    table = table[:table.index('\n## ', 1)]
    return set(re.findall(r'`?(test_\w+)(?:\.py)?`?', table))


@dataclass
class Collections:
    every: list[str]  # a full run's tests
    ci: list[str]  # CI's
    marked: set[str]  # a full run's tests marked edge_releases


@pytest.fixture(scope='module')
def collections() -> Collections:
    return Collections(
        collected(every_release=True), collected(),
        set(collected('-m', 'edge_releases', every_release=True)))


def test_middle_releases_skip_only_the_marked_tests(collections):
    releases = sorted((t.split('[')[1].rstrip(']')
                       for t in collections.every
                       if t.startswith(ONE_PER_RELEASE + '[')),
                      key=lambda v: [int(n) for n in v.split('.')])
    # None: the test named above was renamed or lost its per-release ids.
    assert releases, 'no %s[<release>] collected' % ONE_PER_RELEASE
    middle = releases[1:-1]
    if not middle:
        pytest.skip('two releases or fewer: none is left out')
    left_out = set(collections.every) - set(collections.ci)
    assert left_out, 'no test is left out of the middle releases'
    assert left_out == {t for t in collections.marked
                        if any('[%s' % v in t for v in middle)}


def test_the_guards_of_ansible_cores_internals_run_on_every_release(
        collections):
    names = guarding_names()
    assert 'test_takeover' in names and 'test_strategy' in names, names
    for name in names:
        per_release = [t for t in collections.every
                       if re.search(r'(^|::)%s(\.py|\[|::|$)' % name, t)
                       and '[2.' in t]
        if not per_release:
            continue  # a test of plasmid's side, not per release
        unmarked = [t for t in per_release if t not in collections.marked]
        assert unmarked, '%s runs on the edge releases only' % name
