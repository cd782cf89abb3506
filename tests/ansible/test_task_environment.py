"""A task's ``environment:`` as a module's Python sees it: what an
interpreter reads only as it starts (PYTHONPATH, PYTHONOPTIMIZE...) and
the local time zone (TZ), as under vanilla's fresh interpreter per task."""
from __future__ import annotations

import os
import re
import shutil
import tempfile

import pytest

from parity import assert_same, run_both
from runner import inventory, run_playbook
from testbed.pythons import require_python, script_for_all

MODULE = '''#!/usr/bin/python
import sys, time
from ansible.module_utils.basic import AnsibleModule
try:
    import plasmid_on_pythonpath
    found = plasmid_on_pythonpath.WHERE
except ImportError:
    found = 'ImportError'
AnsibleModule(argument_spec={}).exit_json(
    found=found,
    optimize=sys.flags.optimize,
    dont_write_bytecode=bool(sys.flags.dont_write_bytecode),
    tzname=list(time.tzname),
    hour_at_epoch=time.localtime(0).tm_hour)
'''

BOOK = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: plain
      python_env_report:
    - name: startup variables
      python_env_report:
      environment:
        PYTHONPATH: "{{ lib }}"
        PYTHONOPTIMIZE: "1"
        PYTHONDONTWRITEBYTECODE: "1"
    - name: startup variables as root
      python_env_report:
      become: true
      environment:
        PYTHONPATH: "{{ lib }}"
    - name: a time zone
      python_env_report:
      environment:
        TZ: Asia/Tokyo
    - name: plain again
      python_env_report:
"""


@pytest.fixture
def library_dir():
    """A directory every account can read, for PYTHONPATH."""
    path = tempfile.mkdtemp(prefix='plasmid-pythonpath-')
    os.chmod(path, 0o755)
    with open(os.path.join(path, 'plasmid_on_pythonpath.py'), 'w') as f:
        f.write('WHERE = "from PYTHONPATH"\n')
    os.chmod(os.path.join(path, 'plasmid_on_pythonpath.py'), 0o644)
    yield path
    shutil.rmtree(path)


@pytest.mark.edge_releases
def test_a_tasks_environment_reaches_the_modules_python_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path, library_dir):
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'python_env_report.py').write_text(MODULE)
    inv = inventory(sshd, ansible_account, extra='lib=%s' % library_dir)
    vanilla, ours = run_both(ansible_bin, tmp_path, BOOK, inv)
    results = {name: r['result'] for (_, name), r in ours.by_task().items()}
    # What vanilla showed too (run_both compared every task's result).
    assert results['startup variables']['found'] == 'from PYTHONPATH'
    assert results['startup variables']['optimize'] == 1
    assert results['startup variables as root']['found'] == \
        'from PYTHONPATH'
    assert results['a time zone']['tzname'] == ['JST', 'JST']
    assert results['a time zone']['hour_at_epoch'] == 9
    # Neither leaks into the next task's interpreter.
    assert results['plain again'] == results['plain']
    assert results['plain']['found'] == 'ImportError'


BARE_NAME_BOOK = """
- hosts: targets
  gather_facts: false
  vars: {ansible_python_interpreter: python3}
  tasks:
    - name: plain
      python_version_report:
    - name: the login's path
      command: sh -c 'echo "$PATH"'
      register: login_path
    - name: the same python3 first on the task's path
      python_version_report:
      environment: {PATH: "{{ login_path.stdout }}:/plasmid-extra"}
    - name: another python3 first on the task's path
      python_version_report:
      environment: {PATH: "%(bin)s:/usr/bin:/bin"}
    - name: no python3 on the task's path
      python_version_report:
      environment: {PATH: /plasmid-no-such-dir}
      ignore_errors: true
