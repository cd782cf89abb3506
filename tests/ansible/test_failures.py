"""What goes wrong reads like vanilla and leaves nothing behind: module
crashes, commands killed by a signal, temp dirs that cannot be made or
removed, interpreters too old, missing or slow to start, a host without
Python, our plugin installed as ssh, an interrupted run, a killed broker."""
from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import time

import pytest

from parity import STRATEGY, assert_same, lost_the_pipe_race, run_both
from runner import (inventory, prepare_playbook, release_of, run_playbook,
                    wait_for_stats)
from testbed.procs import interruptible, pgrep
from testbed.pythons import require_python, slow_python_script


CRASH_MODULE = '''#!/usr/bin/python
import os
import sys

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(how=dict(type='str')))
    if module.params['how'] == 'hook':
        # As 2.18's file module does: errors main() lets out become a
        # result in the hook the interpreter calls.
        def hook(exc_type, exc, tb):
            module.fail_json(msg='hooked: %s' % exc)
        sys.excepthook = hook
        raise ValueError('let out')
    if module.params['how'] == 'raise':
        raise RuntimeError('the module broke')
    if module.params['how'] == 'exit':
        raise SystemExit(3)
    if module.params['how'] == 'abort':  # a C extension's crash
        sys.stdout.write('half a line')
        sys.stdout.flush()
        os.abort()
    if module.params['how'] == 'thread':  # exit_json from a thread
        import threading
        worker = threading.Thread(target=module.exit_json,
                                  kwargs={'how': 'from a thread'})
        worker.start()
        worker.join()
        raise SystemExit(0)  # not reached: exit_json ends the process
    if module.params['how'] == 'pipe':  # its reader gone
        reader, writer = os.pipe()
        os.close(reader)
        try:
            os.write(writer, b'x')
        except OSError as exc:
            module.exit_json(changed=False, how=type(exc).__name__)
    if module.params['how'] == 'sigint':
        import signal
        import time
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            module.exit_json(changed=False, how='KeyboardInterrupt')
    module.exit_json(changed=False, how=module.params['how'])


main()
'''

CRASHES = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a custom module
      crashy: how=fine
    - name: an exception
      crashy: how=raise
      ignore_errors: true
    - name: an exit without a result
      crashy: how=exit
      ignore_errors: true
    - name: an exception turned into a result by sys.excepthook
      crashy: how=hook
      ignore_errors: true
    - name: an abort
      crashy: how=abort
      ignore_errors: true
    - name: exit_json called from a thread
      crashy: how=thread
      ignore_errors: true
    - name: a write to a pipe without a reader
      crashy: how=pipe
      ignore_errors: true
    - name: SIGINT
      crashy: how=sigint
      ignore_errors: true
"""


@pytest.mark.edge_releases
def test_module_crashes_read_like_vanilla(ansible_bin, ansible_account,
                                          sshd, tmp_path):
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'crashy.py').write_text(CRASH_MODULE)
    inv = inventory(sshd, ansible_account)
    vanilla = run_playbook(ansible_bin, tmp_path, CRASHES, inv, False)
    ours = run_playbook(ansible_bin, tmp_path, CRASHES, inv, True)
    assert_same(vanilla, ours)
    assert_same(vanilla, run_playbook(ansible_bin, tmp_path, CRASHES, inv,
                                      True, STRATEGY))
    results = {r['task']: r for r in ours.results}
    assert results['a custom module']['result']['how'] == 'fine'
    assert results['an exception']['status'] == 'failed'
    assert results['an exit without a result']['status'] == 'failed'
    # 2.19+ catch the exception before the interpreter would call the hook;
    # 2.18 leaves it to the hook.  assert_same holds us to vanilla either way.
    hooked = results['an exception turned into a result by sys.excepthook']
    assert hooked['status'] == 'failed'
    assert 'let out' in hooked['result']['msg'], hooked
    aborted = results['an abort']
    assert (aborted['status'], aborted['result']['rc']) == ('failed', 134)
    # What the shell around vanilla's interpreter says of the signal.
    theirs = {r['task']: r for r in vanilla.results}['an abort']
    assert aborted['result']['module_stderr'].endswith('Aborted\n')
    assert aborted['result']['module_stderr'] == \
        theirs['result']['module_stderr']
    threaded = results['exit_json called from a thread']
    assert threaded['status'] == 'ok', threaded
    assert threaded['result']['how'] == 'from a thread'
    # Signals as in vanilla's fresh interpreter: SIGPIPE ignored (the
    # write raises), SIGINT a KeyboardInterrupt (both killed the process).
    assert results['a write to a pipe without a reader']['result']['how'] \
        == 'BrokenPipeError'
    assert results['SIGINT']['result']['how'] == 'KeyboardInterrupt'
    assert ours.stats['module_runs'] == 8, ours.stats


KILLED = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module process killed, as the OOM killer would
      shell: kill -9 $PPID
      ignore_errors: true
    - name: the next task runs
      command: id -un
    - name: the login shell killed
      raw: kill -9 $$
    - name: never runs, the host being unreachable
      command: id -un
"""


