# The pipelining option that the accelerator's container and local
# connection plugins share (plasmid.accel.ssh documents its own: it also
# answers to the ssh plugin's variables and ini section).  A plugin names it
# with ``extends_documentation_fragment: plasmid.accel.pipelining``;
# ansible-core and plasmid.ansible.plugin_options merge it in.
from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  pipelining:
    description:
      - Pipelined modules run from memory in the interpreter (the default). Set false, and
        modules travel as temp files and run from disk, as under vanilla without pipelining,
        with none of the in-memory speed.
    type: boolean
    default: true
    ini:
      - section: defaults
        key: pipelining
      - section: connection
        key: pipelining
    env:
      - name: ANSIBLE_PIPELINING
    vars:
      - name: ansible_pipelining
"""
