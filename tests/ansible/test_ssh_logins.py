"""Logging in over ssh through the accelerator as vanilla does: a jump host,
unreachable hosts and their messages, password prompts, retries, a link that
goes silent or drops, passwords and their refusal, keys given as text or held
by a token."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
from typing import Iterator

import pytest

from parity import STRATEGY, assert_same, lost_the_pipe_race, run_both
from runner import PASSWORD, inventory, release_of, run_playbook
from testbed.dropping import DroppingPort
from testbed.procs import pgrep


THROUGH_A_JUMP_HOST = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: a module, command: id -un}
    - {name: a module as root, command: id -un, become: true}
    - {name: a raw command, raw: echo raw}
"""


def test_a_jump_host_carries_the_connection(ansible_bin, ansible_account,
                                            sshd, tmp_path):
    """ssh options pass through whole: a host reachable only through a
    ProxyCommand (ansible_host does not resolve) works as in vanilla."""
    server = sshd.server
    common = ' '.join(server.ssh_args())
    jump = 'ssh %s -i %s -p %d -W %s:%d %s@%s' % (
        common, server.client_key, server.port, server.host, server.port,
        ansible_account, server.host)
    inv = ("[targets]\nt1 ansible_host=nowhere.invalid ansible_port=%d "
           "ansible_user=%s ansible_ssh_private_key_file=%s "
           "ansible_ssh_common_args='%s -o HostKeyAlias=[%s]:%d "
           "-o \"ProxyCommand=%s\"' ansible_python_interpreter=/usr/bin/python3\n"
           % (server.port, ansible_account, server.client_key, common,
              server.host, server.port, jump))
    vanilla, ours = run_both(ansible_bin, tmp_path, THROUGH_A_JUMP_HOST, inv)
    assert vanilla.rc == 0, vanilla.output
    assert ours.stats['module_runs'] == 2, ours.stats


UNREACHABLE = """
- hosts: targets
  gather_facts: false
  tasks:
    - command: /bin/true
      ignore_unreachable: true
    - raw: /bin/true
"""


def _stranger_key(tmp_path) -> str:
    """A key no account authorizes."""
    path = tmp_path / 'stranger'
    if not path.exists():
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                        str(path)], check=True)
    return str(path)


def _another_host_key(server, inv, tmp_path, keep) -> str:
    """The host's entry in known_hosts names a key it does not have."""
    known = tmp_path / 'known_hosts_changed'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                    str(tmp_path / 'another_host_key')], check=True)
    key = (tmp_path / 'another_host_key.pub').read_text().split()[:2]
    known.write_text('[%s]:%d %s\n' % (server.host, server.port, ' '.join(key)))
    return re.sub(r'UserKnownHostsFile=\S+', 'UserKnownHostsFile=%s' % known,
                  inv)


def _no_banner(server, inv, tmp_path, keep) -> str:
    """A port that takes connections and never says a word."""
    silent = socket.socket()
    keep.append(silent)
    silent.bind((server.host, 0))
    silent.listen(8)
    return inv.replace('ansible_port=%d' % server.port, 'ansible_port=%d '
                       'ansible_timeout=2' % silent.getsockname()[1])


UNREACHABLE_AS = {
    'refused': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_port=%d' % server.port, 'ansible_port=1'),
    'unresolvable': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_host=%s' % server.host, 'ansible_host=nowhere.invalid'),
    'key refused': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_ssh_private_key_file=%s' % server.client_key,
        'ansible_ssh_private_key_file=%s' % _stranger_key(tmp_path)),
    # With -i, ssh warned of it, and the warning joined the message.
    'key file missing': lambda server, inv, tmp_path, keep: inv.replace(
        'ansible_ssh_private_key_file=%s' % server.client_key,
        'ansible_ssh_private_key_file=/nonexistent/key'),
    'host key changed': _another_host_key,
    'no banner': _no_banner,
}


