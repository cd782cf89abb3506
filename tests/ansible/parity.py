"""What the accelerator's parity tests share: how a run is compared with
vanilla's (which result keys vary between runs anyway), the settings that
switch on the optional strategy and the preload callback, and, for the
connection plugins beyond ssh (local, podman, docker, kubectl, lxc), the
tasks any connection must run as its vanilla counterpart does, the
controller-side files they use, and a run of twenty tasks that should take
one interpreter."""
from __future__ import annotations

from typing import Callable, Optional

from runner import Run, run_playbook

# The optional strategy: linear with each task on a thread of
# ansible-playbook (plasmid/ansible/threadworker.py).
STRATEGY = {'ANSIBLE_STRATEGY': 'plasmid.accel.linear'}
# The optional preload callback, beside the runner's recording one.
PRELOAD = {'ANSIBLE_CALLBACKS_ENABLED': 'record,plasmid.accel.preload'}

# Keys whose values differ from run to run, vanilla or not.
VOLATILE = {'start', 'end', 'delta', 'invocation', '_ansible_no_log',
            'ansible_facts', 'warnings', 'deprecations', 'checksum_src',
            'exception', 'module_stderr', 'module_stdout', 'src', 'md5sum',
            'mtime', 'atime', 'ctime', 'inode', 'dev', 'backup_file',
            'checksum', 'diff', 'stat', 'size', 'uid', 'gid', 'mode',
            'owner', 'group', 'state', 'path', 'results_file',
            'ansible_job_id', 'attempts', 'elapsed', 'stop',
            'extract_results'}  # unarchive's: names the remote temp file


def lost_the_pipe_race(task: dict) -> bool:
    """Whether *task* (a result as the recording callback keeps it) is
    ansible-core's ssh plugin losing its race with ssh: it writes a
    pipelined module after starting the command, and when ssh has ended
    first (a login refused, a shell that found no Python) the write fails
    and the host reads as unreachable.  Vanilla loses it now and then."""
    return task['status'] == 'unreachable' and \
        task['result'].get('msg', '').endswith('[Errno 32] Broken pipe')


def run_both(ansible_bin: str, tmp_path, book: str, inv: str,
             raced: Optional[Callable[[Run], bool]] = None):
    """The playbook vanilla, then accelerated with the connection plugin
    alone and with the optional strategy too; the results must match.
    Returns vanilla's run and the plugin-only one.

    *raced* says a run lost a race of ansible-core's own (one vanilla loses
    too, where the accelerator hands work to ansible-core's plugin): such
    a run is made again, at most twice."""
    def run(accelerated: bool, extra_env: Optional[dict] = None) -> Run:
        for _ in range(3):  # the run, then at most twice again
            done = run_playbook(ansible_bin, tmp_path, book, inv,
                                accelerated, extra_env)
            if raced is None or not raced(done):
                break
        return done

    vanilla = run(False)
    ours = run(True)
    assert_same(vanilla, ours)
    threaded = run(True, STRATEGY)
    assert_same(vanilla, threaded)
    assert threaded.stats['client_processes'] == 1, threaded.stats
    return vanilla, ours


def comparable(result: dict) -> dict:
    kept = {k: v for k, v in result.items() if k not in VOLATILE and
            not k.startswith('_ansible')}
    if isinstance(kept.get('timedout'), dict):  # 2.18: where it stopped
        kept['timedout'] = {k: v for k, v in kept['timedout'].items()
                            if k != 'frame'}
    if str(kept.get('stdout', '')).startswith('Paused for '):
        # pause's: the seconds it measured (1.0, 1.01), in both forms
        del kept['stdout']
        kept.pop('stdout_lines', None)
    if isinstance(kept.get('results'), list):  # a loop's items
        kept['results'] = [comparable(item) if isinstance(item, dict)
                           else item for item in kept['results']]
    return kept


