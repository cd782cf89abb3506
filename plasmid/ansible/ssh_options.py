# Generated from the DOCUMENTATION of
# ansible_collections/plasmid/accel/plugins/connection/ssh.py by
# `python -m plasmid.ansible.plugin_options`: edit that, then run
# this.  Why a copy: see plasmid/ansible/plugin_options.py.
OPTIONS = {'host': {'default': 'inventory_hostname',
          'description': 'Host name or address to connect to.',
          'type': 'string',
          'vars': [{'name': 'inventory_hostname'},
                   {'name': 'ansible_host'},
                   {'name': 'ansible_ssh_host'}]},
 'host_key_checking': {'default': True,
                       'description': 'Whether unknown host keys are '
                                      'refused.',
                       'env': [{'name': 'ANSIBLE_HOST_KEY_CHECKING'},
                               {'name': 'ANSIBLE_SSH_HOST_KEY_CHECKING'}],
                       'ini': [{'key': 'host_key_checking',
                                'section': 'defaults'},
                               {'key': 'host_key_checking',
                                'section': 'ssh_connection'}],
                       'type': 'boolean',
                       'vars': [{'name': 'ansible_host_key_checking'},
                                {'name': 'ansible_ssh_host_key_checking'}]},
 'password': {'description': "Password to type at ssh's prompt; without one, "
                             'ssh runs in batch mode.',
              'secret': True,
              'type': 'string',
              'vars': [{'name': 'ansible_password'},
                       {'name': 'ansible_ssh_pass'},
                       {'name': 'ansible_ssh_password'}]},
 'password_mechanism': {'choices': ['ssh_askpass', 'sshpass', 'disable'],
                        'default': 'ssh_askpass',
                        'description': ["How the password reaches ssh's "
                                        'prompt under '
                                        'C(ansible.builtin.ssh), whose '
                                        'choice this plugin follows so that '
                                        'a refused password is reported as '
                                        'there. The plugin always types the '
                                        'password itself (C(sshpass) is not '
                                        'needed).',
                                        'V(ssh_askpass) gives ssh one '
                                        "prompt, and a refusal is ssh's own "
                                        '"Permission denied"; V(sshpass) '
                                        'lets ssh prompt again, and a '
                                        'refusal reads "Invalid/incorrect '
                                        'password"; V(disable) types no '
                                        'password.',
                                        'On ansible-core 2.18, whose ssh '
                                        'plugin knows only sshpass, that is '
                                        'what it follows.'],
                        'env': [{'name': 'ANSIBLE_SSH_PASSWORD_MECHANISM'}],
                        'ini': [{'key': 'password_mechanism',
                                 'section': 'ssh_connection'}],
                        'type': 'string',
                        'vars': [{'name': 'ansible_ssh_password_mechanism'}]},
 'pipelining': {'default': True,
                'description': ['Pipelined modules run from memory in the '
                                "host's interpreter (the default, unlike "
                                "C(ansible.builtin.ssh)'s). Set false, and "
                                'modules travel as temp files and run from '
                                'disk, as under vanilla without pipelining, '
                                'with none of the in-memory speed.'],
                'env': [{'name': 'ANSIBLE_PIPELINING'},
                        {'name': 'ANSIBLE_SSH_PIPELINING'}],
                'ini': [{'key': 'pipelining', 'section': 'defaults'},
                        {'key': 'pipelining', 'section': 'connection'},
                        {'key': 'pipelining', 'section': 'ssh_connection'}],
                'type': 'boolean',
                'vars': [{'name': 'ansible_pipelining'},
                         {'name': 'ansible_ssh_pipelining'}]},
 'pkcs11_provider': {'default': '',
                     'description': ["A PKCS#11 library (a smartcard's, a "
                                     "token's) whose key ssh logs in with; "
                                     'the password is then its PIN, typed '
                                     'where ssh asks "Enter PIN for" unless '
                                     'O(sshpass_prompt) names other words.'],
                     'env': [{'name': 'ANSIBLE_PKCS11_PROVIDER'}],
                     'ini': [{'key': 'pkcs11_provider',
                              'section': 'ssh_connection'}],
                     'type': 'string',
                     'vars': [{'name': 'ansible_ssh_pkcs11_provider'}]},
 'port': {'description': 'Remote port sshd listens on.',
          'env': [{'name': 'ANSIBLE_REMOTE_PORT'}],
          'ini': [{'key': 'remote_port', 'section': 'defaults'}],
          'keyword': [{'name': 'port'}],
          'type': 'int',
          'vars': [{'name': 'ansible_port'}, {'name': 'ansible_ssh_port'}]},
 'private_key': {'description': ['The text of a private key in PEM format '
                                 '(not a file). On ansible-core 2.19 and '
                                 'later it is added to the ssh agent that '
                                 'the C(SSH_AGENT) setting names (or starts, '
                                 'with V(auto)) as C(ansible.builtin.ssh) '
                                 'adds it, and ssh logs in with that key '
                                 'only. C(private_key_file) is then not '
                                 'used. ansible-core 2.18 knows no such '
                                 'option, and it is ignored there as under '
                                 'vanilla.'],
                 'env': [{'name': 'ANSIBLE_PRIVATE_KEY'}],
                 'secret': True,
                 'type': 'string',
                 'vars': [{'name': 'ansible_private_key'},
                          {'name': 'ansible_ssh_private_key'}]},
 'private_key_file': {'cli': [{'name': 'private_key_file',
                               'option': '--private-key'}],
                      'description': 'Private key for public key '
                                     'authentication.',
                      'env': [{'name': 'ANSIBLE_PRIVATE_KEY_FILE'}],
                      'ini': [{'key': 'private_key_file',
                               'section': 'defaults'}],
                      'type': 'string',
                      'vars': [{'name': 'ansible_private_key_file'},
                               {'name': 'ansible_ssh_private_key_file'}]},
 'private_key_passphrase': {'description': 'The passphrase of '
                                           'C(private_key), if it has one.',
                            'env': [{'name': 'ANSIBLE_PRIVATE_KEY_PASSPHRASE'}],
                            'secret': True,
                            'type': 'string',
                            'vars': [{'name': 'ansible_private_key_passphrase'},
                                     {'name': 'ansible_ssh_private_key_passphrase'}]},
 'reconnection_retries': {'default': 0,
                          'description': ['How many times a login that fails '
                                          "as a connection (ssh's exit "
                                          'status 255) is tried again, '
                                          'pausing as C(ansible.builtin.ssh) '
                                          'does between its tries. A login '
                                          'is one per host, account and '
                                          'interpreter for the whole run, so '
                                          'a retry happens when one is first '
                                          'started or started again after it '
                                          'was lost, not per task.'],
                          'env': [{'name': 'ANSIBLE_SSH_RETRIES'}],
                          'ini': [{'key': 'retries', 'section': 'connection'},
                                  {'key': 'retries',
                                   'section': 'ssh_connection'}],
                          'type': 'integer',
                          'vars': [{'name': 'ansible_ssh_retries'}]},
 'remote_user': {'cli': [{'name': 'user'}],
                 'description': 'Account to log in with.',
                 'env': [{'name': 'ANSIBLE_REMOTE_USER'}],
                 'ini': [{'key': 'remote_user', 'section': 'defaults'}],
                 'keyword': [{'name': 'remote_user'}],
                 'type': 'string',
                 'vars': [{'name': 'ansible_user'},
                          {'name': 'ansible_ssh_user'}]},
 'ssh_args': {'default': '-C -o ControlMaster=auto -o ControlPersist=60s',
              'description': ['Arguments for every ssh command line. '
                              'ControlMaster, ControlPersist and ControlPath '
                              'options are dropped, since each interpreter '
                              'keeps its own ssh; they still decide what ssh '
                              "is said to print as a raw or script command's "
                              'session ends, as under the ssh plugin.',
                              "The default is the ssh plugin's (compression "
                              'and a control master).'],
              'env': [{'name': 'ANSIBLE_SSH_ARGS'}],
              'ini': [{'key': 'ssh_args', 'section': 'ssh_connection'}],
              'type': 'string',
              'vars': [{'name': 'ansible_ssh_args'}]},
 'ssh_common_args': {'cli': [{'name': 'ssh_common_args'}],
                     'default': '',
                     'description': 'Arguments added to ssh_args, usually '
                                    'per host or group.',
                     'env': [{'name': 'ANSIBLE_SSH_COMMON_ARGS'}],
                     'ini': [{'key': 'ssh_common_args',
                              'section': 'ssh_connection'}],
                     'type': 'string',
                     'vars': [{'name': 'ansible_ssh_common_args'}]},
 'ssh_executable': {'default': 'ssh',
                    'description': 'The ssh client to run.',
                    'env': [{'name': 'ANSIBLE_SSH_EXECUTABLE'}],
                    'ini': [{'key': 'ssh_executable',
                             'section': 'ssh_connection'}],
                    'type': 'string',
                    'vars': [{'name': 'ansible_ssh_executable'}]},
 'ssh_extra_args': {'cli': [{'name': 'ssh_extra_args'}],
                    'default': '',
                    'description': 'More arguments for ssh, usually from the '
                                   'command line.',
                    'env': [{'name': 'ANSIBLE_SSH_EXTRA_ARGS'}],
                    'ini': [{'key': 'ssh_extra_args',
                             'section': 'ssh_connection'}],
                    'type': 'string',
                    'vars': [{'name': 'ansible_ssh_extra_args'}]},
 'sshpass_prompt': {'default': '',
                    'description': ['Text of the password prompt; the '
                                    "password is typed where ssh's output "
                                    'contains it, as C(ansible.builtin.ssh) '
                                    'has C(sshpass) or its askpass helper '
                                    'watch for it.',
                                    'Empty (the default) types it at a '
                                    'prompt ending in "password:" or '
                                    '"passphrase:", or with '
                                    'O(pkcs11_provider) set, where ssh asks '
                                    '"Enter PIN for".'],
                    'env': [{'name': 'ANSIBLE_SSHPASS_PROMPT'}],
                    'ini': [{'key': 'sshpass_prompt',
                             'section': 'ssh_connection'}],
                    'type': 'string',
                    'vars': [{'name': 'ansible_sshpass_prompt'}]},
 'timeout': {'cli': [{'name': 'timeout'}],
             'default': 10,
             'description': 'Seconds to wait for the connection to be set '
                            'up.',
             'env': [{'name': 'ANSIBLE_TIMEOUT'},
                     {'name': 'ANSIBLE_SSH_TIMEOUT'}],
             'ini': [{'key': 'timeout', 'section': 'defaults'},
                     {'key': 'timeout', 'section': 'ssh_connection'}],
             'type': 'integer',
             'vars': [{'name': 'ansible_ssh_timeout'}]},
 'use_tty': {'default': True,
             'description': ['Run commands that get no input (C(raw), '
                             'C(script)) on a terminal, as '
                             'C(ansible.builtin.ssh) does with C(-tt), so '
                             'their output reads the same.'],
             'env': [{'name': 'ANSIBLE_SSH_USETTY'}],
             'ini': [{'key': 'usetty', 'section': 'ssh_connection'}],
             'type': 'bool',
             'vars': [{'name': 'ansible_ssh_use_tty'}]},
 'verbosity': {'default': 0,
               'description': 'How many C(-v) ssh gets, on ansible-core '
                              "2.19+ (2.18's ssh plugin has no such option, "
                              'so there it is left alone); what ssh then '
                              'writes goes into the unreachable message of a '
                              'login that fails, as under '
                              "C(ansible.builtin.ssh), and into the broker's "
                              'log.',
               'env': [{'name': 'ANSIBLE_SSH_VERBOSITY'}],
               'ini': [{'key': 'verbosity', 'section': 'ssh_connection'}],
               'type': 'int',
               'vars': [{'name': 'ansible_ssh_verbosity'}]}}