@pytest.mark.edge_releases
@pytest.mark.parametrize('case', sorted(UNREACHABLE_AS))
def test_unreachable_reads_like_vanilla(ansible_bin, ansible_account, sshd,
                                        tmp_path, case):
    """ssh's own words, worded as vanilla's ssh plugin words them: a
    pipelined module's "Data could not be sent", a raw command's "Failed
    to connect to the host via ssh"."""
    server = sshd.server
    keep: list = []
    inv = UNREACHABLE_AS[case](server, inventory(sshd, ansible_account),
                               tmp_path, keep)
    assert inv != inventory(sshd, ansible_account)
    try:
        vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv,
                               False)
        assert vanilla.rc == 4, vanilla.output
        for extra in ({}, STRATEGY):
            ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv,
                                True, extra)
            assert ours.rc == 4, ours.output
            assert [(r['status'], r['result']['msg'])
                    for r in ours.results] == \
                [(r['status'], r['result']['msg'])
                 for r in vanilla.results]
            assert 'Traceback' not in ours.output
    finally:
        for listener in keep:
            listener.close()


@pytest.mark.edge_releases
def test_unreachable_without_pipelining_set_reads_like_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Pipelining left unset is off for vanilla's ssh plugin, on for ours:
    vanilla's first command then carries no module, and it says "Failed
    to connect to the host via ssh"; ours said "Data could not be
    sent"."""
    server = sshd.server
    inv = inventory(sshd, ansible_account).replace(
        'ansible_port=%d' % server.port, 'ansible_port=1')
    unset = {'ANSIBLE_PIPELINING': None}
    vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, False,
                           unset)
    ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, True, unset)
    assert vanilla.rc == ours.rc == 4, ours.output
    said = [(r['status'], r['result']['msg']) for r in vanilla.results]
    assert [(r['status'], r['result']['msg']) for r in ours.results] == said
    assert 'Failed to connect to the host via ssh' in said[0][1], said


TERMINAL_SESSIONS = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: said, raw: echo hi}
    - name: failed
      raw: 'echo oops >&2; exit 4'
      ignore_errors: true
    - {name: pipelined, command: echo hi}
"""


def test_ssh_says_a_terminal_session_closed_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """At ssh's default LogLevel (INFO) a session on a terminal (raw,
    script) ends with ssh's "Shared connection to H closed." through a
    ControlMaster that stays (ansible's default ssh_args), "Connection to
    H closed." without one, in the task's stderr; ours said nothing."""
    inv = inventory(sshd, ansible_account, hosts=('t1', 't2'))
    for setting in ('ControlMaster=no', 'ControlPath=none', 'LogLevel=ERROR'):
        inv = inv.replace('-o %s ' % setting, '')
    assert 'LogLevel' not in inv
    shared = "ansible_ssh_args='-C -o ControlMaster=auto -o ControlPersist=2s'"
    inv = inv.replace('t1 ', 't1 %s ' % shared).replace(
        't2 ', "t2 ansible_ssh_args='-C -o ControlMaster=no' ")
    vanilla, ours = run_both(ansible_bin, tmp_path, TERMINAL_SESSIONS, inv)
    host = sshd.server.host
    said = {key: r['result'].get('stderr')
            for key, r in vanilla.by_task().items()}
    assert said[('t1', 'said')] == said[('t1', 'failed')] == \
        'Shared connection to %s closed.\r\n' % host, said
    assert said[('t2', 'said')] == said[('t2', 'failed')] == \
        'Connection to %s closed.\r\n' % host, said
    assert said[('t1', 'pipelined')] == said[('t2', 'pipelined')] == '', said


@pytest.mark.parametrize('option', ['Port=1', 'User=nosuchuser'])
def test_ssh_args_win_over_the_port_and_user_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, option):
    """ssh takes an option's first value.  Vanilla puts ssh_args before
    the port and user it adds; we gave them as -p and -l, first, so
    ``-o User=...`` in ssh_args lost to ansible_user (a login as another
    account than vanilla's) and ``-o Port=...`` to ansible_port."""
    inv = inventory(sshd, ansible_account,
                    extra="ansible_ssh_args='-o %s'" % option)
    runs = [run_playbook(ansible_bin, tmp_path, WHO_LOGS_IN, inv,
                         accelerated) for accelerated in (False, True)]
    assert [run.by_task()[('t1', 'who')]['status'] for run in runs] == \
        ['unreachable', 'unreachable'], runs[1].output
    assert runs[0].rc == runs[1].rc == 4