def test_commands_killed_by_a_signal_read_like_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A module process killed by SIGKILL: the shell around vanilla's
    interpreter reports rc 137, and so do we.  A raw command that kills its
    login shell: ssh exits 255 and vanilla calls the host unreachable; our
    shell stands where the login shell does, and reads the same."""
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, KILLED, inv)
    assert vanilla.rc == 4, vanilla.output
    results = {r['task']: r for r in ours.results}
    killed = results['a module process killed, as the OOM killer would']
    assert (killed['status'], killed['result']['rc']) == ('failed', 137)
    assert results['the next task runs']['status'] == 'ok'
    assert results['the login shell killed']['status'] == 'unreachable'
    assert 'never runs, the host being unreachable' not in results


EXIT_255 = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a command's 255 after a traceback is the command's
      raw: echo 'Traceback (most recent call last):'; exit 255
      ignore_errors: true
    - name: a command's 255
      raw: exit 255
      ignore_unreachable: true
    - name: a script's exit 255
      script: exit_255.sh
      ignore_unreachable: true
    - name: a module's sys.exit(255)
      exit_255:
      ignore_unreachable: true
    - name: a pipelined module's sys.exit(255)
      exit_255_new_style:
      ignore_unreachable: true
    - name: the host is still there
      command: id -un
"""


@pytest.mark.edge_releases
def test_an_exit_status_of_255_reads_as_ssh_s_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ssh passes a command's 255 on, and vanilla's ssh plugin takes it
    for its own failure: the host is unreachable (a pipelined module's
    "Data could not be sent"), unless the output shows a program's error.
    Ours called the tasks failed, and ignore_errors let the play go on."""
    (tmp_path / 'exit_255.sh').write_text('#!/bin/sh\nexit 255\n')
    (tmp_path / 'library').mkdir()
    (tmp_path / 'library' / 'exit_255.py').write_text(
        '#!/usr/bin/python\nimport sys\nsys.exit(255)\n')
    (tmp_path / 'library' / 'exit_255_new_style.py').write_text(
        '#!/usr/bin/python\nimport sys\n'
        'from ansible.module_utils.basic import AnsibleModule\n'
        'AnsibleModule(argument_spec={})\nsys.exit(255)\n')
    vanilla, ours = run_both(ansible_bin, tmp_path, EXIT_255,
                             inventory(sshd, ansible_account))
    results = {r['task']: r for r in ours.results}
    assert results["a command's 255 after a traceback is the command's"][
        'status'] == 'failed'
    # Their messages are vanilla's (run_both compares them).
    for task in ("a command's 255", "a script's exit 255",
                 "a module's sys.exit(255)",
                 "a pipelined module's sys.exit(255)"):
        assert results[task]['status'] == 'unreachable', results[task]
    assert 'Data could not be sent to remote host' in results[
        "a pipelined module's sys.exit(255)"]['result']['msg']
    assert results['the host is still there']['status'] == 'ok'


def test_the_words_that_make_255_a_command_s_are_ansible_core_s(
        ansible_bin) -> None:
    """Ours must follow ansible-core's list (each release's): one that
    changes it changes which failures are unreachable hosts."""
    both = subprocess.run(
        [os.path.join(ansible_bin, 'python'), '-c',
         'from ansible.plugins.connection.ssh import b_NOT_SSH_ERRORS; '
         'from plasmid.ansible.connection import _NOT_SSH_ERRORS; '
         'print(repr((b_NOT_SSH_ERRORS, _NOT_SSH_ERRORS)))'],
        stdout=subprocess.PIPE, check=True, timeout=60).stdout
    theirs, ours = ast.literal_eval(both.decode())
    assert ours == theirs and len(ours) >= 1


UNREMOVABLE_TEMP_DIR = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a script as root leaves what the login cannot remove
      script: leave_a_root_dir.sh
      become: true
    - {name: the next task, command: id -un}
    - name: clean up as root
      shell: rm -rf ~{{ ansible_user }}/.ansible/tmp/ansible-tmp-*
      become: true
"""


