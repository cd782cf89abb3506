"""What a play says about become beyond the method reaches the hosted
interpreter as it reaches vanilla's command: sudo's become_flags decide
HOME (and whether sudo runs a shell, which names SUDO_COMMAND otherwise),
and su with no password to type fails as vanilla's does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from typing import Iterator

import pytest

from runner import inventory, run_playbook, run_probe
from parity import assert_same
from testbed.accounts import USER_B

SHOW = 'shell: echo "$HOME $USER $LOGNAME"'
FLAGS = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: flags -E
      %(show)s
      become: true
      become_flags: -E
    - name: flags -H -E
      %(show)s
      become: true
      become_flags: -H -E
    - name: default flags
      %(show)s
      become: true
    - name: no flags
      %(show)s
      become: true
      become_flags: ''
    - name: flags with a prompt
      %(show)s
      become: true
      become_flags: -H -S -n -p "our own prompt:"
""" % {'show': SHOW}


def test_sudo_flags_decide_home_as_under_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, FLAGS, inv, False)
    assert vanilla.rc == 0, vanilla.output
    said = {task: r['result']['stdout'].split()
            for (_, task), r in vanilla.by_task().items()}
    # sudo's -E without -H keeps the login's HOME; -H gives root's.
    assert said['flags -E'] == ['/home/%s' % ansible_account, 'root', 'root']
    assert said['flags -H -E'] == ['/root', 'root', 'root']
    # A prompt of the play's: sudo takes one -p, and ours sets it.
    assert said['flags with a prompt'] == ['/root', 'root', 'root']
    ours = run_playbook(ansible_bin, tmp_path, FLAGS, inv, True)
    assert_same(vanilla, ours)
    # Hosted: an interpreter per distinct set of flags, none run as given.
    assert ours.stats.get('shell_as_given', 0) == 0, ours.stats


SU_WITHOUT_PASSWORD = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: su with nothing to type
      command: id -un
      become: true
      become_method: su
      become_user: %s
      vars: {ansible_ssh_timeout: 3}
      ignore_errors: true
      ignore_unreachable: true
    - name: the login goes on
      command: id -un
""" % USER_B


@pytest.mark.edge_releases
def test_su_without_a_password_fails_as_under_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's ssh plugin expects no prompt without a password, so it
    waits for su's success until its timeout (here 3 + 2 s) and gives up
    with the release's state for that; ours knows at once that su asked
    and ends the same way."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, SU_WITHOUT_PASSWORD, inv,
                           False)
    theirs = vanilla.by_task()[('t1', 'su with nothing to type')]
    assert theirs['status'] in ('unreachable', 'failed'), theirs
    assert 'Timeout (5s) waiting for privilege escalation prompt' in \
        theirs['result']['msg'], theirs
    ours = run_playbook(ansible_bin, tmp_path, SU_WITHOUT_PASSWORD, inv, True)
    assert_same(vanilla, ours)
    assert 'Traceback' not in ours.output


REFUSED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: sudo to a user sudoers does not allow
      command: id -un
      become: true
      become_user: nobody
      ignore_errors: true
    - name: sudo with a flag it does not know
      command: id -un
      become: true
      become_flags: --plasmid-bogus
      ignore_errors: true
    - name: sudo told the user twice
      command: id -un
      become: true
      become_flags: -u nobody
      ignore_errors: true
    - name: a become_exe the host lacks
      command: id -un
      become: true
      become_exe: /nonexistent/sudo
      ignore_errors: true
    - name: raw with a flag sudo does not know
      raw: id -un
      become: true
      become_flags: --plasmid-bogus
      ignore_errors: true
    - name: su with a flag it does not know
      command: id -un
      become: true
      become_method: su
      become_flags: --plasmid-bogus
      become_user: %(user_b)s
      vars: {ansible_become_password: %(password_b)s}
      ignore_errors: true
    - name: the login goes on
      command: id -un
"""


