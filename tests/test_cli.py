"""The ``plasmid`` command (plasmid/cli.py), run as README's first command
runs it: ``python3 -m plasmid``."""
from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys
from typing import Optional

import pytest

from plasmid.cli import ssh_target
from testbed import containers, kubectl


def plasmid_command(*args: str, env: Optional[dict] = None
                    ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, '-m', 'plasmid', *args],
                          capture_output=True, text=True, timeout=120,
                          env=env)


def test_info_starts_a_local_context_and_shows_it() -> None:
    done = plasmid_command('info')
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split()[:4] == ['context', 'python', 'pid', 'uid']
    assert row.split()[:2] == ['local.1', platform.python_version()]


def test_call_prints_the_json_result_of_a_function() -> None:
    done = plasmid_command('call', 'os.path.join', '"a"', '"b"')
    assert (done.returncode, done.stdout, done.stderr) == (0, '"a/b"\n', '')


def test_call_wants_a_dotted_name() -> None:
    done = plasmid_command('call', 'node')
    assert done.returncode != 0
    assert 'give a dotted name' in done.stderr


@pytest.mark.parametrize('args, message', [
    (('call', 'os.nonexistent'), "plasmid: cannot find os.nonexistent: "
     "module 'os' has no attribute 'nonexistent'"),
    (('call', 'plasmid_no_such_module.f'), 'plasmid: cannot find '
     "plasmid_no_such_module.f: No module named 'plasmid_no_such_module'"),
    (('call', 'os.getcwd', '{bad'), "plasmid: argument '{bad' is not JSON"),
    (('call', 'os.path'), 'plasmid: os.path is not a function but module'),
])
def test_a_function_or_argument_that_is_not_there_is_a_message(
        args, message) -> None:
    """Both were Python tracebacks (the bad argument's after a context
    had started)."""
    done = plasmid_command(*args)
    assert done.returncode == 1
    assert done.stderr.startswith(message), done.stderr
    assert 'Traceback' not in done.stderr


@pytest.mark.parametrize('timeout', ['0', '-5', 'nan', 'inf', 'soon',
                                     '3000000'])
def test_a_timeout_that_is_no_positive_number_is_a_usage_error(
        timeout) -> None:
    """0, -5 and nan were Python tracebacks (ValueError); 'soon' was
    refused already."""
    done = plasmid_command('call', '--timeout', timeout, 'os.getpid')
    assert done.returncode == 2
    assert 'a number of seconds above zero' in done.stderr, done.stderr
    assert 'Traceback' not in done.stderr


def test_what_the_function_prints_and_logs_shows_on_stderr() -> None:
    """It was lost: the command set up no logging, so only warnings of
    the contexts' loggers showed."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(
        __file__)) + '/cli_fns')
    done = plasmid_command('call', 'cli_chatty.chatty', env=env)
    assert (done.returncode, done.stdout) == (0, '5\n'), done.stderr
    assert done.stderr.splitlines() == ['printed', 'to stderr', 'logged']


def test_main_run_twice_in_one_process_shows_each_line_once(
        capsys, monkeypatch) -> None:
    """Each main() added another handler: every line showed twice."""
    from plasmid import cli
    monkeypatch.syspath_prepend(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), 'cli_fns'))
    contexts = logging.getLogger('plasmid.ctx')
    before = contexts.handlers[:], contexts.level, contexts.propagate
    try:
        for _ in range(2):
            assert cli.main(['call', 'cli_chatty.chatty']) == 0
    finally:  # as it was, for the tests that read these records
        contexts.handlers[:], contexts.level, contexts.propagate = before
    captured = capsys.readouterr()
    assert captured.out == '5\n5\n'
    assert captured.err.splitlines() == ['printed', 'to stderr',
                                         'logged'] * 2


def test_a_chain_of_hops_runs_in_the_order_given(podman_container) -> None:
    container = podman_container
    done = plasmid_command('info', '--local', '--podman', container)
    assert done.returncode == 0, done.stderr
    names = [line.replace('└─', '').split()[0]
             for line in done.stdout.splitlines()[1:]]
    assert names[0] == 'local.1'
    assert names[1] == 'podman.%s.2' % container
    pid = containers.first_pid(container)
    done = plasmid_command('call', '--setns', str(pid), 'os.path.exists',
                           '"/run/.containerenv"')
    assert (done.returncode, done.stdout) == (0, 'true\n'), done.stderr


@pytest.mark.parametrize('value, parsed', [
    ('web1', (None, 'web1', None)),
    ('deploy@web1:2222', ('deploy', 'web1', 2222)),
    ('a@b@web1', ('a@b', 'web1', None)),
    ('::1', (None, '::1', None)),
    ('fe80::1%eth0', (None, 'fe80::1%eth0', None)),
    ('[::1]', (None, '::1', None)),
    ('root@[::1]:22', ('root', '::1', 22)),
])
def test_an_ssh_hop_names_user_host_and_port(value, parsed) -> None:
    """An IPv6 address was cut at its first colon (int('') failed)."""
    assert ssh_target(value) == parsed


@pytest.mark.parametrize('args, message', [
    (('--ssh', ''), "plasmid: --ssh '': no host name"),
    (('--ssh', 'deploy@'), "plasmid: --ssh 'deploy@': no host name"),
    (('--ssh', 'web1:abc'), "plasmid: --ssh 'web1:abc': the port 'abc' is "
     "not a number"),
    (('--ssh', '[::1'), "plasmid: --ssh '[::1': an IPv6 address in "
     "brackets"),
    (('--ssh', 'web1:0'), 'plasmid: port must be None or 1-65535, not 0'),
    (('--kubectl', '/'), "plasmid: pod must be a name, not ''"),
])
def test_a_hop_value_refused_is_a_message_not_a_traceback(
        args, message) -> None:
    """Each was a Python traceback (ValueError)."""
    done = plasmid_command('call', '--timeout', '5', *args, 'os.getpid')
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(message), done.stderr
    assert 'Traceback' not in done.stderr


def test_a_hop_that_does_not_start_is_a_message_not_a_traceback(
        podman_container) -> None:
    container = podman_container
    done = plasmid_command('info', '--podman', container + '-absent')
    assert done.returncode == 1
    assert done.stderr.startswith('plasmid: podman.%s-absent.1: '
                                  % container), done.stderr
    assert 'Traceback' not in done.stderr


def test_a_kubectl_hop_names_namespace_pod_and_container(
        podman_container) -> None:
    """kubectl from PATH, its cluster from KUBECONFIG (the test bed's
    stand-in API server: tests/testbed/kubectl.py)."""
    reason = kubectl.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    pods = {'jobs/batch': [['main', podman_container, 'root'],
                           ['helper', podman_container, 'nobody']]}
    with kubectl.standin(pods) as config:
        done = plasmid_command('call', '--kubectl', 'jobs/batch:helper',
                               'os.getuid',
                               env=dict(os.environ, KUBECONFIG=config))
    assert (done.returncode, done.stdout) == (0, '65534\n'), done.stderr