"""
VERSION_MODULE = '''#!/usr/bin/python
import sys
from ansible.module_utils.basic import AnsibleModule
AnsibleModule(argument_spec={}).exit_json(version=list(sys.version_info[:2]))
'''


@pytest.mark.edge_releases
def test_a_bare_interpreter_name_is_found_on_the_tasks_path(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible_python_interpreter: python3, and a task's PATH: vanilla's
    shell runs the python3 that PATH finds first (3.12 here), or fails
    the task (rc 127) where it finds none; ours ran the login's python3
    (3.11), and the task passed.  Where that PATH finds the login's own
    python3, the module runs warm (it ran from its script)."""
    other = require_python('3.12')
    bin_dir = tempfile.mkdtemp(prefix='plasmid-bin-')  # the account's too
    try:
        os.chmod(bin_dir, 0o755)
        os.symlink(other, os.path.join(bin_dir, 'python3'))
        (tmp_path / 'library').mkdir()
        (tmp_path / 'library' / 'python_version_report.py').write_text(
            VERSION_MODULE)
        book = BARE_NAME_BOOK % {'bin': bin_dir}
        vanilla, ours = run_both(ansible_bin, tmp_path, book,
                                 inventory(sshd, ansible_account))
    finally:
        shutil.rmtree(bin_dir)
    tasks = {name: r for (_, name), r in ours.by_task().items()}
    assert tasks['another python3 first on the task\'s path']['result'][
        'version'] == [3, 12], tasks
    assert tasks['no python3 on the task\'s path']['status'] == 'failed'
    assert tasks['no python3 on the task\'s path']['result']['rc'] == 127
    assert tasks['the same python3 first on the task\'s path']['result'][
        'version'] == tasks['plain']['result']['version']
    # Of five modules (command's too), the target sent two back.
    assert ours.stats['module_runs'] == 5, ours.stats
    assert ours.stats.get('modules_from_script') == 2, ours.stats


LIBRARY_MODULE = '''#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.plasmid_lib_probe import PROBED
try:
    import plasmid_lib_ver
    value = plasmid_lib_ver.VALUE
except ImportError:
    value = 'ImportError'
AnsibleModule(argument_spec={}).exit_json(value=value, probed=PROBED)
'''
# Shared code that looks for an optional library once, as collections'
# module_utils do (HAS_PSYCOPG2 and the like).
LIBRARY_PROBE = '''
try:
    import plasmid_lib_ver
    PROBED = plasmid_lib_ver.VALUE
except ImportError:
    PROBED = 'ImportError'
'''

# How the books of libraries installed mid-run start: the user site's
# folder found (usersite.stdout), none made yet.
USER_SITE_FOUND = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: where the user site is
      command: /usr/bin/python3 -c "import site; print(site.getusersitepackages())"
      register: usersite
"""
LIBRARY_BOOK = USER_SITE_FOUND + """    - name: before any library
      library_value:
    - name: make the user site
      file: {path: "{{ usersite.stdout }}", state: directory}
    - name: install the library
      copy: {content: "VALUE = 1\\n", dest: "{{ usersite.stdout }}/plasmid_lib_ver.py"}
    - name: first version
      library_value:
    - name: again, warm
      library_value:
    - name: upgrade the library
      copy: {content: "VALUE = 22222\\n", dest: "{{ usersite.stdout }}/plasmid_lib_ver.py"}
    - name: second version
      library_value:
    - name: remove the library
      file: {path: "{{ usersite.stdout }}/plasmid_lib_ver.py", state: absent}
    - name: after removal
      library_value:
    - name: install it again, in a folder on the path by now
      copy: {content: "VALUE = 333\\n", dest: "{{ usersite.stdout }}/plasmid_lib_ver.py"}
    - name: installed again
      library_value:
    - name: clean up
      file: {path: "{{ usersite.stdout }}", state: absent}