def assert_same(vanilla, accelerated, unsettled: tuple = ()) -> None:
    """The same tasks end the same way; the tasks named in *unsettled*
    (whose words vary between vanilla's own runs) in status only."""
    assert vanilla.rc == accelerated.rc, accelerated.output
    ours = accelerated.by_task()
    assert set(ours) == set(vanilla.by_task()), accelerated.output
    for key, theirs in vanilla.by_task().items():
        mine = ours[key]
        assert mine['status'] == theirs['status'], (key, mine, theirs)
        if key[1] not in unsettled:
            ours_kept = comparable(mine['result'])
            theirs_kept = comparable(theirs['result'])
            assert ours_kept == theirs_kept, \
                (key, differing(ours_kept, theirs_kept))


def differing(ours: dict, theirs: dict) -> dict:
    """The keys whose values differ, as (ours, vanilla's): what a failed
    comparison prints instead of two whole results."""
    missing = '<absent>'
    return {k: (ours.get(k, missing), theirs.get(k, missing))
            for k in set(ours) | set(theirs)
            if ours.get(k, missing) != theirs.get(k, missing)}


# Tasks for a play whose variable ``out`` names a directory on the host:
# made first, removed last.  (Indented for a play's task list.)
TASKS = """
    - name: environment keyword
      command: printenv TASK_VAR
      environment: {TASK_VAR: from-the-task}
    - name: who
      command: id -un
    - name: a pipe, in a shell
      shell: echo one two | wc -w
    - name: a directory
      file: {path: "{{ out }}", state: directory}
    - name: copy of content
      copy: {content: "small\\n", dest: "{{ out }}/small.txt"}
    - name: copy of a file
      copy: {src: data.txt, dest: "{{ out }}/data.txt"}
    - name: template
      template: {src: t.j2, dest: "{{ out }}/t.conf"}
    - name: lineinfile
      lineinfile: {path: "{{ out }}/t.conf", line: added}
    - name: check mode changes nothing
      lineinfile: {path: "{{ out }}/t.conf", line: never}
      check_mode: true
      diff: true
    - name: fetch
      fetch:
        src: "{{ out }}/small.txt"
        dest: "{{ playbook_dir }}/fetched.txt"
        flat: true
    - name: slurp
      slurp: {src: "{{ out }}/t.conf"}
    - name: script
      script: s.sh arg
    - name: no_log
      command: echo secret
      no_log: true
    - name: a failing command
      command: /bin/false
      ignore_errors: true
    - name: a module's failure
      file: {path: /nonexistent/x/y, state: touch}
      ignore_errors: true
    - name: async
      command: sleep 0.2
      async: 10
      poll: 0
      register: job
    - name: async_status
      async_status: {jid: "{{ job.ansible_job_id }}"}
      register: waited
      until: waited.finished
      retries: 50
      delay: 0.2
    - name: reset_connection
      meta: reset_connection
    - name: after the reset
      command: id -un
    - name: clean up, for the next run
      file: {path: "{{ out }}", state: absent}
"""

TWENTY = """
- hosts: targets
  gather_facts: false
  tasks:
%s
""" % '\n'.join('    - command: /bin/true' for _ in range(20))


def prepare_files(tmp_path) -> None:
    """The playbook directory's files that TASKS use; fetched.txt is
    where they fetch to (the caller removes it between runs)."""
    (tmp_path / 'data.txt').write_text('in the playbook directory\n')
    (tmp_path / 't.j2').write_text('{{ inventory_hostname }} {{ 6 * 7 }}\n')
    script = tmp_path / 's.sh'
    script.write_text('#!/bin/sh\necho "script $1 in $PWD"\n')
    script.chmod(0o755)


def check_shared_results(results: dict) -> None:
    """What TASKS must have given, by task name (the comparison with
    vanilla covers the rest)."""
    assert results['environment keyword']['stdout'] == 'from-the-task'
    assert results['a pipe, in a shell']['stdout'] == '2'
    assert results['script']['stdout'].startswith('script arg in ')
    assert results['after the reset']['rc'] == 0


def optional_modes(ansible_bin: str, newest_ansible_bin: str) -> tuple:
    """The environments of the optional strategy and the preload callback,
    for a parity test to run again: on the newest ansible-core only, as
    neither depends on the connection (each is tested on every release
    over ssh, in test_playbooks.py) and CI's time is bounded."""
    return (STRATEGY, PRELOAD) if ansible_bin == newest_ansible_bin else ()
