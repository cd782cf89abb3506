"""The Ansible accelerator: connection plugins (ssh, local, podman, docker)
backed by plasmid contexts.

Only ``target`` and what it imports (``forks``, ``vfork``, ``warm``) are
payload, run in target contexts; everything else here runs on the Ansible
controller, and contexts are refused it (``master.modules.master_only``).
See docs/architecture.md and README.md ("The Ansible accelerator").
"""
