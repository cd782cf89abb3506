# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/kubectl.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'ca_cert': {'aliases': ['kubectl_ssl_ca_cert'],
             'default': '',
             'description': 'The certificate authority file for the API '
                            "server's certificate "
                            '(C(--certificate-authority)).',
             'env': [{'name': 'K8S_AUTH_SSL_CA_CERT'}],
             'vars': [{'name': 'ansible_kubectl_ssl_ca_cert'},
                      {'name': 'ansible_kubectl_ca_cert'}]},
 'client_cert': {'aliases': ['kubectl_cert_file'],
                 'default': '',
                 'description': 'The client certificate file '
                                '(C(--client-certificate)).',
                 'env': [{'name': 'K8S_AUTH_CERT_FILE'}],
                 'vars': [{'name': 'ansible_kubectl_cert_file'},
                          {'name': 'ansible_kubectl_client_cert'}]},
 'client_key': {'aliases': ['kubectl_key_file'],
                'default': '',
                'description': 'The client key file (C(--client-key)).',
                'env': [{'name': 'K8S_AUTH_KEY_FILE'}],
                'vars': [{'name': 'ansible_kubectl_key_file'},
                         {'name': 'ansible_kubectl_client_key'}]},
 'kubectl_container': {'default': '',
                       'description': 'The container of the pod; empty, the '
                                      "one kubectl picks (the pod's "
                                      'default).',
                       'env': [{'name': 'K8S_AUTH_CONTAINER'}],
                       'vars': [{'name': 'ansible_kubectl_container'}]},
 'kubectl_context': {'default': '',
                     'description': 'The kubeconfig context to use '
                                    '(C(--context)).',
                     'env': [{'name': 'K8S_AUTH_CONTEXT'}],
                     'vars': [{'name': 'ansible_kubectl_context'}]},
 'kubectl_extra_args': {'default': '',
                        'description': 'More arguments for kubectl, before '
                                       'C(exec), separated by whitespace. '
                                       'They show in the process list of the '
                                       'controller.',
                        'env': [{'name': 'K8S_AUTH_EXTRA_ARGS'}],
                        'vars': [{'name': 'ansible_kubectl_extra_args'}]},
 'kubectl_host': {'default': '',
                  'description': "The API server's URL (C(--server)).",
                  'env': [{'name': 'K8S_AUTH_HOST'},
                          {'name': 'K8S_AUTH_SERVER'}],
                  'vars': [{'name': 'ansible_kubectl_host'},
                           {'name': 'ansible_kubectl_server'}]},
 'kubectl_kubeconfig': {'default': '',
                        'description': ['The kubeconfig file kubectl reads '
                                        "(C(--kubeconfig)); empty, kubectl's "
                                        'own choice (C(KUBECONFIG), else '
                                        'C(~/.kube/config)).',
                                        'Or the kubeconfig itself, as a '
                                        'dictionary, which is written to a '
                                        'file readable only by its owner for '
                                        'as long as kubectl starts, then '
                                        'removed.'],
                        'env': [{'name': 'K8S_AUTH_KUBECONFIG'}],
                        'vars': [{'name': 'ansible_kubectl_kubeconfig'},
                                 {'name': 'ansible_kubectl_config'}]},
 'kubectl_local_env_vars': {'default': {},
                            'description': 'Environment variables for the '
                                           'kubectl program on the '
                                           'controller (not for the '
                                           'container), on top of the '
                                           "controller's own.",
                            'type': 'dict',
                            'vars': [{'name': 'ansible_kubectl_local_env_vars'}]},
 'kubectl_namespace': {'default': '',
                       'description': "The pod's namespace; empty, the "
                                      "kubeconfig context's.",
                       'env': [{'name': 'K8S_AUTH_NAMESPACE'}],
                       'vars': [{'name': 'ansible_kubectl_namespace'}]},
 'kubectl_password': {'default': '',
                      'description': 'The password for the API server '
                                     '(C(--password)); it shows in the '
                                     'process list of the controller, so '
                                     'prefer a kubeconfig.',
                      'env': [{'name': 'K8S_AUTH_PASSWORD'}],
                      'vars': [{'name': 'ansible_kubectl_password'}]},
 'kubectl_pod': {'default': '',
                 'description': "The pod; empty, the host's address "
                                '(C(ansible_host), else its inventory name).',
                 'env': [{'name': 'K8S_AUTH_POD'}],
                 'vars': [{'name': 'ansible_kubectl_pod'}]},
 'kubectl_token': {'description': 'A bearer token for the API server '
                                  '(C(--token)); it shows in the process '
                                  'list of the controller, so prefer a '
                                  'kubeconfig.',
                   'env': [{'name': 'K8S_AUTH_TOKEN'},
                           {'name': 'K8S_AUTH_API_KEY'}],
                   'vars': [{'name': 'ansible_kubectl_token'},
                            {'name': 'ansible_kubectl_api_key'}]},
 'kubectl_username': {'default': '',
                      'description': 'The user name for the API server '
                                     '(C(--username)).',
                      'env': [{'name': 'K8S_AUTH_USERNAME'}],
                      'vars': [{'name': 'ansible_kubectl_username'},
                               {'name': 'ansible_kubectl_user'}]},
 'pipelining': {'default': True,
                'description': ['Pipelined modules run from memory in the '
                                'interpreter (the default). Set false, and '
                                'modules travel as temp files and run from '
                                'disk, as under vanilla without pipelining, '
                                'with none of the in-memory speed.'],
                'env': [{'name': 'ANSIBLE_PIPELINING'}],
                'ini': [{'key': 'pipelining', 'section': 'defaults'},
                        {'key': 'pipelining', 'section': 'connection'}],
                'type': 'boolean',
                'vars': [{'name': 'ansible_pipelining'}]},
 'validate_certs': {'aliases': ['kubectl_verify_ssl'],
                    'default': '',
                    'description': "Whether the API server's certificate is "
                                   'checked; false gives '
                                   'C(--insecure-skip-tls-verify=true); '
                                   "empty, kubectl's own choice.",
                    'env': [{'name': 'K8S_AUTH_VERIFY_SSL'}],
                    'vars': [{'name': 'ansible_kubectl_verify_ssl'},
                             {'name': 'ansible_kubectl_validate_certs'}]}}