"""


def _with_the_library_module(tmp_path) -> None:
    """The playbook's ``library_value`` module and the module_utils it
    probes the library with, beside the playbook."""
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'library_value.py').write_text(LIBRARY_MODULE)
    (tmp_path / 'module_utils').mkdir()
    (tmp_path / 'module_utils' / 'plasmid_lib_probe.py').write_text(
        LIBRARY_PROBE)


def _assert_seen(ours, tasks: tuple, expected: list) -> None:
    """The library's VALUE (or 'ImportError') that each of *tasks* saw,
    imported by the module and probed by its module_utils alike."""
    for field in ('value', 'probed'):
        values = {name: r['result'].get(field)
                  for (_, name), r in ours.by_task().items()}
        assert [values[name] for name in tasks] == expected, (field, values)


@pytest.mark.edge_releases
def test_a_library_installed_upgraded_or_removed_mid_run_is_seen(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's fresh interpreter per task sees a library a task
    installed (in a user site that did not exist when ours started), then
    upgraded, then removed; ours kept the first import warm.  Shared code
    that looked for it kept what it found (or did not) when it was
    warmed: a library installed in a folder on sys.path went unseen."""
    _with_the_library_module(tmp_path)
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, LIBRARY_BOOK, inv)
    _assert_seen(ours, (
        'before any library', 'first version', 'again, warm',
        'second version', 'after removal', 'installed again'),
        ['ImportError', 1, 1, 22222, 'ImportError', 333])


WRAPPED_BOOK = """
- hosts: targets
  gather_facts: false
  vars: {ansible_shell_executable: "%(wrapper)s"}
  tasks:
    - {name: wrapped, command: printenv PLASMID_WRAPPED}
    - {name: wrapped as root, command: printenv PLASMID_WRAPPED,
       become: true}
    - {name: made under its umask, copy: {content: x, dest: "%(out)s/made"}}
    - {name: gone, file: {path: "%(out)s/made", state: absent}}
"""