def test_an_ssh_program_that_does_not_run_fails_the_task_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's ssh plugin fails the task ("Unable to execute ssh command
    line on a controller", Popen's error as its cause on 2.19+); ours
    called the host unreachable ("cannot run /nonexistent/ssh")."""
    inv = inventory(sshd, ansible_account,
                    extra='ansible_ssh_executable=/nonexistent/ssh')
    runs = [run_playbook(ansible_bin, tmp_path, WHO_LOGS_IN, inv,
                         accelerated) for accelerated in (False, True)]
    vanilla, ours = [run.by_task()[('t1', 'who')] for run in runs]
    assert (ours['status'], ours['result']['msg']) == \
        (vanilla['status'], vanilla['result']['msg']) == \
        ('failed', vanilla['result']['msg']), runs[1].output
    assert 'Unable to execute ssh command line on a controller' in \
        vanilla['result']['msg']
    assert runs[0].rc == runs[1].rc
    assert "No such file or directory: b'/nonexistent/ssh'" in \
        runs[1].output
    assert 'Traceback' not in runs[1].output


UNREACHABLE_NO_LOG = """
- hosts: targets
  gather_facts: false
  tasks:
    - command: /bin/true
      no_log: true
      ignore_unreachable: true
    - raw: /bin/true
      no_log: true
"""


def test_no_log_censors_ssh_words_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible-core 2.19+ prints an unreachable host's error; vanilla's
    ssh plugin censors ssh's words in it for a no_log task, ours showed
    them ("... port 1: Connection refused")."""
    server = sshd.server
    inv = inventory(sshd, ansible_account).replace(
        'ansible_port=%d' % server.port, 'ansible_port=1')
    unset = {'ANSIBLE_PIPELINING': None}  # vanilla: "Failed to connect"
    runs = [run_playbook(ansible_bin, tmp_path, UNREACHABLE_NO_LOG, inv,
                         accelerated, unset)
            for accelerated in (False, True)]
    vanilla, ours = runs
    assert vanilla.rc == ours.rc == 4, ours.output
    assert 'Connection refused' not in vanilla.output
    assert 'Connection refused' not in ours.output
    censored = [run.output.count('<error censored due to no log>')
                for run in runs]
    assert censored[0] == censored[1], ours.output


@pytest.mark.edge_releases
@pytest.mark.parametrize('discovered', [False, True],
                         ids=['interpreter given', 'interpreter discovered'])
def test_an_unreachable_hosts_error_block_reads_like_vanillas(
        ansible_bin, ansible_account, sshd, tmp_path, discovered):
    """ansible-core 2.19+ prints an error's chain of causes unless it can
    fold them into one line.  Raised during interpreter discovery,
    vanilla's error has discovery's as its context and prints "Task
    failed." and "<<< caused by >>>"; ours had our own internal exception
    there instead (or none), and folded."""
    server = sshd.server
    inv = inventory(sshd, ansible_account).replace(
        'ansible_port=%d' % server.port, 'ansible_port=1')
    if discovered:
        inv = inv.replace('ansible_python_interpreter=/usr/bin/python3', '')
    vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, True)

    def error_block(run) -> list:
        lines = run.output.splitlines()
        start = next((i for i, line in enumerate(lines)
                      if line.startswith('[ERROR]')), None)
        if start is None:  # 2.18 prints the result alone
            return []
        end = next(i for i in range(start, len(lines))
                   if lines[i].startswith('fatal: '))
        # Each run has its own copy of the playbook, named in Origin.
        return [line.replace('playbook-plasmid.yml', 'playbook-vanilla.yml')
                for line in lines[start:end]]

    assert error_block(ours) == error_block(vanilla), ours.output
    chained = any('<<< caused by >>>' in line
                  for line in error_block(vanilla))
    since_2_19 = release_of(ansible_bin) >= (2, 19)
    assert chained == (discovered and since_2_19), vanilla.output


def test_ssh_verbosity_shows_in_an_unreachable_message_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+'s ``ansible_ssh_verbosity``: ssh's -v lines in the message of
    a login that fails, as in vanilla's; on 2.18 the variable means
    nothing, to either."""
    server = sshd.server
    inv = inventory(sshd, ansible_account, extra='ansible_ssh_verbosity=2')
    inv = inv.replace('ansible_port=%d' % server.port, 'ansible_port=1')
    vanilla = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, UNREACHABLE, inv, True)
    assert vanilla.rc == ours.rc == 4, ours.output
    since_2_19 = release_of(ansible_bin) >= (2, 19)
    for run in (vanilla, ours):
        [first, _] = [r['result']['msg'] for r in run.results]
        assert ('debug2: ' in first) == since_2_19, first
        assert 'Connection refused' in first, first


# An ssh that asks for the password in words of its own (a PAM module's,
# another language's), as the real one does: through SSH_ASKPASS when that
# is forced (vanilla's ssh_askpass), else on its terminal (sshpass, ours).
# Then it logs in with the key, as the real ssh.
CUSTOM_PROMPT_SSH = """#!/bin/sh
prompt="Kennwort ($$): "
if [ -n "$SSH_ASKPASS" ] && [ "$SSH_ASKPASS_REQUIRE" = force ]; then
    answer=$("$SSH_ASKPASS" "$prompt")