def write_root_dir_leaver(tmp_path) -> None:
    """leave_a_root_dir.sh: run as root in its temp dir, it leaves there
    a directory the login cannot remove."""
    (tmp_path / 'leave_a_root_dir.sh').write_text(
        '#!/bin/sh\nkept="$(dirname "$0")/kept"\n'
        'mkdir "$kept" && touch "$kept/file" && echo made\n')


CLEANUP_WARNING = re.compile(r'Error deleting remote temporary files'
                             r'\s+\(rc: 1, stderr: \}\)')


def assert_one_cleanup_warning(vanilla, ours) -> None:
    """Each run warned once, in vanilla's words, of a temp dir it could
    not remove; ours counted it."""
    assert len(CLEANUP_WARNING.findall(vanilla.output)) == 1, vanilla.output
    assert len(CLEANUP_WARNING.findall(ours.output)) == 1, ours.output
    assert ours.stats['cleanups_failed'] == 1, ours.stats


@pytest.mark.edge_releases
def test_a_temp_dir_that_cannot_be_removed_fails_no_task(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla warns when a task's temp dir cannot be removed; removing it
    is sent ahead here, and its failure must not fail the next task.  The
    warning comes with the next task's call, in vanilla's words."""
    write_root_dir_leaver(tmp_path)
    vanilla, ours = run_both(ansible_bin, tmp_path, UNREMOVABLE_TEMP_DIR,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    assert_one_cleanup_warning(vanilla, ours)


UNUSABLE_REMOTE_TMP = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a copy needs a temp dir
      copy: {content: "x\\n", dest: /tmp/plasmid-never-written}
      vars: {ansible_remote_tmp: /proc/plasmid-nowhere/tmp}
    - name: never reached
      raw: echo after
"""


def test_a_temp_dir_that_cannot_be_made_fails_the_host_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """The first temp dir is made while the worker waits, so the action
    plugin sees the shell's failure and words it (host unreachable)."""
    inv = inventory(sshd, ansible_account)
    named = re.compile(r'ansible-tmp-[\d.-]+')

    def seen(run):
        return [(r['task'], r['status'], named.sub('T', r['result']['msg']))
                for r in run.results]
    vanilla = run_playbook(ansible_bin, tmp_path, UNUSABLE_REMOTE_TMP, inv,
                           False)
    assert seen(vanilla)[0][:2] == ('a copy needs a temp dir', 'unreachable')
    for extra in ({}, STRATEGY):
        ours = run_playbook(ansible_bin, tmp_path, UNUSABLE_REMOTE_TMP, inv,
                            True, extra)
        assert (ours.rc, seen(ours)) == (vanilla.rc, seen(vanilla))


TOO_OLD_INTERPRETER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module on a Python too old for it
      ping: {}
      vars: {ansible_python_interpreter: %s}
      ignore_errors: true
    - name: a raw command after it
      raw: echo raw
    - name: a module on the usual Python
      ping: {}
"""


@pytest.mark.edge_releases
def test_a_python_too_old_for_the_module_fails_it_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """ansible-core's modules do not compile on Python 3.6: the module
    fails as vanilla's does (no JSON), and not the next task, which
    the zip's arrival was sent ahead of."""
    book = TOO_OLD_INTERPRETER % require_python('3.6')
    vanilla, ours = run_both(ansible_bin, tmp_path, book,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    failed = vanilla.by_task()['t1', 'a module on a Python too old for it']
    assert failed['status'] == 'failed', vanilla.output


TOO_OLD_EVERYWHERE = """
- hosts: targets
  gather_facts: false
  vars: {ansible_python_interpreter: %s}
  tasks:
    - name: ping
      ping: {}
      ignore_errors: true
    - name: a command as root
      command: id -un
      become: true
      ignore_errors: true
    - name: raw as root
      raw: id -un
      become: true
"""


def _without_temp_names(text: str) -> str:
    """A module's stderr without the random part of its temp dir's name."""
    return re.sub(r'_payload_[A-Za-z0-9_]+/', '_payload_/', text)


@pytest.mark.edge_releases
@pytest.mark.parametrize('version', ['2.7', '3.6'])
def test_a_python_too_old_for_ansible_core_reads_as_vanillas_failure(
        ansible_bin, ansible_account, sshd, tmp_path, version):
    """A host whose only interpreter is too old for the ansible-core in
    use (2.7 and 3.6 for every supported release): modules fail with the
    interpreter's own words about the AnsiballZ script (module_stderr,
    which parity leaves uncompared), not a traceback through plasmid's
    code, and ``raw`` with become runs as under vanilla."""
    book = TOO_OLD_EVERYWHERE % require_python(version)
    vanilla, ours = run_both(ansible_bin, tmp_path, book,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    assert vanilla.by_task()['t1', 'raw as root']['result']['stdout'] == \
        'root\r\n'
    for key, theirs in vanilla.by_task().items():
        mine = ours.by_task()[key]['result']
        for field in ('module_stderr', 'module_stdout'):
            assert _without_temp_names(mine.get(field, '')) == \
                _without_temp_names(theirs['result'].get(field, '')), key
        said = json.dumps(mine)
        assert 'plasmid/' not in said and 'plasmid-ansiballz' not in said, \
            key  # our code's path, and where a zip's files seem to be



PYTHON_2_LOGIN = """
- hosts: targets
  gather_facts: false
  vars: {ansible_python_interpreter: %s}
  tasks:
    - name: a module, whose Python 2 context becomes the login's
      ping: {}
      ignore_errors: true
    - name: a script needs the login's first temp dir
      script: hello.sh
    - name: a script as root leaves what the login cannot remove
      script: leave_a_root_dir.sh
      become: true
    - name: the next task
      script: hello.sh
    - name: clean up as root
      raw: rm -rf ~{{ ansible_user }}/.ansible/tmp/ansible-tmp-*
      become: true
"""


@pytest.mark.edge_releases
def test_a_python_2_login_makes_and_removes_temp_dirs_as_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Where the login's context runs Python 2 (the interpreter of the
    host's first module task: a host whose only Python is 2.7), its shell
    commands answer in Python 2's ``str``, which arrives as text: the
    login's first temp dir is read from that answer, and a temp dir that
    cannot be removed is warned of in its words, as under vanilla,
    instead of failing the task (or the next) with our own error."""
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    write_root_dir_leaver(tmp_path)
    book = PYTHON_2_LOGIN % require_python('2.7')
    vanilla, ours = run_both(ansible_bin, tmp_path, book,
                             inventory(sshd, ansible_account))
    assert vanilla.rc == 0, vanilla.output
    for task in ('a script needs the login\'s first temp dir',
                 'the next task'):
        assert 'script says hi' in \
            ours.by_task()['t1', task]['result']['stdout'], ours.output
    assert_one_cleanup_warning(vanilla, ours)


MISSING_INTERPRETER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a module under an interpreter the host lacks
      command: /bin/true
      vars:
        ansible_python_interpreter: /nonexistent/python3
      ignore_errors: true
    - name: the same as root
      command: /bin/true
      become: true
      vars:
        ansible_python_interpreter: /nonexistent/python3
      ignore_errors: true
    - name: the host is still there
      command: id -un
"""


@pytest.mark.edge_releases
def test_a_missing_interpreter_fails_the_task_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """Vanilla runs the interpreter's command and reports what the shell
    said (a failed task, rc 127); an accelerator that cannot start its
    interpreter there must not call the host unreachable."""
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, MISSING_INTERPRETER, inv)
    results = {r['task']: r for r in ours.results}
    for name in ('a module under an interpreter the host lacks',
                 'the same as root'):
        assert results[name]['status'] == 'failed', results[name]
        assert results[name]['result']['rc'] == 127, results[name]
        assert 'not found' in results[name]['result']['module_stderr']
    assert results['the host is still there']['status'] == 'ok'
    assert ours.stats['modules_from_script'] == 2, ours.stats
    assert 'Traceback' not in ours.output


NOT_A_PYTHON = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: an interpreter that fails at once
      command: id -un
      vars:
        ansible_python_interpreter: /bin/false
      ignore_errors: true
    - name: an interpreter that succeeds without a word
      command: id -un
      vars:
        ansible_python_interpreter: /bin/true
      ignore_errors: true
    - name: the host is still there
      command: id -un
"""


@pytest.mark.edge_releases
def test_an_interpreter_that_exits_at_once_fails_the_task_as_in_vanilla(
        ansible_bin, ansible_account, sshd, tmp_path):
    """A program that is no Python ends at once: vanilla fails the task
    with what came of it ("No start of json char found"); we called the
    host unreachable, and the rest of the play was skipped."""
    inv = inventory(sshd, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, NOT_A_PYTHON, inv)
    results = {r['task']: r for r in ours.results}
    for name in ('an interpreter that fails at once',
                 'an interpreter that succeeds without a word'):
        assert results[name]['status'] == 'failed', results[name]
    assert results['the host is still there']['status'] == 'ok'
    assert 'Traceback' not in ours.output


NO_PYTHON = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: raw, as to install a Python
      raw: echo hello; id -un
    - name: raw as root
      raw: id -un
      become: true
    - name: a script
      script: hello.sh
    - name: a module, with no Python to run it
      command: /bin/true
      ignore_errors: true
    - name: raw still works
      raw: echo after
"""


def _lost_the_pipe_race(run) -> bool:
    """Where the shell says "not found" for Python, the module's task may
    lose ansible-core's race (parity.lost_the_pipe_race) instead of
    failing with rc 127: vanilla and the accelerator alike, as the
    accelerator hands a host without Python to that plugin."""
    module = {r['task']: r for r in run.results}.get(
        'a module, with no Python to run it')
    return module is not None and lost_the_pipe_race(module)


@pytest.mark.edge_releases
def test_a_host_without_python_works_as_in_vanilla(
        ansible_bin, ansible_account, sshd_without_python, tmp_path):
    """Where no Python starts, commands and files go through ansible-core's
    ssh plugin: raw and script work, a module fails, as under vanilla."""
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    inv = inventory(sshd_without_python, ansible_account)
    vanilla, ours = run_both(ansible_bin, tmp_path, NO_PYTHON, inv,
                             raced=_lost_the_pipe_race)
    results = {r['task']: r for r in ours.results}
    assert results['raw, as to install a Python']['result']['stdout'] \
        .split() == ['hello', ansible_account]
    assert results['raw as root']['result']['stdout'].split() == ['root']
    assert 'script says hi' in results['a script']['result']['stdout']
    module = results['a module, with no Python to run it']
    assert module['status'] == 'failed', module
    assert module['result']['rc'] == 127, module
    assert results['raw still works']['status'] == 'ok'
    # The module was asked for, found no interpreter, and went as given.
    assert ours.stats['modules_from_script'] == 1, ours.stats
    assert ours.stats.get('module_runs', 0) == 0, ours.stats
    assert 'Traceback' not in ours.output


SHADOWING_PLUGIN = os.path.join(
    os.path.dirname(__file__), os.pardir, os.pardir, 'ansible_collections',
    'plasmid', 'accel', 'plugins', 'connection', 'ssh.py')


def test_our_plugin_installed_as_ssh_falls_back_or_says_why_not(
        ansible_bin, ansible_account, sshd_without_python, tmp_path):
    """Copied into a connection plugin path as ``ssh.py`` (so that hosts
    whose inventory says ``ansible_connection=ssh`` are accelerated too),
    our plugin is ``ssh``.  On 2.18 ``ansible.builtin.ssh`` stays
    ansible-core's, and the fallback for a host without Python reaches it.
    2.19+ load the builtin's file under the module name ours took, so
    ``ansible.builtin.ssh`` is ours too: the fallback would call itself
    without end, and the task says why instead."""
    plugins = tmp_path / 'connection_plugins'
    plugins.mkdir()
    shutil.copyfile(SHADOWING_PLUGIN, plugins / 'ssh.py')
    (tmp_path / 'hello.sh').write_text('#!/bin/sh\necho "script says hi"\n')
    run = run_playbook(
        ansible_bin, tmp_path, NO_PYTHON,
        inventory(sshd_without_python, ansible_account), False,
        {'ANSIBLE_CONNECTION_PLUGINS': str(plugins)})
    assert 'Traceback' not in run.output
    results = {r['task']: r for r in run.results}
    raw = results['raw, as to install a Python']
    if release_of(ansible_bin) < (2, 19):
        assert raw['result']['stdout'].split() == ['hello', ansible_account]
        assert 'script says hi' in results['a script']['result']['stdout']
        # It was ours that ran: its broker counted the module sent as given.
        stats = wait_for_stats(tmp_path / 'stats-vanilla.json')
        assert stats['modules_from_script'] == 1, stats
    else:
        assert raw['status'] == 'failed', raw
        assert 'name it plasmid.accel.ssh instead' in raw['result']['msg']
        assert list(results) == ['raw, as to install a Python']


SLEEPER = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: a long task
      command: %(sleep)s
      become: true
"""


@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_an_interrupted_run_stops_and_leaves_nothing(
        ansible_bin, ansible_account, sshd, tmp_path, extra):
    """Ctrl-C in the middle of a task: ansible-playbook ends as vanilla's
    does on SIGINT (rc 99, "User interrupted execution"), and the broker
    and its interpreters go with it: no thread or process keeps the run
    alive.  The module's own process and its child (here `sleep`) run on,
    as under vanilla, whose sshd session without a tty does not signal
    them; once that ends, nothing of the run is left."""
    import signal
    prepared = prepare_playbook(ansible_bin, tmp_path,
                                SLEEPER % {'sleep': SLEEP},
                                inventory(sshd, ansible_account), True, extra)
    proc = subprocess.Popen(prepared.argv, env=prepared.env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=interruptible)
    try:
        deadline = time.time() + 60
        while not pgrep('-u', 'root', '-x', '-f', SLEEP) and \
                time.time() < deadline:
            time.sleep(0.2)
        assert pgrep('-u', 'root', '-x', '-f', SLEEP), 'the task never ran'
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=60)  # a hang fails here
        assert proc.returncode == 99, output
        assert 'User interrupted execution' in output, output
        assert 'Traceback' not in output, output
        # The module's own work ends; the module process then exits.
        subprocess.run(['pkill', '-u', 'root', '-x', '-f', SLEEP])
        deadline = time.time() + 15
        while time.time() < deadline and (
                pgrep('-f', 'broker-%d.sock' % proc.pid) or
                pgrep('-u', ansible_account) or
                pgrep('-u', 'root', '-f', CONTEXT)):
            time.sleep(0.2)
        assert not pgrep('-f', 'broker-%d.sock' % proc.pid), 'broker left'
        assert not pgrep('-u', ansible_account), 'login interpreter left'
        assert not pgrep('-u', 'root', '-f', CONTEXT), 'become interpreter left'
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        subprocess.run(['pkill', '-u', 'root', '-x', '-f', SLEEP])


BROKER_KILLED = """
- hosts: targets
  gather_facts: false
  tasks:
    - {name: before, command: id -un}
    - name: meanwhile
      %s
      ignore_errors: true
    - {name: after, command: id -un}
    - name: after, with become
      command: id -un
      become: true
"""
# Unique to this session, as SLEEP below.
BROKER_SLEEP = 'sleep 4.%d' % (os.getpid() % 100000)
MEANWHILE = {'between': 'pause: {seconds: 3}',
             'during': 'command: %s' % BROKER_SLEEP}


@pytest.mark.edge_releases
@pytest.mark.parametrize('when', sorted(MEANWHILE))
@pytest.mark.parametrize('extra', [{}, STRATEGY], ids=['plugin', 'strategy'])
def test_a_broker_killed_mid_run_is_replaced_for_the_next_task(
        ansible_bin, ansible_account, sshd, tmp_path, extra, when):
    """The broker killed (out of memory, say) between two tasks, or during
    one, which then fails saying so and where the broker's log is: the
    next task starts a broker afresh, which logs in again; the
    interpreters of the dead one end with their ssh."""
    import signal
    prepared = prepare_playbook(
        ansible_bin, tmp_path, BROKER_KILLED % MEANWHILE[when],
        inventory(sshd, ansible_account), True, extra)

    def time_to_kill() -> bool:
        if when == 'during':
            return bool(pgrep('-u', ansible_account, '-x', '-f',
                              BROKER_SLEEP))
        return prepared.record.exists() and \
            '"before"' in prepared.record.read_text()

    proc = subprocess.Popen(prepared.argv, env=prepared.env,
                            cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not time_to_kill():
            time.sleep(0.1)
        broker = pgrep('-f', 'broker-%d.sock' % proc.pid)
        assert broker and '\n' not in broker, broker
        first_logins = pgrep('-u', ansible_account)
        os.kill(int(broker), signal.SIGKILL)
        output, _ = proc.communicate(timeout=120)  # a hang fails here
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output
    results = [json.loads(line) for line in
               prepared.record.read_text().splitlines()]
    meanwhile = 'ok' if when == 'between' else 'failed'
    assert [(r['task'], r['status']) for r in results] == [
        ('before', 'ok'), ('meanwhile', meanwhile), ('after', 'ok'),
        ('after, with become', 'ok')], output
    assert [r['result']['stdout'] for r in results
            if r['task'] != 'meanwhile'] == \
        [ansible_account, ansible_account, 'root']
    if when == 'during':
        message = results[1]['result']['msg']
        assert 'lost the plasmid broker' in message, message
        assert re.search(r'its log: /\S+/broker-%d\.log' % proc.pid,
                         message), message
    assert 'Traceback' not in output
    # The new broker's counters: it logged in afresh.
    stats = wait_for_stats(prepared.stats)
    assert stats['contexts'] == 2, stats
    # The dead broker's interpreter ended with its ssh.
    deadline = time.time() + 15
    while time.time() < deadline and \
            set(first_logins.split()) & set(pgrep('-u', ansible_account).split()):
        time.sleep(0.2)
    assert not set(first_logins.split()) & \
        set(pgrep('-u', ansible_account).split()), 'old interpreter left'


# Unique to this session: a sleep left by another (a killed one) must not
# look like this run's task.
SLEEP = 'sleep 300.%d' % (os.getpid() % 100000)
# How a plasmid interpreter's command line starts (its first stage).
CONTEXT = r'exec\(zlib\.decompress'


@pytest.mark.edge_releases
def test_a_python_slower_to_start_than_the_timeout_still_runs(
        ansible_bin, ansible_account, sshd, tmp_path) -> None:
    """`timeout` bounds ssh's connection (its ConnectTimeout), as under
    vanilla, not the interpreter's start that follows: a host whose
    Python takes longer than that to start (a loaded machine) is not
    unreachable."""
    with slow_python_script(3) as slow:
        inv = inventory(sshd, ansible_account).replace(
            'ansible_python_interpreter=/usr/bin/python3',
            'ansible_python_interpreter=%s ansible_timeout=2' % slow)
        book = ('- hosts: targets\n  gather_facts: false\n  tasks:\n'
                '    - command: /bin/true\n')
        vanilla, ours = run_both(ansible_bin, tmp_path, book, inv)
        assert [r['status'] for r in ours.results] == ['ok']
