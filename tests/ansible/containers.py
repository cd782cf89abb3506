"""What the container connections' tests share (podman, docker, kubectl,
lxc, and the takeover of a named connection): an inventory of one
container, and a playbook for a container without Python, whose results
ours must give as the collection's plugin does."""
from __future__ import annotations

from parity import assert_same


def container_inventory(container: str, connection: str,
                        extra: str = '') -> str:
    return ('[targets]\nbox ansible_host=%s ansible_connection=%s '
            'ansible_python_interpreter=/usr/bin/python3 %s\n'
            % (container, connection, extra))


NO_PYTHON = """
- hosts: targets
  gather_facts: false
  tasks:
    - name: raw, as to install a Python
      raw: id -un
    - name: a script
      script: hello.sh
    - name: a module, with no Python to run it
      command: /bin/true
      ignore_errors: true
    - name: raw still works
      raw: echo after
"""


MODULE_TASK = 'a module, with no Python to run it'
# What ansible-core says of a module whose interpreter is missing: the
# first where the command's exit status (127) came back, the second where
# kubectl, still writing the module to a shell that had exited, ended with
# its own status instead (a race in kubectl, vanilla's as much as ours).
INTERPRETER_MISSING = ("The module interpreter '/usr/bin/python3' was not "
                       "found.", 'Module result deserialization failed: No '
                       'start of json char found')


def assert_no_python_as_vanilla(vanilla, ours, racy_status=False,
                                pipelined=True) -> None:
    """NO_PYTHON's results, ours as the collection's plugin's; with
    *racy_status*, the module's failure in either of ansible-core's words
    (see INTERPRETER_MISSING).  *pipelined*: whether ours ran pipelined."""
    assert_same(vanilla, ours, (MODULE_TASK,) if racy_status else ())
    if racy_status:
        for run in (vanilla, ours):
            module = run.by_task()[('box', MODULE_TASK)]
            assert module['result']['msg'] in INTERPRETER_MISSING, module
    results = {r['task']: r for r in ours.results}
    assert results['raw, as to install a Python']['result']['stdout'] \
        .split() == ['root']
    assert 'script says hi' in results['a script']['result']['stdout']
    module = results[MODULE_TASK]
    assert module['status'] == 'failed', module
    assert results['raw still works']['status'] == 'ok'
    # The module was asked for, found no interpreter, and went as given
    # (unpipelined, it went to the collection's plugin as a file).
    assert ours.stats.get('modules_from_script', 0) == int(pipelined), \
        ours.stats
    assert ours.stats.get('module_runs', 0) == 0, ours.stats
    assert 'Traceback' not in ours.output
