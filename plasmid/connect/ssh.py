"""A context on another machine, through the system OpenSSH client.

Using the real ``ssh`` keeps ``~/.ssh/config``, agents, ProxyJump and
known_hosts working as the user expects.  Without a password ssh runs in
batch mode, so a missing key fails fast instead of prompting; with one, ssh
gets a private pty to prompt on, and we answer there.
"""
from __future__ import absolute_import
import os
import re

from plasmid.connect.spawn import shell_command

TTY = None             # decided per connection: only with a password
# The core and BOOT travel in the remote command: ssh would forward them on
# stdin only once that command runs (spawn's docstring says why it matters).
CORE_IN_ARGV = True
# A prompt waits on its own line: nothing after its colon but spaces.  A
# line that ends in "password:" and a line break is someone's words (a
# banner, a start-up file), not a question ssh waits on.
PROMPT = re.compile(br'(?i)(password|passphrase)[^:\n]*:[ \t]*\Z')
# ssh's own failures (connection, authentication, host key) exit with this;
# any other status is the remote command's: the login worked, and what ran
# there ended before a Python said a word (spawn's NO_PYTHON).
OWN_FAILURE_STATUS = 255
REFUSALS = [
    (re.compile(br'(?i)are you sure you want to continue connecting'),
     'the host key is unknown: add it to known_hosts first'),
]


def default_name(spec):
    name = 'ssh.%s' % spec['hostname']
    if spec.get('port'):
        name += ':%s' % spec['port']
    return name


def wants_tty(spec):
    return spec.get('password') is not None


def given_option(ssh_args, name):
    """Whether *ssh_args* set option *name* (``-o Name=value``, ``-oName
    value`` and the like): ssh takes an option's first value, so one of
    ours placed before them would override it."""
    name = name.lower()
    return any(given == name for given, _, _ in _settings_of(ssh_args))


# ssh's one-letter options that take a value (OpenSSH 9): in "-lroot" or
# "-Cp22" the rest of the word is that value, not more options.
TAKES_VALUE = 'BbcDEeFIiJLlmOoPpQRSWw'
# What ssh would do instead of carrying the remote Python's stdin and
# stdout: each fails a start late or strangely (a wait for the whole
# connect_timeout, a "no route"), so it is refused before ssh runs.
REFUSED_FLAGS = {
    'f': 'sends ssh to the background, away from its pipes',
    'N': 'runs no remote command',
    'n': "closes ssh's input",
    's': 'runs a subsystem, not the remote command',
    'G': 'prints the configuration and exits',
    'V': 'prints the version and exits',
    'Q': 'prints what ssh supports and exits',
    'O': 'sends a command to a control master instead of logging in',
    'W': "forwards ssh's input to a port instead of the remote command",
}
REFUSED_SETTINGS = {  # -o Name=value, the name in lower case
    'requesttty': (('force',), 'forces a terminal, which garbles the '
                   'binary stream'),
    'forkafterauthentication': (('yes', 'true'), REFUSED_FLAGS['f']),
    'sessiontype': (('none', 'subsystem'), 'runs no remote command'),
    'stdinnull': (('yes', 'true'), REFUSED_FLAGS['n']),
    'remotecommand': (None, 'replaces the remote command'),
}


def _valued_options(ssh_args):
    """(letter, value) for each of *ssh_args*' options that take a value,
    in order: ``-p 22``, ``-p22``, ``-o Name=value`` (the value of one is
    never taken for an option); none after "--"."""
    words = list(ssh_args)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == '--':
            return
        if not word.startswith('-') or word.startswith('--'):
            continue
        for j, flag in enumerate(word[1:]):
            if flag in TAKES_VALUE:
                value = word[j + 2:]
                if not value and i < len(words):
                    value, i = words[i], i + 1
                yield flag, value
                break


def _setting(text):
    """``Name=value`` or ``Name value`` as (name in lower case, value)."""
    parts = re.split(r'\s*[\s=]\s*', text.strip(), 1)
    return parts[0].lower(), (parts[1:] or [''])[0].strip('"')


def _settings_of(ssh_args):
    """The (name, value, text) of *ssh_args*' ``-o`` options, name and
    value in lower case."""
    for flag, text in _valued_options(ssh_args):
        if flag == 'o':
            name, value = _setting(text)
            yield name, value.lower(), text


def first_value(ssh_args, name, letter=None):
    """The value ssh takes for its option *name* (``-o Name=value``) or
    the flag *letter* standing for it, if any (``-p 22``, ``-p22``): the
    first one given, quotes stripped, or None."""
    for flag, text in _valued_options(ssh_args):
        if flag == 'o':
            found, value = _setting(text)
            if found == name.lower() and value:
                return value
        elif flag == letter:
            return text.strip('"')
    return None


def refusal(ssh_args):
    """Why *ssh_args* cannot carry a context (a sentence), or None."""
    from plasmid.connect.options import flags  # the master's only
    terminals = 0
    for letter, word in flags(ssh_args, TAKES_VALUE):
        if letter in REFUSED_FLAGS:
            return '%s %s' % (word, REFUSED_FLAGS[letter])
        terminals += letter == 't'
    if terminals > 1:  # one -t asks only where ssh's input is a terminal
        return '-tt forces a terminal, which garbles the binary stream'
    for name, value, text in _settings_of(ssh_args):
        values, why = REFUSED_SETTINGS.get(name, ((), None))
        if why and (values is None and value != 'none' or
                    values and value in values):
            return '-o %s %s' % (text, why)
    return None


def keepalive_options(keepalive, ssh_args):
    """ssh's probes of a quiet connection, unless *ssh_args* set them.  A
    context's ssh lives as long as the context: a link that dies without a
    word (a host gone, a firewall forgetting the connection) would leave
    its calls waiting for ever.  With *keepalive* = (seconds, count), ssh
    gives up after *count* probes unanswered, and the calls fail with the
    context lost."""
    if not keepalive:
        return []
    interval, count = keepalive
    options = []
    if not given_option(ssh_args, 'ServerAliveInterval'):
        options += ['-o', 'ServerAliveInterval=%d' % interval]
    if not given_option(ssh_args, 'ServerAliveCountMax'):
        options += ['-o', 'ServerAliveCountMax=%d' % count]
    return options


def argv(spec, boot_argv):
    args = [spec.get('ssh_path') or 'ssh', '-T']
    if spec.get('port'):
        args += ['-p', str(spec['port'])]
    if spec.get('username'):
        args += ['-l', spec['username']]
    if spec.get('identity_file'):
        args += ['-i', os.path.expanduser(spec['identity_file'])]
    if spec.get('password') is None:
        args += ['-o', 'BatchMode=yes']
    given = spec.get('ssh_args') or []
    if spec.get('connect_timeout') and not given_option(given,
                                                        'ConnectTimeout'):
        args += ['-o', 'ConnectTimeout=%d' % max(1, spec['connect_timeout'])]
    args += keepalive_options(spec.get('keepalive'), given)
    args += list(given)
    args += [spec['hostname'], shell_command(boot_argv)]
    return args
