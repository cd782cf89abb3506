"""The connection plugin's declared options against ansible-core's ssh
plugin, read by each release's own documentation loader."""
from __future__ import annotations

import json
import os
import subprocess

READ_OPTIONS = """
import json
from ansible.plugins.loader import (connection_loader, fragment_loader,
                                    init_plugin_loader)
from ansible.utils.plugin_docs import get_docstring
init_plugin_loader()
def options(name):
    doc = get_docstring(connection_loader.find_plugin(name),
                        fragment_loader)[0]
    return doc['options']
print(json.dumps({'ssh': options('ssh'),
                  'ours': options('plasmid.accel.ssh')}, default=str))
"""


def read_options(ansible_bin: str) -> dict:
    out = subprocess.run([os.path.join(ansible_bin, 'python'), '-c',
                          READ_OPTIONS], cwd='/',
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_ssh_args_default_compresses_like_vanilla(ansible_bin):
    """ssh's default ssh_args ask for compression (-C) besides its control
    master; ours keep the compression (the bytes on the wire depend on
    it) and drop the control master, which a kept interpreter needs not."""
    options = read_options(ansible_bin)
    vanilla = options['ssh']['ssh_args']['default'].split()
    ours = options['ours']['ssh_args']['default'].split()
    assert '-C' in vanilla
    assert ours == [w for w in vanilla if w == '-C']


def test_options_keep_vanillas_variable_names(ansible_bin):
    """An inventory written for ssh must work unchanged: every variable
    that sets one of our options sets the same option in ssh."""
    options = read_options(ansible_bin)
    for name, ours in options['ours'].items():
        theirs = options['ssh'].get(name)
        if theirs is None:
            continue
        ours_vars = {v['name'] for v in ours.get('vars', [])}
        their_vars = {v['name'] for v in theirs.get('vars', [])}
        assert ours_vars <= their_vars, name
