# The plasmid accelerator's podman connection plugin.  ansible-core reads
# the DOCUMENTATION below from this file's text to learn the plugin's
# options, so it is written out here; the behaviour lives in
# plasmid.ansible.container_connection.
from __future__ import annotations

DOCUMENTATION = r"""
name: podman
short_description: run in a running podman container, with persistent interpreters and modules run from RAM
description:
  - Runs tasks in a running podman container like C(containers.podman.podman), but keeps one
    Python interpreter per container, account and interpreter path for the whole run,
    started through C(podman exec -i), and runs new-style Python modules in it from memory,
    forking it per task; files travel inside that interpreter's connection.
  - Becoming another user with sudo, su or doas happens once per run, not per task.
  - Option names and their variables are those of C(containers.podman.podman). A container
    without Python is handed to that plugin (the C(containers.podman) collection must be
    installed then).
  - Pipelining is on by default; C(containers.podman.podman) cannot pipeline.
author: plasmid developers
version_added: "0.1.0"
extends_documentation_fragment:
  - plasmid.accel.pipelining
options:
  remote_addr:
    description:
      - The name or ID of the container.
      - The same variables as C(containers.podman.podman)'s, listed so that the last one
        set wins, as ansible-core reads them; that plugin takes C(ansible_host), else the
        inventory name, whatever its option says.
    default: inventory_hostname
    type: string
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_podman_host
  remote_user:
    description: The user (a name or UID the container knows) commands run as; unset, the
      container's own.
    type: string
    ini:
      - section: defaults
        key: remote_user
    env:
      - name: ANSIBLE_REMOTE_USER
    vars:
      - name: ansible_user
  podman_extra_args:
    description: Extra arguments for the podman command line, before C(exec) (C(--remote),
      C(--url), C(--root)).
    type: string
    default: ''
    ini:
      - section: defaults
        key: podman_extra_args
    vars:
      - name: ansible_podman_extra_args
    env:
      - name: ANSIBLE_PODMAN_EXTRA_ARGS
  podman_executable:
    description: The podman program, a path or a name looked up on PATH.
    type: string
    default: podman
    vars:
      - name: ansible_podman_executable
    env:
      - name: ANSIBLE_PODMAN_EXECUTABLE
"""

from plasmid.ansible import plugin_options, podman_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, podman_options.OPTIONS)

from plasmid.ansible import container_connection  # noqa: E402


# ansible-core finds a plugin's options by its class's name: Connection.
class Connection(container_connection.PodmanConnection):
    pass
