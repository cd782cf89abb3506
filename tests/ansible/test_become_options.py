"""What a play says about become beyond the method reaches the hosted
interpreter as it reaches vanilla's command: sudo's become_flags decide
HOME, and su with no password to type fails as vanilla's does."""
from __future__ import annotations

from runner import inventory, run_playbook
from test_playbooks import STRATEGY, assert_same
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
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, FLAGS, inv, True, extra)
        assert_same(vanilla, ours)
        # Hosted: one interpreter per distinct set of flags.
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