else
    printf '%s' "$prompt" > /dev/tty
    read -r answer < /dev/tty
fi
[ "$answer" = 'geheim 2' ] || { echo "Zugriff verweigert" >&2; exit 255; }
exec ssh "$@"
"""


def _custom_prompt_inventory(sshd, account: str, tmp_path,
                             extra: str) -> str:
    """A host reached through CUSTOM_PROMPT_SSH, with its password."""
    fake = tmp_path / 'ssh-kennwort'
    fake.write_text(CUSTOM_PROMPT_SSH)
    fake.chmod(0o755)
    return inventory(sshd, account, extra=(
        "ansible_password='geheim 2' ansible_ssh_executable=%s %s"
        % (fake, extra)))


def test_a_password_prompt_named_by_sshpass_prompt_is_answered(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``ansible_sshpass_prompt``: the password is typed where ssh's output
    shows that text, as vanilla's sshpass or askpass helper types it."""
    inv = _custom_prompt_inventory(sshd, ansible_account, tmp_path,
                                   "ansible_sshpass_prompt='Kennwort ('")
    vanilla, ours = run_both(ansible_bin, tmp_path, LOGIN_PASSWORD, inv)
    assert vanilla.rc == 0, vanilla.output
    assert [r['result']['stdout'].split() for r in ours.results] == \
        [[ansible_account]] * 2, ours.results


def test_a_password_prompt_of_other_words_unnamed_fails_naming_it(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The same ssh without ``ansible_sshpass_prompt``: nobody types the
    password, and within ``timeout`` the host is unreachable, the message
    showing the prompt that waited.  Vanilla's askpass (2.19+) refuses
    such a prompt at once: unreachable too.  (2.18's sshpass would wait
    on it for ever, so vanilla is not run there.)"""
    inv = _custom_prompt_inventory(sshd, ansible_account, tmp_path,
                                   'ansible_timeout=2')
    ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True)
    statuses = [r['status'] for r in ours.results]
    assert statuses == ['unreachable'] * 2, ours.output
    for result in ours.results:
        assert 'it waits at a prompt we cannot answer (nothing more within ' \
            '2s): Kennwort (' in result['result']['msg'], result
    if release_of(ansible_bin) >= (2, 19):
        vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv,
                               False)
        assert [r['status'] for r in vanilla.results] == statuses


RETRIED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
"""


@pytest.mark.edge_releases
@pytest.mark.parametrize('retries', [0, 1])
def test_a_login_dropped_once_is_tried_again_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, retries):
    """ansible_ssh_retries: a login whose first connection is dropped
    (ssh's exit status 255) is tried again and the task runs; without
    retries the host is unreachable, with vanilla's words."""
    runs = {}
    for accelerated in (False, True):
        with DroppingPort(sshd.server, drop=lambda n: n == 1) as proxy:
            inv = inventory(sshd, ansible_account).replace(
                'ansible_port=%d' % sshd.server.port,
                'ansible_port=%d ansible_ssh_retries=%d'
                % (proxy.port, retries))
            runs[accelerated] = run_playbook(ansible_bin, tmp_path, RETRIED,
                                             inv, accelerated)
        assert proxy.accepted == 1 + retries
    vanilla, ours = runs[False], runs[True]
    assert_same(vanilla, ours)
    result = ours.by_task()[('t1', 'pipelined')]
    if retries:
        assert result['result']['stdout'] == ansible_account, result
    else:
        assert result['status'] == 'unreachable', result
        assert result['result']['msg'] == \
            vanilla.by_task()[('t1', 'pipelined')]['result']['msg']
    assert ours.stats['login_retries'] == retries


SILENCED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: before
      command: id -un
    - name: during
      command: sleep 8
      ignore_unreachable: true
    - name: after
      command: id -un
      ignore_unreachable: true
"""


def _silence_during_sleep(proxy, account: str,
                          done: threading.Event) -> None:
    """Once the task's command runs on the host, the link goes silent."""
    while not done.wait(0.05):
        if pgrep('-u', account, '-f', '^sleep 8'):
            proxy.blackhole()
            return