@pytest.mark.edge_releases
def test_a_become_program_that_will_not_start_fails_as_under_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Where sudo or su refuses to run for a reason other than a password
    (its usage for an unknown flag, a missing become_exe), vanilla shows
    the command's own failure (rc, "No start of json char found"); ours
    runs the command as given after the hosted start failed, to the same
    end.  A refusal vanilla words itself ("Missing sudo password") stays
    that."""
    from testbed import PASSWORD_B
    book = REFUSED % {'user_b': USER_B, 'password_b': PASSWORD_B}
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    theirs = vanilla.by_task()
    assert theirs[('t1', 'a become_exe the host lacks')]['result']['rc'] \
        == 127, theirs
    assert 'Missing sudo password' in theirs[
        ('t1', 'sudo to a user sudoers does not allow')]['result']['msg']
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    assert_same(vanilla, ours)
    assert 'Traceback' not in ours.output
    # Each refused start was followed by its command as given.
    assert ours.stats.get('shell_as_given', 0) >= 5, ours.stats


# A become_exe that asks for what nobody can type, as a PAM one-time code
# would, and holds there (for a minute: vanilla leaves it behind; the
# account's clean-up ends it if the run does not).
CODE_ASKER = """#!/bin/sh
printf 'Verification code: ' >&2
exec sleep 60
"""

ASKS_FOR_A_CODE = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: sudo that asks for a code
      command: id -un
      become: true
      become_exe: %s
      vars: {ansible_ssh_timeout: 2}
      # Vanilla gives up after 4 s; a start that waited for its own bound
      # (60 s) would have the task time out instead.
      timeout: 20
      ignore_errors: true
      ignore_unreachable: true
    - name: the login goes on
      command: id -un
"""


@pytest.mark.edge_releases
def test_a_prompt_nobody_can_answer_fails_as_under_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla waits `timeout` + 2 s for the become program's prompt or
    success and then gives up; our hosted start gives up after as long
    (its prompt_timeout, not its start's own bound of 60 s, which would
    run into the task's timeout), and the command as given then ends as
    vanilla's."""
    folder = tempfile.mkdtemp(prefix='plasmid-code-asker-')
    try:
        os.chmod(folder, 0o755)
        asker = os.path.join(folder, 'sudo')
        with open(asker, 'w') as f:
            f.write(CODE_ASKER)
        os.chmod(asker, 0o755)
        book = ASKS_FOR_A_CODE % asker
        inv = inventory(sshd, ansible_account)
        vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
        theirs = vanilla.by_task()[('t1', 'sudo that asks for a code')]
        assert 'Timeout (4s) waiting for privilege escalation prompt' in \
            theirs['result']['msg'], theirs
        ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    finally:
        shutil.rmtree(folder)
    assert_same(vanilla, ours)
    assert ours.stats.get('shell_as_given', 0) == 1, ours.stats


SUDO_RUNS_A_SHELL = """
import json, shlex, sys
from plasmid.ansible.connection import _sudo_runs_a_shell
print(json.dumps([_sudo_runs_a_shell(shlex.split(flags))
                  for flags in json.loads(sys.argv[1])]))
"""
FLAGS_AND_SHELLS = {
    '-H -S -n': False, '': False, '-E': False, '-i': True, '-s': True,
    '-Hi': True, '-H -s -E': True, '--login': True, '--shell': True,
    '--sh': True, '--lo': True, '--list': False, '--set-home': False,
    # letters after an option that takes a value are the value
    '-uis': False, '-u is': False, '-p is -H': False, '-C 5 -i': True,
    '-- -i': False, '-h': False, '-hsomehost': False,
}


def test_sudo_flags_that_run_a_shell_are_told_apart(ansible_bin):
    """Under -s or -i sudo runs the command through a shell and names
    that in SUDO_COMMAND: the module process then keeps the value sudo
    gave its interpreter rather than one in a form sudo would not give."""
    flags = list(FLAGS_AND_SHELLS)
    said = json.loads(run_probe(ansible_bin, SUDO_RUNS_A_SHELL,
                                json.dumps(flags)))
    assert dict(zip(flags, said)) == FLAGS_AND_SHELLS


SU_TO_NOLOGIN = """
- hosts: targets
  gather_facts: false
  become: true
  become_method: su
  become_user: %(user)s
  vars: {ansible_become_password: %(password)s}
  tasks:
    - name: raw as an account that may not log in
      raw: id -un
      ignore_errors: true
"""


@pytest.fixture
def nologin_account() -> Iterator[tuple[str, str]]:
    """An account whose shell is nologin, with a password su asks for."""
    name, password = 'plasmid-nl%d' % (os.getpid() % 100000), 'nl-Secret-42'
    subprocess.check_call(['useradd', '-M', '-s', '/usr/sbin/nologin', name])
    try:
        subprocess.run(['chpasswd'], input='%s:%s\n' % (name, password),
                       text=True, check=True)
        yield name, password
    finally:
        subprocess.call(['userdel', name])


def test_su_prompt_stays_out_of_the_output_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, nologin_account):
    """su asks, we answer, and its account's shell refuses: vanilla's
    output holds what came after the prompt, ours held the prompt too."""
    user, password = nologin_account
    book = SU_TO_NOLOGIN % {'user': user, 'password': password}
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, book, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, book, inv, True)
    assert_same(vanilla, ours)
    result = ours.by_task()[('t1', 'raw as an account that may not log in')]
    assert 'currently not available' in result['result']['stdout'], result
    assert 'Password' not in result['result']['stdout'], result
