# The plasmid accelerator's docker connection plugin.  ansible-core reads
# the DOCUMENTATION below from this file's text to learn the plugin's
# options, so it is written out here; the behaviour lives in
# plasmid.ansible.container_connection.
from __future__ import annotations

DOCUMENTATION = r"""
name: docker
short_description: run in a running docker container, with persistent interpreters and modules run from RAM
description:
  - Runs tasks in a running container through the Docker CLI like
    C(community.docker.docker), but keeps one Python interpreter per container, account
    and interpreter path for the whole run, started through C(docker exec -i), and runs
    new-style Python modules in it from memory, forking it per task; files travel inside
    that interpreter's connection.
  - Becoming another user with sudo, su or doas happens once per run, not per task.
  - Option names and their variables are those of C(community.docker.docker), but
    C(container_timeout), which has no use here. A container without Python is handed to
    that plugin (the C(community.docker) collection must be installed then).
  - Pipelining is on by default, unlike C(community.docker.docker)'s.
author: plasmid developers
version_added: "0.1.0"
extends_documentation_fragment:
  - plasmid.accel.pipelining
options:
  remote_addr:
    description: The name or ID of the container.
    default: inventory_hostname
    type: string
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_docker_host
  remote_user:
    description: The user commands run as (C(docker exec --user)); unset, the container's own.
    type: string
    vars:
      - name: ansible_user
      - name: ansible_docker_user
    ini:
      - section: defaults
        key: remote_user
    env:
      - name: ANSIBLE_REMOTE_USER
    cli:
      - name: user
    keyword:
      - name: remote_user
  docker_extra_args:
    description: Extra arguments for the docker command line, before C(exec) (C(--context),
      C(--host)), separated by whitespace.
    type: string
    default: ''
    vars:
      - name: ansible_docker_extra_args
    ini:
      - section: docker_connection
        key: extra_cli_args
  extra_env:
    description: Environment variables for the container's interpreter and everything it
      runs (C(docker exec -e)); keys and values must be strings.
    type: dict
    vars:
      - name: ansible_docker_extra_env
  working_dir:
    description: The directory in the container that commands run in (C(docker exec -w)).
    type: string
    env:
      - name: ANSIBLE_DOCKER_WORKING_DIR
    ini:
      - key: working_dir
        section: docker_connection
    vars:
      - name: ansible_docker_working_dir
  privileged:
    description: Whether the interpreter, and so every command, runs with extended
      privileges (C(docker exec --privileged)).
    type: boolean
    default: false
    env:
      - name: ANSIBLE_DOCKER_PRIVILEGED
    ini:
      - key: privileged
        section: docker_connection
    vars:
      - name: ansible_docker_privileged
"""

from plasmid.ansible import docker_options, plugin_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, docker_options.OPTIONS)

from plasmid.ansible import container_connection  # noqa: E402


# ansible-core finds a plugin's options by its class's name: Connection.
class Connection(container_connection.DockerConnection):
    pass
