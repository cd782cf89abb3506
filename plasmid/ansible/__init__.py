"""The Ansible accelerator: a connection plugin backed by plasmid contexts.

Only ``target`` is payload (it runs on targets); everything else here runs
on the Ansible controller.  See docs/architecture.md and docs/ansible.md.
"""