def test_a_link_that_goes_silent_mid_task_reads_like_vanilla(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    """The host's link stops carrying anything, without closing, while a
    task runs there: the running task and the next are unreachable, as
    under vanilla, in ssh's words, and nothing waits for ever (ssh's
    keep-alives, set short here in the common args, notice it)."""
    from testbed.latency import LatencyProxy, ToxiproxyMissing
    try:
        proxy = LatencyProxy(sshd.server.port, latency_ms=0)
    except ToxiproxyMissing as exc:
        pytest.skip(str(exc))
    runs = []
    with proxy:
        inv = inventory(sshd, ansible_account).replace(
            'ansible_port=%d' % sshd.server.port,
            'ansible_port=%d' % proxy.port).replace(
            '-o LogLevel=ERROR', '-o ServerAliveInterval=1 '
            '-o ServerAliveCountMax=2')
        for accelerated, extra in ((False, {}), (True, {}),
                                   (True, STRATEGY)):
            done = threading.Event()
            watcher = threading.Thread(target=_silence_during_sleep,
                                       args=(proxy, ansible_account, done))
            watcher.start()
            try:
                runs.append(run_playbook(newest_ansible_bin, tmp_path,
                                         SILENCED, inv, accelerated, extra))
            finally:
                done.set()
                watcher.join()
                subprocess.run(['pkill', '-u', ansible_account, '-f',
                                '^sleep 8'])
                proxy.restore()
    vanilla = runs[0]
    said = {r['task']: (r['status'], r['result'].get('msg', ''))
            for r in vanilla.results}
    assert said['during'][0] == 'unreachable', said
    assert 'not responding' in said['during'][1], said
    assert said['after'][0] == 'unreachable', said
    for ours in runs[1:]:
        assert_same(vanilla, ours)
        assert 'Traceback' not in ours.output


LOGIN_PASSWORD = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
      ignore_unreachable: true
    - name: raw
      raw: id -un
      ignore_unreachable: true
"""


WHO_LOGS_IN = """
- hosts: t1
  gather_facts: false
  tasks:
    - {name: who, command: id -un}
"""


def test_ssh_options_given_on_the_command_line_are_used(
        ansible_bin, ansible_account, sshd, tmp_path):
    """--private-key, --ssh-extra-args (and --ssh-common-args, -u, -T
    alike) reach the plugin's options through their ``cli`` entries, as
    they reach vanilla's; ours had none: the key went unused (unreachable)
    and the extra arguments were ignored (a login vanilla refused)."""
    inv = re.sub(r'ansible_ssh_private_key_file=\S+ ', '',
                 inventory(sshd, ansible_account))
    key = ('--private-key', sshd.server.client_key)
    no_keys = ('--ssh-extra-args', '-o PubkeyAuthentication=no')
    for args, status in ((key, 'ok'), (key + no_keys, 'unreachable')):
        runs = [run_playbook(ansible_bin, tmp_path, WHO_LOGS_IN, inv,
                             accelerated, args=args)
                for accelerated in (False, True)]
        assert [run.by_task()[('t1', 'who')]['status'] for run in runs] \
            == [status, status], runs[1].output
    assert runs[0].rc == runs[1].rc


def _password_inventory(sshd, account: str) -> str:
    """Two hosts that can log in only by password: one given the right
    one, one a wrong one."""
    inv = inventory(sshd, account, hosts=('right', 'wrong'))
    inv = re.sub(r'ansible_ssh_private_key_file=\S+ ', '', inv)
    inv = inv.replace("ansible_ssh_common_args='",
                      "ansible_ssh_common_args='-o PubkeyAuthentication=no ")
    lines = inv.splitlines()
    lines[1] += ' ansible_password=%s' % PASSWORD
    lines[2] += ' ansible_password=wrong-%s' % PASSWORD
    return '\n'.join(lines) + '\n'


def _past_vanillas_broken_pipe(vanilla, ours, refused: tuple, words: str):
    """Vanilla's own race (parity.lost_the_pipe_race): when ssh refuses
    and exits before the module is written to it, vanilla says "[Errno 32]
    Broken pipe" (seen on 2.21); when the race goes the other way it gives
    ssh's words.  Ours must always give ssh's words: check that, and leave
    that result out of the runs so the rest can be compared whole."""
    if not lost_the_pipe_race(vanilla.by_task()[refused]):
        return vanilla, ours
    mine = ours.by_task()[refused]
    assert mine['status'] == 'unreachable', mine
    assert words in mine['result']['msg'], mine
    return (dataclasses.replace(run, results=[
        r for r in run.results if (r['host'], r['task']) != refused])
        for run in (vanilla, ours))


def _assert_password_refusals_match(vanilla, ours, account: str) -> None:
    vanilla, ours = _past_vanillas_broken_pipe(
        vanilla, ours, ('wrong', 'pipelined'), 'Permission denied')
    assert_same(vanilla, ours)
    results = ours.by_task()
    assert results[('right', 'pipelined')]['result']['stdout'] == account
    assert results[('right', 'raw')]['result']['stdout'].strip() == account
    assert results[('wrong', 'raw')]['status'] == 'unreachable'
    assert 'Traceback' not in ours.output


@pytest.mark.edge_releases
def test_a_login_password_and_its_refusal_match_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible_password logs in (no sshpass needed here), and a wrong one
    makes the host unreachable with vanilla's message, which depends on
    the release's password mechanism: ssh's own "Permission denied"
    (2.19+: one prompt, through ssh_askpass) or sshpass's
    "Invalid/incorrect password" (2.18)."""
    inv = _password_inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, False)
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True,
                            extra)
        _assert_password_refusals_match(vanilla, ours, ansible_account)
    said = ours.by_task()[('wrong', 'pipelined')]['result']['msg']
    if release_of(ansible_bin) >= (2, 19):
        assert 'Permission denied (publickey,password).' in said, said
    else:
        assert 'Invalid/incorrect password: Permission denied' in said, said


