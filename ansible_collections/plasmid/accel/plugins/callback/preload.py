# The accelerator's optional preload callback.  ansible-core reads the
# DOCUMENTATION below from this file's text; the behaviour lives in
# plasmid.ansible.preload.
from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: load the accelerator's connection plugins before workers fork; take ansible-core's connections
description:
  - ansible-playbook loads its builtin connection plugins before it forks a worker per task,
    never a collection's. Enabled, this callback loads plasmid's (C(plasmid.accel.ssh),
    C(plasmid.accel.local), C(plasmid.accel.podman), C(plasmid.accel.docker)) in
    ansible-playbook once, so that no worker imports them and reads their options again
    (a few milliseconds of controller CPU per task and host, which shows on tasks that
    do not touch the host, such as C(set_fact) and C(include_tasks)).
  - It also has the connections named in O(connections) load plasmid's plugin instead of
    ansible-core's or the collection's, where a play or an inventory names them
    (a play's C(connection) of C(local), the implicit C(localhost), C(ansible_connection=ssh)).
  - It shows nothing and changes no result. The C(plasmid.accel.linear) strategy does the
    same itself, reading O(connections) from here.
options:
  connections:
    description:
      - The connections whose tasks plasmid's plugins take. C(ssh) and C(local) mean
        ansible-core's own plugins as a play or an inventory names them in short; a short
        name that resolves to a plugin of your own is left to it. Write
        C(ansible.builtin.ssh) or C(ansible.builtin.local) in full where a host or play
        must keep vanilla's, or list those full names here too.
      - C(containers.podman.podman), C(community.docker.docker), C(kubernetes.core.kubectl)
        and C(community.general.lxc) go to C(plasmid.accel.podman), C(plasmid.accel.docker),
        C(plasmid.accel.kubectl) and C(plasmid.accel.lxc).
      - A name that ansible-core routes to one listed is taken as that one, as are C(docker),
        C(podman), C(kubectl) and C(lxc) (routed to the collections' plugins) and C(smart)
        (routed to C(ssh) since ansible-core 2.19).
      - An empty list takes none.
    type: list
    elements: str
    default: [ssh, local, containers.podman.podman, community.docker.docker, kubernetes.core.kubectl, community.general.lxc]
    choices: [ssh, ansible.builtin.ssh, local, ansible.builtin.local, containers.podman.podman, community.docker.docker, kubernetes.core.kubectl, community.general.lxc]
    env:
      - name: PLASMID_ACCEL_CONNECTIONS
    ini:
      - section: plasmid_accel
        key: connections
requirements:
  - enable it in callbacks_enabled (ANSIBLE_CALLBACKS_ENABLED)
author: plasmid developers
version_added: "0.1.0"
"""

from plasmid.ansible.preload import CallbackModule  # noqa: E402,F401
