# The plasmid accelerator's kubectl connection plugin.  ansible-core reads
# the DOCUMENTATION below from this file's text to learn the plugin's
# options, so it is written out here; the behaviour lives in
# plasmid.ansible.container_connection.
from __future__ import annotations

DOCUMENTATION = r"""
name: kubectl
short_description: run in a container of a Kubernetes pod, with persistent interpreters and modules run from RAM
description:
  - Runs tasks in a container of a running pod like C(kubernetes.core.kubectl), but keeps one
    Python interpreter per pod, container and account for the whole run, started through
    C(kubectl exec -i), and runs new-style Python modules in it from memory, forking it per
    task; files travel inside that interpreter's connection, so the container needs no
    C(dd).
  - Becoming another user with sudo, su or doas happens once per run, not per task.
  - Option names and their variables are those of C(kubernetes.core.kubectl). A container
    without Python is handed to that plugin (the C(kubernetes.core) collection must be
    installed then).
author: plasmid developers
version_added: "0.1.0"
extends_documentation_fragment:
  - plasmid.accel.pipelining
options:
  kubectl_pod:
    description: The pod; empty, the host's address (C(ansible_host), else its inventory name).
    default: ''
    vars:
      - name: ansible_kubectl_pod
    env:
      - name: K8S_AUTH_POD
  kubectl_container:
    description: The container of the pod; empty, the one kubectl picks (the pod's default).
    default: ''
    vars:
      - name: ansible_kubectl_container
    env:
      - name: K8S_AUTH_CONTAINER
  kubectl_namespace:
    description: The pod's namespace; empty, the kubeconfig context's.
    default: ''
    vars:
      - name: ansible_kubectl_namespace
    env:
      - name: K8S_AUTH_NAMESPACE
  kubectl_extra_args:
    description: More arguments for kubectl, before C(exec), separated by whitespace. They
      show in the process list of the controller.
    default: ''
    vars:
      - name: ansible_kubectl_extra_args
    env:
      - name: K8S_AUTH_EXTRA_ARGS
  kubectl_local_env_vars:
    description: Environment variables for the kubectl program on the controller (not for
      the container), on top of the controller's own.
    default: {}
    type: dict
    vars:
      - name: ansible_kubectl_local_env_vars
  kubectl_kubeconfig:
    description:
      - The kubeconfig file kubectl reads (C(--kubeconfig)); empty, kubectl's own choice
        (C(KUBECONFIG), else C(~/.kube/config)).
      - Or the kubeconfig itself, as a dictionary, which is written to a file readable only
        by its owner for as long as kubectl starts, then removed.
    default: ''
    vars:
      - name: ansible_kubectl_kubeconfig
      - name: ansible_kubectl_config
    env:
      - name: K8S_AUTH_KUBECONFIG
  kubectl_context:
    description: The kubeconfig context to use (C(--context)).
    default: ''
    vars:
      - name: ansible_kubectl_context
    env:
      - name: K8S_AUTH_CONTEXT
  kubectl_host:
    description: The API server's URL (C(--server)).
    default: ''
    vars:
      - name: ansible_kubectl_host
      - name: ansible_kubectl_server
    env:
      - name: K8S_AUTH_HOST
      - name: K8S_AUTH_SERVER
  kubectl_username:
    description: The user name for the API server (C(--username)).
    default: ''
    vars:
      - name: ansible_kubectl_username
      - name: ansible_kubectl_user
    env:
      - name: K8S_AUTH_USERNAME
  kubectl_password:
    description: The password for the API server (C(--password)); it shows in the process
      list of the controller, so prefer a kubeconfig.
    default: ''
    vars:
      - name: ansible_kubectl_password
    env:
      - name: K8S_AUTH_PASSWORD
  kubectl_token:
    description: A bearer token for the API server (C(--token)); it shows in the process
      list of the controller, so prefer a kubeconfig.
    vars:
      - name: ansible_kubectl_token
      - name: ansible_kubectl_api_key
    env:
      - name: K8S_AUTH_TOKEN
      - name: K8S_AUTH_API_KEY
  client_cert:
    description: The client certificate file (C(--client-certificate)).
    default: ''
    vars:
      - name: ansible_kubectl_cert_file
      - name: ansible_kubectl_client_cert
    env:
      - name: K8S_AUTH_CERT_FILE
    aliases: [kubectl_cert_file]
  client_key:
    description: The client key file (C(--client-key)).
    default: ''
    vars:
      - name: ansible_kubectl_key_file
      - name: ansible_kubectl_client_key
    env:
      - name: K8S_AUTH_KEY_FILE
    aliases: [kubectl_key_file]
  ca_cert:
    description: The certificate authority file for the API server's certificate
      (C(--certificate-authority)).
    default: ''
    vars:
      - name: ansible_kubectl_ssl_ca_cert
      - name: ansible_kubectl_ca_cert
    env:
      - name: K8S_AUTH_SSL_CA_CERT
    aliases: [kubectl_ssl_ca_cert]
  validate_certs:
    description: Whether the API server's certificate is checked; false gives
      C(--insecure-skip-tls-verify=true); empty, kubectl's own choice.
    default: ''
    vars:
      - name: ansible_kubectl_verify_ssl
      - name: ansible_kubectl_validate_certs
    env:
      - name: K8S_AUTH_VERIFY_SSL
    aliases: [kubectl_verify_ssl]
"""

from plasmid.ansible import kubectl_options, plugin_options  # noqa: E402

# Before ansible-core parses DOCUMENTATION itself, which costs every forked
# worker ~10 ms more (see plasmid/ansible/plugin_options.py).
plugin_options.register('connection', __name__, kubectl_options.OPTIONS)

from plasmid.ansible import container_connection  # noqa: E402


# ansible-core finds a plugin's options by its class's name: Connection.
class Connection(container_connection.KubectlConnection):
    pass