def test_the_sshpass_password_mechanism_matches_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+ may be told to use sshpass; a refusal then reads as sshpass's
    (unreachable, "Invalid/incorrect password"), as 2.18's always does.
    ansible-core 2.21 regressed here: its pipelined task fails as a
    module with no JSON (sshpass's rc 5) instead; ours stays unreachable,
    as vanilla meant it (its ssh plugin's handling of sshpass's rc 5)."""
    if release_of(ansible_bin) < (2, 19):
        pytest.skip('2.18 has no password_mechanism: it always uses sshpass')
    inv = _password_inventory(sshd, ansible_account).replace(
        'ansible_password=', 'ansible_ssh_password_mechanism=sshpass '
        'ansible_password=')
    vanilla = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, LOGIN_PASSWORD, inv, True)
    theirs = vanilla.by_task()[('wrong', 'pipelined')]
    if theirs['status'] == 'failed':  # 2.21's regression, exactly
        assert theirs['result']['rc'] == 5, theirs
        assert 'Permission denied' in theirs['result']['module_stderr']
        results = ours.by_task()
        assert results[('right', 'raw')]['status'] == 'ok'
        for task in ('pipelined', 'raw'):
            refused = results[('wrong', task)]
            assert refused['status'] == 'unreachable', refused
            assert 'Invalid/incorrect password: Permission denied' in \
                refused['result']['msg'], refused
    else:
        _assert_password_refusals_match(vanilla, ours, ansible_account)
        said = ours.by_task()[('wrong', 'raw')]['result']['msg']
        assert 'Invalid/incorrect password: Permission denied' in said, said


@contextlib.contextmanager
def _also_authorized(sshd, account: str, public_key: str) -> Iterator[None]:
    """*public_key* logs in as *account* too, until the block ends; then the
    test bed's own authorized_keys is put back."""
    authorized = os.path.join(sshd.server.dir, 'authorized_keys', account)
    try:
        with open(authorized, 'a') as out:
            out.write(public_key)
        yield
    finally:
        sshd.server.authorize(account)


AGENT_KEY = """
- hosts: targets
  gather_facts: false
  vars:
    ansible_ssh_private_key: "{{ lookup('file', key_path) }}"
    ansible_ssh_private_key_passphrase: %s
  tasks:
    - name: pipelined
      command: id -un
    - name: raw
      raw: id -un
"""


def test_a_private_key_given_as_text_logs_in_through_the_agent(
        ansible_bin, ansible_account, sshd, tmp_path):
    """2.19+: ``ansible_ssh_private_key`` (a key's text, with its
    passphrase) goes into the ssh agent that SSH_AGENT=auto starts, and ssh
    logs in with that key alone, not the key file the inventory names: a
    host given a key sshd does not know is unreachable, as in vanilla."""
    if release_of(ansible_bin) < (2, 19):
        pytest.skip('2.18 has no private_key option')
    passphrase = 'agent-test'
    keys = {}
    for name in ('known', 'unknown'):
        keys[name] = tmp_path / ('key-%s' % name)
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N',
                               passphrase, '-C', name, '-f',
                               str(keys[name])])
    # The test bed's ssh options keep ssh away from any agent.
    inv = inventory(sshd, ansible_account, hosts=('known', 'unknown'))
    inv = inv.replace('-o IdentityAgent=none ', '')
    lines = inv.splitlines()
    for i, name in ((1, 'known'), (2, 'unknown')):
        lines[i] += ' key_path=%s' % keys[name]
    inv = '\n'.join(lines) + '\n'
    # The agent's socket goes in the local temp dir: a short path, as a
    # unix socket's must be.
    local_temp = tempfile.mkdtemp(prefix='pa-')
    try:
        with _also_authorized(sshd, ansible_account,
                              keys['known'].with_suffix('.pub').read_text()):
            book = AGENT_KEY % passphrase
            env = {'ANSIBLE_SSH_AGENT': 'auto',
                   'ANSIBLE_LOCAL_TEMP': local_temp}
            vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False,
                                   env)
            ours = run_playbook(ansible_bin, tmp_path, book, inv, True, env)
    finally:
        shutil.rmtree(local_temp, ignore_errors=True)
    results = ours.by_task()
    assert_same(*_past_vanillas_broken_pipe(
        vanilla, ours, ('unknown', 'pipelined'), 'Permission denied'))
    for task in ('pipelined', 'raw'):
        assert results[('known', task)]['result']['stdout'].strip() == \
            ansible_account
    assert results[('unknown', 'pipelined')]['status'] == 'unreachable'


