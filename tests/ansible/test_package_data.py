"""A module that reads its payload's files as package data (a module_utils
file of the play's own) gets what it gets from AnsiballZ's zip under
vanilla, on Python 3.9 (whose importlib.resources.files() knows only files
on disk or in a zip file) as on the target's own Python."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from runner import inventory, run_playbook
from parity import assert_same
from testbed.pythons import require_python

MODULE = '''#!/usr/bin/python
import pkgutil
import importlib.resources as resources
import warnings

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils import plasmid_table  # noqa: F401 (in the payload)


def main():
    module = AnsibleModule(argument_spec={})
    warnings.simplefilter('ignore')  # read_text: deprecated since 3.11
    root = resources.files('ansible.module_utils')
    module.exit_json(
        files=(root / 'plasmid_table.py').read_text(),
        listed='plasmid_table.py' in [p.name for p in root.iterdir()],
        read_text=resources.read_text('ansible.module_utils',
                                      'plasmid_table.py'),
        get_data=pkgutil.get_data('ansible.module_utils',
                                  'plasmid_table.py').decode())


main()
'''

BOOK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: package data
      plasmid_reads_data: {}
"""


@pytest.mark.parametrize('python', ['3.9', '/usr/bin/python3'])
def test_package_data_of_the_payload_reads_as_under_vanilla(
        newest_ansible_bin, ansible_account, sshd, tmp_path, python):
    """The reader is plasmid's own, the same for every release: the
    newest one's payload is enough."""
    ansible_bin = newest_ansible_bin
    library = tmp_path / 'library'
    library.mkdir()
    (library / 'plasmid_reads_data.py').write_text(MODULE)
    utils = tmp_path / 'module_utils'
    utils.mkdir()
    (utils / 'plasmid_table.py').write_text('ROWS = 2\n')
    env = {'ANSIBLE_LIBRARY': str(library),
           'ANSIBLE_MODULE_UTILS': str(utils)}
    interpreter = python if python.startswith('/') else require_python(python)
    inv = inventory(sshd, ansible_account).replace('/usr/bin/python3',
                                                   interpreter)
    vanilla = run_playbook(ansible_bin, tmp_path, BOOK, inv, False, env)
    result = vanilla.by_task()[('t1', 'package data')]['result']
    assert result['files'] == result['get_data'] == 'ROWS = 2\n', result
    assert result['listed'] is True
    ours = run_playbook(ansible_bin, tmp_path, BOOK, inv, True, env)
    assert_same(vanilla, ours)
    assert ours.stats['module_runs'] == 1, ours.stats



# Planted where the context's Python starts (as a compromised account on
# a target could plant a usercustomize.py): asks the controller, through the
# context's own link, for what no target may have.
SPY = """import os, sys, threading, time

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'seen.txt')


def spy():
    for _ in range(200):
        child = sys.modules.get('plasmid.core.child')
        if getattr(child, 'current', None) is not None:
            break
        time.sleep(0.05)
    else:
        return  # not a context: vanilla's Python
    importer = child.current.importer
    try:
        import plasmid_probe_beside_the_play  # noqa: F401
        imported = True
    except ImportError:
        imported = False
    read = importer.router.decode(
        importer.data_latch('host_vars', 'other.yml').wait(10))
    with open(OUT, 'w') as handle:
        handle.write(repr((imported, read)))


threading.Thread(target=spy, daemon=True).start()
"""


def test_the_play_directory_is_not_served_to_targets(
        newest_ansible_bin, ansible_account, sshd, tmp_path):
    """The broker ran with the play's directory (its working directory)
    first on its sys.path, so any account on a target could import a .py
    file of it and read every file of its subdirectories (host_vars of
    other hosts, keys under files/), which vanilla never sends."""
    (tmp_path / 'plasmid_probe_beside_the_play.py').write_text('X = 1\n')
    (tmp_path / 'host_vars').mkdir()
    (tmp_path / 'host_vars' / 'other.yml').write_text('password: s3cret\n')
    planted = tempfile.mkdtemp(prefix='plasmid-spy-')
    try:
        os.chmod(planted, 0o777)
        with open(os.path.join(planted, 'sitecustomize.py'), 'w') as handle:
            handle.write(SPY)
        os.chmod(os.path.join(planted, 'sitecustomize.py'), 0o644)
        python = os.path.join(planted, 'python')
        with open(python, 'w') as handle:
            handle.write('#!/bin/sh\nPYTHONPATH=%s exec /usr/bin/python3 '
                         '"$@"\n' % planted)
        os.chmod(python, 0o755)
        inv = inventory(sshd, ansible_account).replace(
            'ansible_python_interpreter=/usr/bin/python3',
            'ansible_python_interpreter=' + python)
        run = run_playbook(newest_ansible_bin, tmp_path,
                           '- hosts: targets\n  gather_facts: false\n'
                           '  tasks:\n    - command: sleep 1\n', inv, True)
        result = run.by_task()[('t1', 'command')]
        assert result['status'] == 'ok', result
        with open(os.path.join(planted, 'seen.txt')) as handle:
            assert handle.read() == repr((False, ('missing', None)))
    finally:
        shutil.rmtree(planted)
