"""The modules that may run in a module process an earlier task of theirs
ran in (``target.STAYING_MODULES``), checked on each release: one run
leaves in its process only what every run sets anew or ``baseline.py``
puts back, and a process that stayed runs the next task with that task's
arguments."""
from __future__ import annotations

import json
import os

import pytest

import plasmid
from plasmid.ansible import target
from testbed.pythons import require_python

import module_state_fns
from module_scripts import add_script, record_script, warm_context

# Each module of STAYING_MODULES (shell is command), with arguments
# that make it do its work; {work} is a scratch directory.
RUNS = {'command': '/bin/true', 'shell': 'echo hi',
        'copy': 'src=/etc/hostname dest={work}/copied remote_src=true',
        'file': 'path={work}/touched state=touch',
        'lineinfile': 'path={work}/lines line=a create=true', 'ping': '',
        'slurp': 'src=/etc/hostname', 'stat': 'path=/etc/hostname',
        'blockinfile': 'path={work}/block block=hello create=true',
        'find': 'paths={work} patterns=*.py,*.txt recurse=true',
        'replace': 'path=/dev/null regexp=a replace=b',
        'tempfile': 'path={work} state=file'}

# What a module run may change in its process: the arguments ansible-core's
# runners set for each run, what baseline.py puts back (2.22's
# AnsibleModule sets a SIGUSR1 handler on every run; tempfile makes its
# name sequence), and the pure caches it lets grow (re's).
SET_BY_EVERY_RUN = {
    'ansible.module_utils.basic._ANSIBLE_ARGS',
    'ansible.module_utils.basic._ANSIBLE_PROFILE',
    'ansible.module_utils.basic._PARSED_MODULE_ARGS',
    'sys.argv', 'sys.meta_path', 'sys.excepthook', 'process: locale',
    'process: signal handlers', 'tempfile._name_sequence',
    're._cache', 're._cache2',
    # Each run exports what vanilla's shell would (PWD, _, SUDO_COMMAND)
    # where this context lacks it; baseline.py puts the environment back.
    'process: environ', 'posix.environ'}


def test_every_staying_module_is_measured():
    assert {'ansible.modules.' + name for name in RUNS
            if name != 'shell'} == set(target.STAYING_MODULES)


@pytest.mark.parametrize('module', sorted(RUNS))
def test_a_staying_module_leaves_nothing_the_next_run_would_see(
        ansible_bin, tmp_path, module):
    """A run leaves only what every run sets or baseline.py puts back; and
    baseline.py agrees: once the context is warm, every run of the module
    is in the kept process."""
    python = require_python('3.11')
    args = RUNS[module].format(work=tmp_path)
    script = record_script(os.path.dirname(ansible_bin), python, args,
                           str(tmp_path / 'record'), module)
    with plasmid.Router() as router:
        ctx, digest, job = warm_context(router, python, script)
        report = ctx.call(module_state_fns.runs_in_one_process, digest, job,
                          0, 1)
        before = ctx.call(target.fork_counts)
        statuses = [ctx.call(target.run_module, digest, job)[0]
                    for _ in range(4)]
        after = ctx.call(target.fork_counts)
    assert report['statuses'] == [0]
    assert set(report['left by the first run']) <= SET_BY_EVERY_RUN
    assert statuses == [0] * 4
    assert after['stayed'] - before['stayed'] == 4
    assert after['given_up'] == 0


def test_a_process_that_stayed_runs_each_task_with_its_own_arguments(
        ansible_bin, tmp_path):
    python = require_python('3.11')
    scripts = [record_script(os.path.dirname(ansible_bin), python,
                             'echo %s' % word, str(tmp_path / word))
               for word in ('one', 'two')]
    with plasmid.Router() as router:
        ctx, *first = warm_context(router, python, scripts[0])
        second = add_script(ctx, scripts[1])  # 2.18's zip holds them
        before = ctx.call(target.fork_counts)['stayed']
        answers = [ctx.call(target.run_module, *job)
                   for job in (first, second, first, second)]
        assert ctx.call(target.fork_counts)['stayed'] >= before + 2
    assert [json.loads(out)['stdout'] for _, out, _ in answers] == [
        'one', 'two', 'one', 'two']


def test_a_warning_a_task_left_does_not_reach_the_next(ansible_bin,
                                                        tmp_path):
    """ansible-core keeps a module's warnings in a module global until the
    result is written: a process holding one leaves."""
    python = require_python('3.11')
    venv = os.path.dirname(ansible_bin)
    warns = record_script(venv, python, 'executable=/bin/sh /bin/true',
                          str(tmp_path / 'warns'))
    plain = record_script(venv, python, '/bin/true', str(tmp_path / 'plain'))
    with plasmid.Router() as router:
        ctx, *quiet = warm_context(router, python, plain)
        loud = add_script(ctx, warns)
        answers = [ctx.call(target.run_module, *job)
                   for job in (quiet, quiet, loud, quiet, quiet)]
    results = [json.loads(out) for _, out, _ in answers]
    assert [bool(r.get('warnings')) for r in results] == [
        False, False, True, False, False]


def test_a_job_the_broker_marks_not_to_stay_runs_in_a_fresh_fork(
        newest_ansible_bin, tmp_path):
    """What PLASMID_ANSIBLE_STAYING=off makes of every module job."""
    python = require_python('3.11')
    script = record_script(os.path.dirname(newest_ansible_bin), python,
                           '/bin/true', str(tmp_path / 'record'))
    with plasmid.Router() as router:
        ctx, digest, job = warm_context(router, python, script)
        job = dict(job, stay=False)
        before = ctx.call(target.fork_counts)
        for _ in range(3):
            assert ctx.call(target.run_module, digest, job)[0] == 0
        after = ctx.call(target.fork_counts)
    assert after['stayed'] == before['stayed']
    assert after['spare'] + after['fresh'] == \
        before['spare'] + before['fresh'] + 3