SOFTHSM = '/usr/lib/softhsm/libsofthsm2.so'


def _token_with_a_key(tmp_path) -> tuple[dict, str]:
    """A SoftHSM token holding an RSA key, PIN 1234: the environment that
    finds it, and the key's public half as authorized_keys takes it."""
    if not os.path.exists(SOFTHSM) or not shutil.which('softhsm2-util'):
        pytest.skip('softhsm2 is not installed (.ci/setup installs it)')
    home = tmp_path / 'softhsm'
    (home / 'tokens').mkdir(parents=True)
    conf = home / 'softhsm2.conf'
    conf.write_text('directories.tokendir = %s\nobjectstore.backend = file\n'
                    'log.level = ERROR\n' % (home / 'tokens'))
    env = dict(os.environ, SOFTHSM2_CONF=str(conf))
    key = home / 'key.pem'
    for argv in (
            ['softhsm2-util', '--init-token', '--free', '--label', 'plasmid',
             '--pin', '1234', '--so-pin', '5678'],
            ['openssl', 'genpkey', '-algorithm', 'RSA', '-pkeyopt',
             'rsa_keygen_bits:2048', '-out', str(key)],
            ['softhsm2-util', '--import', str(key), '--token', 'plasmid',
             '--label', 'login', '--id', '01', '--pin', '1234']):
        subprocess.run(argv, env=env, check=True, capture_output=True)
    public = subprocess.run(['ssh-keygen', '-D', SOFTHSM], env=env,
                            check=True, capture_output=True, text=True)
    return {'SOFTHSM2_CONF': str(conf)}, public.stdout


PKCS11 = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: pipelined
      command: id -un
    - name: raw
      raw: id -un
