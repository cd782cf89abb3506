"""plasmid/ansible/vfork.py: run_command's umask-only preexec_fn goes,
anything else stays, and the command starts in the same state.

The first test runs each release's own AnsibleModule.run_command: a
release whose preexec_fn changes shape fails it loudly (the shortcut then
keeps the function: slower, still right).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from runner import run_probe

from testbed.pythons import require_python

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# What reaches the real Popen, with and without the shortcut, from each
# release's run_command.  The recorder sits under the shortcut.
RELEASE_PROBE = """
import json, subprocess, sys
sys.path.insert(0, %(root)r)
from ansible.module_utils import basic
basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': {}}).encode()
if hasattr(basic, '_ANSIBLE_PROFILE'):  # 2.19+
    basic._ANSIBLE_PROFILE = 'legacy'
module = basic.AnsibleModule(argument_spec={})
seen = []
real_init = subprocess.Popen.__init__
def recording_init(self, *args, **kwargs):
    seen.append({'preexec_fn': kwargs.get('preexec_fn') is not None,
                 'umask': kwargs.get('umask', -1)})
    real_init(self, *args, **kwargs)
subprocess.Popen.__init__ = recording_init

def run():
    return [module.run_command(['sh', '-c', 'umask'])[1].strip(),
            module.run_command(['sh', '-c', 'umask'], umask=0o027)[1].strip()]

vanilla = run()
from plasmid.ansible import vfork
vfork.install()
vfork.install()  # a second call must not wrap twice
shortcut = run()
print(json.dumps({'vanilla': vanilla, 'shortcut': shortcut, 'seen': seen}))
"""

# The same shape under the same name, compiled by the Python under test,
# with and without a body that does more.
SHAPES = """
import json, os, subprocess, sys
sys.path.insert(0, %(root)r)
from plasmid.ansible import vfork

class AnsibleModule(object):
    def run_command(self, umask, more=False):
        if more:
            def preexec():
                if umask:
                    os.umask(umask)
                os.environ['TOUCHED'] = '1'
                open(%(mark)r, 'w').close()
        else:
            def preexec():
                if umask:
                    os.umask(umask)
        kwargs = dict(preexec_fn=preexec, stdout=subprocess.PIPE)
        passed = vfork.popen_arguments(kwargs)
        out = subprocess.Popen(['sh', '-c', 'umask'], **passed).communicate()
        return {'kept': passed['preexec_fn'] is not None,
                'umask_arg': passed.get('umask'),
                'out': out[0].decode().strip()}

os.umask(0o022)
m = AnsibleModule()
print(json.dumps({'none': m.run_command(None), 'set': m.run_command(0o027),
                  'more': m.run_command(None, more=True),
                  'user': vfork.popen_arguments(
                      {'preexec_fn': os.setsid})['preexec_fn'] is not None}))
"""


def test_each_release_run_command_starts_without_preexec(ansible_bin):
    found = json.loads(run_probe(ansible_bin, RELEASE_PROBE % {'root': ROOT}))
    assert found['shortcut'] == found['vanilla'], found
    assert found['vanilla'][1] == '0027', found
    vanilla_calls, shortcut_calls = found['seen'][:2], found['seen'][2:]
    assert [c['preexec_fn'] for c in vanilla_calls] == [True, True], found
    # This release's run_command preexec is recognised: gone, and the
    # umask passed to Popen itself.
    assert shortcut_calls == [{'preexec_fn': False, 'umask': -1},
                              {'preexec_fn': False, 'umask': 0o027}], found


@pytest.mark.parametrize('version', ['3.6', '3.8', '3.9', '3.11', '3.13'])
def test_only_the_known_shape_goes(version, tmp_path):
    python = require_python(version)
    mark = str(tmp_path / 'ran')
    found = json.loads(subprocess.run(
        [python, '-c', SHAPES % {'root': ROOT, 'mark': mark}],
        cwd='/', check=True, capture_output=True, text=True).stdout)
    assert found['none'] == {'kept': False, 'umask_arg': None,
                             'out': '0022'}, found
    if version in ('3.6', '3.8'):  # Popen has no umask argument
        assert found['set'] == {'kept': True, 'umask_arg': None,
                                'out': '0027'}, found
    else:
        assert found['set'] == {'kept': False, 'umask_arg': 0o027,
                                'out': '0027'}, found
    assert found['more']['kept'], found
    assert os.path.exists(mark), 'the preexec_fn that does more did not run'
    assert found['user'], found


def test_python2_is_left_alone():
    python = require_python('2.7')
    out = subprocess.run(
        [python, '-c', 'import sys, subprocess; sys.path.insert(0, %r); '
         'from plasmid.ansible import vfork; before = subprocess.Popen.__init__; '
         'vfork.install(); print(subprocess.Popen.__init__ == before)' % ROOT],
        cwd='/', check=True, capture_output=True, text=True).stdout
    assert out.strip() == 'True'