@pytest.mark.edge_releases
def test_a_shell_executable_that_wraps_the_module_runs_it(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible_shell_executable (or [defaults] executable) runs a
    pipelined module under vanilla: a wrapper's umask and variables reach
    it.  Ours ran the module in our interpreter without it (printenv
    failed, the copy was 0644 where vanilla's is 0600)."""
    with script_for_all('#!/bin/sh\numask 077\nexport PLASMID_WRAPPED=yes\n'
                        'exec /bin/sh "$@"\n', folder_mode=0o777) as wrapper:
        book = WRAPPED_BOOK % {'wrapper': wrapper,
                               'out': os.path.dirname(wrapper)}
        vanilla, ours = run_both(ansible_bin, tmp_path, book,
                                 inventory(sshd, ansible_account))
        results = {name: r['result']
                   for (_, name), r in ours.by_task().items()}
        assert results['wrapped']['stdout'] == 'yes'
        assert results['wrapped as root']['stdout'] == 'yes'
        assert results['made under its umask']['mode'] == '0600'


MISSING_SHELL_BOOK = """
- hosts: targets
  gather_facts: false
  vars: {ansible_shell_executable: /bin/plasmid-no-such-shell}
  tasks:
    - {name: raw, raw: id -un, ignore_errors: true,
       args: {executable: /bin/plasmid-no-such-shell}}
    - {name: a command, command: id -un, ignore_errors: true}
    - {name: as root, command: id -un, become: true, ignore_errors: true}
    - {name: a copy, copy: {content: x, dest: /tmp/plasmid-never-made},
       ignore_errors: true}
    - {name: never reached, command: id -un}
"""


@pytest.mark.edge_releases
def test_a_shell_executable_that_is_missing_fails_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla's login shell fails each command at a missing shell (rc
    127, in its words), and the copy's temp dir with it: the host is
    unreachable.  Ours ran modules and made temp dirs without the shell:
    every task passed; raw's failed in /bin/sh's words, off its terminal
    (where the account's login shell is bash, vanilla's are bash's)."""
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, MISSING_SHELL_BOOK, inv,
                           False)
    ours = run_playbook(ansible_bin, tmp_path, MISSING_SHELL_BOOK, inv, True)
    # The copy's message names its temp dir: the same but for its time.
    assert_same(vanilla, ours, unsettled=('a copy',))
    tasks = {name: r for (_, name), r in ours.by_task().items()}
    messages = [re.sub(r'ansible-tmp-[\d.-]+', 'ansible-tmp-N',
                       run.by_task()[('t1', 'a copy')]['result']['msg'])
                for run in (vanilla, ours)]
    assert messages[0] == messages[1], messages
    assert tasks['a command']['result']['rc'] == 127, tasks
    # In the login shell's words (assert_same), on raw's terminal.
    assert tasks['raw']['result']['rc'] == 127, tasks
    assert tasks['raw']['result']['stdout'].endswith('\r\n'), tasks
    assert 'plasmid-no-such-shell' in \
        tasks['as root']['result']['module_stderr'], tasks
    assert tasks['a copy']['status'] == 'unreachable', tasks
    assert 'never reached' not in tasks
    assert ours.stats.get('module_runs', 0) == 0, ours.stats


# How the site books start: an empty user site made (usersite.stdout).
USER_SITE_MADE = USER_SITE_FOUND + """    - name: make the user site
      file: {path: "{{ usersite.stdout }}", state: directory}
    - name: an empty user site
      library_value:
"""
SITE_BOOK = USER_SITE_MADE + """    - name: remove the user site
      file: {path: "{{ usersite.stdout }}", state: absent}
    - name: no user site
      library_value:
    - name: make the user site again
      file: {path: "{{ usersite.stdout }}", state: directory}
    - name: install the library there
      copy: {content: "VALUE = 1\\n", dest: "{{ usersite.stdout }}/plasmid_lib_ver.py"}
    - name: the user site made again
      library_value:
    - name: remove the library
      file: {path: "{{ usersite.stdout }}/plasmid_lib_ver.py", state: absent}
    - name: a folder beside the user site
      file: {path: "{{ usersite.stdout }}-pth", state: directory}
    - name: install the library in it
      copy: {content: "VALUE = 2\\n", dest: "{{ usersite.stdout }}-pth/plasmid_lib_ver.py"}
    - name: a pth file naming it
      copy: {content: "{{ usersite.stdout }}-pth\\n", dest: "{{ usersite.stdout }}/plasmid-lib.pth"}
    - name: through the pth file
      library_value:
    - name: remove the pth file
      file: {path: "{{ usersite.stdout }}/plasmid-lib.pth", state: absent}
    - name: the pth file gone
      library_value:
    - name: clean up
      file: {path: "{{ item }}", state: absent}
      loop: ["{{ usersite.stdout }}", "{{ usersite.stdout }}-pth"]
"""


@pytest.mark.edge_releases
def test_site_folders_and_pth_files_changed_mid_run_are_seen(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A fresh interpreter reads the site folders' .pth files as it starts
    (``pip install -e`` writes one, so do packages that ship one): ours
    read those there when it started only, so a library a .pth file added
    later names went unseen.  (The user site on sys.path, removed, then
    made again with a library in it, must be seen too.)  A .pth file
    gone: what it added stays in ours, so the modules run from the
    script, as vanilla's."""
    _with_the_library_module(tmp_path)
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, SITE_BOOK, inv)
    _assert_seen(ours, (
        'an empty user site', 'no user site', 'the user site made again',
        'through the pth file', 'the pth file gone'),
        ['ImportError', 'ImportError', 1, 2, 'ImportError'])
    # From the script: the check after the .pth file went and the clean
    # up's two items.
    assert ours.stats.get('modules_from_script') == 3, ours.stats


# What ``pip install --user -e`` (setuptools' PEP 660 editable wheel)
# writes for a project whose layout it cannot map with a path line: a .pth
# file that imports a finder module beside it, which puts a finder on
# sys.meta_path.  (As setuptools' own, trimmed: the project beside the
# user site, ``<user site>-ed``.)
EDITABLE_FINDER = '''import os, sys
from importlib.util import spec_from_file_location
MAPPING = {'plasmid_lib_ver': os.path.dirname(__file__) + '-ed/plasmid_lib_ver'}
class _EditableFinder:  # MetaPathFinder
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname in MAPPING and os.path.exists(MAPPING[fullname] + '.py'):
            return spec_from_file_location(fullname, MAPPING[fullname] + '.py')
        return None
def install():
    if not any(finder == _EditableFinder for finder in sys.meta_path):
        sys.meta_path.append(_EditableFinder)
'''

# The user site goes before the system's site folders: a library installed
# there over the system's is the one imported.
SITE_ORDER_MODULE = '''#!/usr/bin/python
import sys
from ansible.module_utils.basic import AnsibleModule
AnsibleModule(argument_spec={}).exit_json(site_folders=[
    p for p in sys.path if p.endswith(('-packages', '-ed', '-later'))])
'''

EDITABLE_BOOK = USER_SITE_MADE + """    - name: the site folders in order
      site_order:
    - name: the project
      file: {path: "{{ usersite.stdout }}-ed", state: directory}
    - name: its module
      copy: {content: "VALUE = 3\\n", dest: "{{ usersite.stdout }}-ed/plasmid_lib_ver.py"}
    - name: the finder module
      copy:
        src: "{{ finder }}"
        dest: "{{ usersite.stdout }}/__editable___plasmid_lib_ver_0_1_finder.py"
    - name: the pth file importing it
      copy:
        content: "import __editable___plasmid_lib_ver_0_1_finder; __editable___plasmid_lib_ver_0_1_finder.install()\\n"
        dest: "{{ usersite.stdout }}/__editable__.plasmid_lib_ver-0.1.pth"
    - name: installed editable
      library_value:
    - name: a pth file naming a folder not made yet
      copy: {content: "{{ usersite.stdout }}-later\\n", dest: "{{ usersite.stdout }}/plasmid-later.pth"}
    - name: before the folder
      library_value:
    - name: the folder made
      file: {path: "{{ usersite.stdout }}-later", state: directory}
    - name: the editable one removed
      file: {path: "{{ usersite.stdout }}-ed/plasmid_lib_ver.py", state: absent}
    - name: a library in the folder made later
      copy: {content: "VALUE = 4\\n", dest: "{{ usersite.stdout }}-later/plasmid_lib_ver.py"}
    - name: through the folder made later
      library_value:
    - name: clean up
      file: {path: "{{ item }}", state: absent}
      loop: ["{{ usersite.stdout }}", "{{ usersite.stdout }}-ed", "{{ usersite.stdout }}-later"]
"""


@pytest.mark.edge_releases
def test_an_editable_install_and_a_pth_file_naming_a_folder_made_later_are_seen(
        ansible_bin, ansible_account, sshd, tmp_path):
    """``pip install --user -e`` writes a .pth file that imports a finder
    module it writes beside it; vanilla's next interpreter imports the
    project through it.  A .pth file naming a folder that is not there
    yet: a fresh interpreter skips the line, and the next one, once the
    folder is made, puts it on sys.path.  (The user site made mid-run goes
    before the system's site folders, as site.py puts it.)"""
    _with_the_library_module(tmp_path)
    (tmp_path / 'library' / 'site_order.py').write_text(SITE_ORDER_MODULE)
    finder = tmp_path / 'finder.py'
    finder.write_text(EDITABLE_FINDER)
    inv = inventory(sshd, ansible_account)
    book = EDITABLE_BOOK.replace('{{ finder }}', str(finder))
    vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
    _assert_seen(ours, (
        'an empty user site', 'installed editable', 'before the folder',
        'through the folder made later'),
        ['ImportError', 3, 3, 4])