"""


def test_a_token_key_logs_in_with_its_pin_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``ansible_ssh_pkcs11_provider``: ssh takes its key from a PKCS#11
    token (SoftHSM here), and the password is the token's PIN, typed at
    ssh's "Enter PIN for" prompt; a wrong PIN leaves the host unreachable
    in ssh's words, no password gets vanilla's refusal.
    The key file the inventory names is one sshd does not know, so only
    the token can log in."""
    env, public = _token_with_a_key(tmp_path)
    # One host at a time: SoftHSM's token is one file, and a wrong PIN's
    # login beside the right one's failed the latter now and then
    # ("PKCS#11 login failed: error 5") in CI under load.
    env['ANSIBLE_FORKS'] = '1'
    inv = inventory(sshd, ansible_account,
                    hosts=('token', 'wrongpin', 'nopin'),
                    extra='ansible_ssh_pkcs11_provider=%s' % SOFTHSM)
    # IdentitiesOnly would leave out the token's key as well.
    inv = inv.replace(sshd.server.client_key, _stranger_key(tmp_path)) \
        .replace('-o IdentitiesOnly=yes ', '')
    lines = inv.splitlines()
    lines[1] += ' ansible_password=1234'
    lines[2] += ' ansible_password=4321'
    inv = '\n'.join(lines) + '\n'
    with _also_authorized(sshd, ansible_account, public):
        vanilla = run_playbook(ansible_bin, tmp_path, PKCS11, inv, False, env)
        ours = run_playbook(ansible_bin, tmp_path, PKCS11, inv, True, env)
    results = ours.by_task()
    assert_same(*_past_vanillas_broken_pipe(
        vanilla, ours, ('wrongpin', 'pipelined'), 'PIN incorrect'))
    for task in ('pipelined', 'raw'):
        assert results[('token', task)]['result']['stdout'].strip() == \
            ansible_account
    assert results[('wrongpin', 'pipelined')]['status'] == 'unreachable'
    refused = results[('nopin', 'pipelined')]
    assert refused['status'] == 'failed', refused
    assert 'to use pkcs11_provider you must specify a password/pin' in \
        refused['result']['msg']


DROPPED = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: before, command: id -un}
    - {name: before as root, command: id -un, become: true}
    - name: sshd's sessions of the login end (a network drop, a restart)
      shell: pkill -KILL -u {{ ansible_user }} -f '^sshd:' || true
      delegate_to: localhost
      connection: local
    - {name: after, command: id -un}
    - {name: after as root, command: id -un, become: true}
    - name: they will end again in a second
      shell: (sleep 1; pkill -KILL -u {{ ansible_user }} -f '^sshd:') >/dev/null 2>&1 &
      delegate_to: localhost
      connection: local
    - {name: cut off, command: sleep 5, ignore_unreachable: true}
    - {name: last, raw: echo last}
"""


@pytest.mark.edge_releases
def test_a_connection_dropped_between_tasks_is_made_again(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's next task simply logs in again (it holds no session
    between tasks: nothing to kill); so does ours, starting the login's
    contexts afresh.  A task cut off reads as vanilla's (unreachable, as
    data that could not be sent, in ssh's words)."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, DROPPED, inv, False)
    assert vanilla.rc == 0, vanilla.output
    cut = ('t1', 'cut off')
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, DROPPED, inv, True, extra)
        assert ours.rc == 0, ours.output
        mine, theirs = ours.by_task(), vanilla.by_task()
        assert {k: r['status'] for k, r in mine.items()} == \
            {k: r['status'] for k, r in theirs.items()}
        assert theirs[cut]['status'] == 'unreachable'
        # Word for word, ssh's last words included.
        assert mine[cut]['result']['msg'] == theirs[cut]['result']['msg']
        # 3 logins, 2 sudos; with the strategy, which takes the local
        # connection (plasmid/ansible/takeover.py), the controller's too.
        local = 1 if extra else 0
        assert ours.stats['contexts'] == 5 + local, ours.stats


# The same tasks as through a jump host: a module, one as root, raw.
TERMINAL_ASKED = THROUGH_A_JUMP_HOST


@pytest.mark.edge_releases
def test_ssh_args_that_ask_for_a_terminal_still_log_in(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``-tt`` (or RequestTTY=force) in the ssh args: a context's stream
    cannot pass through a terminal, so the accelerator leaves them out
    (plasmid itself refuses them) and gives a terminal where vanilla's ssh
    plugin would ask for one on its own.  Before, the login waited out its
    start and the host was unreachable.  (Vanilla with pipelining hangs
    there for good: the module's Python reads its source from the terminal
    and never sees its end; so it is not run here.)"""
    inv = inventory(sshd, ansible_account).replace(
        "ansible_ssh_common_args='",
        "ansible_ssh_common_args='-tt -Ctt -o RequestTTY=force ")
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, TERMINAL_ASKED, inv, True,
                            extra)
        assert ours.rc == 0, ours.output
        results = ours.by_task()
        assert results[('t1', 'a module')]['result']['stdout'] == \
            ansible_account
        assert results[('t1', 'a module as root')]['result']['stdout'] == \
            'root'
        assert results[('t1', 'a raw command')]['result']['stdout'] == \
            'raw\r\n'
