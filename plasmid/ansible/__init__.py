"""The Ansible accelerator: connection plugins (ssh, local, podman, docker,
kubectl, lxc) backed by plasmid contexts.

Only the modules ``master.finder.ANSIBLE_PAYLOAD`` names (``target``,
``chores``, ``shell_spawn``, ``forks``, ``baseline``, ``vfork``, ``warm``)
are payload, run in target contexts; everything else here runs on the
Ansible controller, and contexts are refused it (``master_only``).
See docs/architecture.md and README.md ("The Ansible accelerator").
"""
