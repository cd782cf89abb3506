"""The environment a module, ``command`` and ``raw`` see, without become
and under sudo and su, is vanilla's: PWD (which sudo drops and the shell
vanilla puts before each interpreter sets again), TERM where vanilla has
a terminal (su, which it does not pipeline), SSH_TTY for a command on a
terminal, and HOME, USER, LOGNAME, SHELL, PATH, MAIL, SHLVL, SUDO_*
(SUDO_COMMAND names the command vanilla's sudo runs for the task, its own
random marker in it)."""
from __future__ import annotations

import re

import pytest

from runner import inventory, run_playbook
from testbed.accounts import PASSWORD_B, USER_B, login_shell

# The oldest and the newest release only in CI (conftest.py).
pytestmark = pytest.mark.edge_releases

MODULE = '''#!/usr/bin/python
import os

from ansible.module_utils.basic import AnsibleModule

AnsibleModule(argument_spec={}).exit_json(env=dict(os.environ))
'''

WAYS = {
    'plain': '',
    'sudo': '      become: true\n',
    # The task's variables follow the marker in vanilla's sudo command;
    # characters special to sh, quoted there, made ours run the module
    # from its script, which sudo named instead.
    'sudo with environment': ('      become: true\n'
                              "      environment: {GREETING: 'hello $there;"
                              " (x)'}\n"),
    'su': ('      become: true\n      become_method: su\n'
           '      become_user: %s\n'
           '      vars: {ansible_become_password: %s}\n'
           % (USER_B, PASSWORD_B)),
}
KINDS = {'command': 'command: env', 'raw': 'raw: env', 'module': 'env_dump:'}

# What differs for reasons neither side controls: the client's port (one
# ssh session per task under vanilla), ``_`` for raw (vanilla's login
# shell names the command it runs; compared for the others).  SSH_TTY names a
# terminal: compared where both have one (raw), by presence.  SUDO_COMMAND
# (sudo's record of the command it ran) holds a random marker: compared
# without it, but for raw, where vanilla's ssh plugin takes the line that
# shows the marker for sudo's own and drops it from the output.
UNCOMPARED = {'SSH_CLIENT', 'SSH_CONNECTION', 'SUDO_COMMAND', '_', 'SSH_TTY'}
MARKER = re.compile(r'BECOME-SUCCESS-[a-z]+')
TERM = 'vt220'  # not the test runner's own


def _book() -> str:
    tasks = ['    - name: %s %s\n      %s\n%s' % (way, kind, body, become)
             for way, become in WAYS.items()
             for kind, body in KINDS.items()]
    return ('- hosts: targets\n  gather_facts: false\n'
            # vanilla's su (not pipelined) leaves the module in a file
            # the other user must read: no setfacl here.
            '  vars: {ansible_shell_allow_world_readable_temp: true}\n'
            '  tasks:\n' + '\n'.join(tasks))


def _environments(run) -> dict:
    """Each task's environment, by task name."""
    found = {}
    for item in run.results:
        assert item['status'] == 'ok', item
        result = item['result']
        if 'env' in result:
            found[item['task']] = result['env']
        else:
            lines = result['stdout'].replace('\r\n', '\n').splitlines()
            found[item['task']] = dict(line.split('=', 1) for line in lines
                                       if '=' in line)
    return found


@pytest.mark.parametrize('shell', ['/bin/sh', '/bin/bash'])
def test_the_environment_under_become_is_vanillas(
        ansible_bin, ansible_account, sshd, tmp_path, shell):
    """With the login account's shell dash or bash: bash exports ``_`` for
    the ``/bin/sh`` that runs vanilla's module (ours lacked it)."""
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'env_dump.py').write_text(MODULE)
    inv = inventory(sshd, ansible_account)
    env = {'TERM': TERM}
    with login_shell(shell, ansible_account):
        vanilla = _environments(run_playbook(ansible_bin, tmp_path, _book(),
                                             inv, False, env))
        ours = _environments(run_playbook(ansible_bin, tmp_path, _book(),
                                          inv, True, env))
    assert set(ours) == set(vanilla)
    for task, theirs in vanilla.items():
        mine = ours[task]
        assert {k: v for k, v in mine.items() if k not in UNCOMPARED} == \
            {k: v for k, v in theirs.items() if k not in UNCOMPARED}, task
        if not task.endswith(' raw'):
            assert mine.get('_') == theirs.get('_'), task
        if task.endswith(' raw'):
            assert ('SSH_TTY' in mine) == ('SSH_TTY' in theirs), task
        else:
            assert _without_marker(mine) == _without_marker(theirs), task
    # What the comparison covers, as vanilla has it.
    assert vanilla['sudo module']['PWD'] == vanilla['plain module']['PWD']
    assert vanilla['su module']['TERM'] == TERM
    assert 'SSH_TTY' in vanilla['plain raw']
    # Set by the account's shell, bash for the su account, dash (none) or
    # bash for the login's; dropped by sudo.
    assert vanilla['su module']['_'] == vanilla['su command']['_'] == \
        '/bin/sh'
    assert vanilla['plain module'].get('_') == \
        ('/bin/sh' if shell == '/bin/bash' else None)
    assert '_' not in vanilla['sudo module']
    assert vanilla['sudo module']['SUDO_COMMAND'].startswith(
        '/bin/sh -c echo BECOME-SUCCESS-')
    assert vanilla['sudo with environment module']['SUDO_COMMAND'] \
        .endswith(" ; GREETING='hello $there; (x)' /usr/bin/python3")
    # Ours names each task's own command, marker and all.
    assert ours['sudo module']['SUDO_COMMAND'] != \
        ours['sudo command']['SUDO_COMMAND']


def _without_marker(env: dict):
    """SUDO_COMMAND without its random part (None where unset)."""
    said = env.get('SUDO_COMMAND')
    return said if said is None else MARKER.sub('BECOME-SUCCESS-*', said)
