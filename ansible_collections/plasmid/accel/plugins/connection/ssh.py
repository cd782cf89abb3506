# The plasmid accelerator's connection plugin.  ansible-core reads the
# DOCUMENTATION below from this file's text to learn the plugin's options,
# so it is written out here; the behaviour lives in plasmid.ansible.
from __future__ import annotations

DOCUMENTATION = r"""
name: ssh
short_description: ssh with persistent interpreters and modules run from RAM
description:
  - Connects with the system OpenSSH client like C(ansible.builtin.ssh), but keeps
    one Python interpreter per host, account and interpreter path for the whole run
    and runs new-style Python modules in it from memory, forking it per task.
  - Becoming another user with sudo or su happens once per run, not per task. Other
    become methods run their commands exactly as given, through the login account's
    shell.
  - Option names and their variables are those of C(ansible.builtin.ssh).
author: plasmid developers
version_added: "0.1.0"
options:
  host:
    description: Host name or address to connect to.
    default: inventory_hostname
    type: string
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_ssh_host
  port:
    description: Remote port sshd listens on.
    type: int
    ini:
      - section: defaults
        key: remote_port
    env:
      - name: ANSIBLE_REMOTE_PORT
    vars:
      - name: ansible_port
      - name: ansible_ssh_port
    keyword:
      - name: port
  remote_user:
    description: Account to log in with.
    type: string
    ini:
      - section: defaults
        key: remote_user
    env:
      - name: ANSIBLE_REMOTE_USER
    vars:
      - name: ansible_user
      - name: ansible_ssh_user
    cli:
      - name: user
    keyword:
      - name: remote_user
  password:
    description: Password to type at ssh's prompt; without one, ssh runs in batch mode.
    type: string
    secret: true
    vars:
      - name: ansible_password
      - name: ansible_ssh_pass
      - name: ansible_ssh_password
  password_mechanism:
    description:
      - How the password reaches ssh's prompt under C(ansible.builtin.ssh), whose choice this
        plugin follows so that a refused password is reported as there. The plugin always types
        the password itself (C(sshpass) is not needed).
      - V(ssh_askpass) gives ssh one prompt, and a refusal is ssh's own "Permission denied";
        V(sshpass) lets ssh prompt again, and a refusal reads "Invalid/incorrect password";
        V(disable) types no password.
      - On ansible-core 2.18, whose ssh plugin knows only sshpass, that is what it follows.
    type: string
    default: ssh_askpass
    choices: [ssh_askpass, sshpass, disable]
    env:
      - name: ANSIBLE_SSH_PASSWORD_MECHANISM
    ini:
      - section: ssh_connection
        key: password_mechanism
    vars:
      - name: ansible_ssh_password_mechanism
  sshpass_prompt:
    description:
      - Text of the password prompt; the password is typed where ssh's output contains it,
        as C(ansible.builtin.ssh) has C(sshpass) or its askpass helper watch for it.
      - Empty (the default) types it at a prompt ending in "password:" or "passphrase:", or
        with O(pkcs11_provider) set, where ssh asks "Enter PIN for".
    type: string
    default: ''
    ini:
      - section: ssh_connection
        key: sshpass_prompt
    env:
      - name: ANSIBLE_SSHPASS_PROMPT
    vars:
      - name: ansible_sshpass_prompt
  private_key_file:
    description: Private key for public key authentication.
    type: string
    ini:
      - section: defaults
        key: private_key_file
    env:
      - name: ANSIBLE_PRIVATE_KEY_FILE
    vars:
      - name: ansible_private_key_file
      - name: ansible_ssh_private_key_file
    cli:
      - name: private_key_file
        option: '--private-key'
  private_key:
    description:
      - The text of a private key in PEM format (not a file). On ansible-core 2.19 and
        later it is added to the ssh agent that the C(SSH_AGENT) setting names (or starts, with
        V(auto)) as C(ansible.builtin.ssh) adds it, and ssh logs in with that key only.
        C(private_key_file) is then not used. ansible-core 2.18 knows no such option, and
        it is ignored there as under vanilla.
    type: string
    secret: true
    env:
      - name: ANSIBLE_PRIVATE_KEY
    vars:
      - name: ansible_private_key
      - name: ansible_ssh_private_key
  private_key_passphrase:
    description: The passphrase of C(private_key), if it has one.
    type: string
    secret: true
    env:
      - name: ANSIBLE_PRIVATE_KEY_PASSPHRASE
    vars:
      - name: ansible_private_key_passphrase
      - name: ansible_ssh_private_key_passphrase
  host_key_checking:
    description: Whether unknown host keys are refused.
    type: boolean
    default: true
    ini:
      - section: defaults
        key: host_key_checking
      - section: ssh_connection
        key: host_key_checking
    env:
      - name: ANSIBLE_HOST_KEY_CHECKING
      - name: ANSIBLE_SSH_HOST_KEY_CHECKING
    vars:
      - name: ansible_host_key_checking
      - name: ansible_ssh_host_key_checking
  ssh_args:
    description:
      - Arguments for every ssh command line. ControlMaster, ControlPersist and
        ControlPath options are dropped, since each interpreter keeps its own ssh;
        they still decide what ssh is said to print as a raw or script command's
        session ends, as under the ssh plugin.
      - The default is the ssh plugin's (compression and a control master).
    type: string
    default: '-C -o ControlMaster=auto -o ControlPersist=60s'
    ini:
      - section: ssh_connection
        key: ssh_args
    env:
      - name: ANSIBLE_SSH_ARGS
    vars:
      - name: ansible_ssh_args
  ssh_common_args:
    description: Arguments added to ssh_args, usually per host or group.
    type: string
    default: ''
    ini:
      - section: ssh_connection
        key: ssh_common_args
    env:
      - name: ANSIBLE_SSH_COMMON_ARGS
    vars:
      - name: ansible_ssh_common_args
    cli:
      - name: ssh_common_args
  ssh_extra_args:
    description: More arguments for ssh, usually from the command line.
    type: string
    default: ''
    ini:
      - section: ssh_connection
        key: ssh_extra_args
    env:
      - name: ANSIBLE_SSH_EXTRA_ARGS
    vars:
      - name: ansible_ssh_extra_args
    cli:
      - name: ssh_extra_args
  ssh_executable:
    description: The ssh client to run.
    type: string
    default: ssh
    ini:
      - section: ssh_connection
        key: ssh_executable
    env:
      - name: ANSIBLE_SSH_EXECUTABLE
    vars:
      - name: ansible_ssh_executable
  pipelining:
    description:
      - Pipelined modules run from memory in the host's interpreter (the default, unlike
        C(ansible.builtin.ssh)'s). Set false, and modules travel as temp files and run
        from disk, as under vanilla without pipelining, with none of the in-memory speed.
    type: boolean
    default: true
    ini:
      - section: defaults
        key: pipelining
      - section: connection
        key: pipelining
      - section: ssh_connection
        key: pipelining
    env:
      - name: ANSIBLE_PIPELINING
      - name: ANSIBLE_SSH_PIPELINING
    vars:
      - name: ansible_pipelining
      - name: ansible_ssh_pipelining
  reconnection_retries:
    description:
      - How many times a login that fails as a connection (ssh's exit status 255) is
        tried again, pausing as C(ansible.builtin.ssh) does between its tries. A login
        is one per host, account and interpreter for the whole run, so a retry happens
        when one is first started or started again after it was lost, not per task.
    type: integer
    default: 0
    env:
      - name: ANSIBLE_SSH_RETRIES
    ini:
      - section: connection
        key: retries
      - section: ssh_connection
        key: retries
    vars:
      - name: ansible_ssh_retries
  use_tty:
    description:
      - Run commands that get no input (C(raw), C(script)) on a terminal, as
        C(ansible.builtin.ssh) does with C(-tt), so their output reads the same.
    type: bool
    default: true
    ini:
      - section: ssh_connection
        key: usetty
    env:
      - name: ANSIBLE_SSH_USETTY
    vars:
      - name: ansible_ssh_use_tty
  pkcs11_provider:
    description:
      - A PKCS#11 library (a smartcard's, a token's) whose key ssh logs in with; the password
        is then its PIN, typed where ssh asks "Enter PIN for" unless O(sshpass_prompt) names
        other words.
    type: string
    default: ''
    env:
      - name: ANSIBLE_PKCS11_PROVIDER
    ini:
      - section: ssh_connection
        key: pkcs11_provider
    vars:
      - name: ansible_ssh_pkcs11_provider
  verbosity:
    description: How many C(-v) ssh gets, on ansible-core 2.19+ (2.18's ssh plugin has no
      such option, so there it is left alone); what ssh then writes goes into the
      unreachable message of a login that fails, as under C(ansible.builtin.ssh), and into
      the broker's log.
    type: int
    default: 0
    env:
      - name: ANSIBLE_SSH_VERBOSITY
    ini:
      - section: ssh_connection
        key: verbosity
    vars:
      - name: ansible_ssh_verbosity
  timeout:
    description: Seconds to wait for the connection to be set up.
    type: integer
    default: 10
    ini:
      - section: defaults
        key: timeout
      - section: ssh_connection
        key: timeout
    env:
      - name: ANSIBLE_TIMEOUT
      - name: ANSIBLE_SSH_TIMEOUT
    vars:
      - name: ansible_ssh_timeout
    cli:
      - name: timeout
"""

from plasmid.ansible import plugin_options, ssh_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, ssh_options.OPTIONS)

from plasmid.ansible.connection import Connection  # noqa: E402,F401
