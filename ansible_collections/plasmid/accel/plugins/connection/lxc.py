# The plasmid accelerator's LXC connection plugin.  ansible-core reads
# the DOCUMENTATION below from this file's text to learn the plugin's
# options, so it is written out here; the behaviour lives in
# plasmid.ansible.container_connection.
from __future__ import annotations

DOCUMENTATION = r"""
name: lxc
short_description: run in a running LXC container, with a persistent interpreter and modules run from RAM
description:
  - Runs tasks in a running LXC container of this machine like C(community.general.lxc), as
    the container's root, but keeps one Python interpreter per container for the whole run,
    started through C(lxc-attach --clear-env), and runs new-style Python modules in it from
    memory, forking it per task; files travel inside that interpreter's connection.
  - Needs the C(lxc-attach) program, not the python lxc bindings. Becoming another user with
    sudo, su or doas happens once per run, not per task.
  - Option names and their variables are those of C(community.general.lxc). A container
    without Python is handed to that plugin (the C(community.general) collection and the
    python lxc bindings must be installed then).
author: plasmid developers
version_added: "0.1.0"
extends_documentation_fragment:
  - plasmid.accel.pipelining
options:
  remote_addr:
    description:
      - The name of the container.
      - The same variables as C(community.general.lxc)'s, listed so that the last one set
        wins, as ansible-core reads them.
    default: inventory_hostname
    type: string
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_lxc_host
  executable:
    description: The shell that runs each command with C(-c), as that plugin runs it.
    default: /bin/sh
    type: string
    vars:
      - name: ansible_executable
      - name: ansible_lxc_executable
"""

from plasmid.ansible import lxc_options, plugin_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, lxc_options.OPTIONS)

from plasmid.ansible import container_connection  # noqa: E402


# ansible-core finds a plugin's options by its class's name: Connection.
class Connection(container_connection.LxcConnection):
    pass
