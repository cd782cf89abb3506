"""Take apart the command lines ansible-core hands a connection.

Every ``exec_command`` gets one string built by the shell and become
plugins, for instance::

    /bin/sh -c 'sudo -H -S -n  -u root /bin/sh -c '"'"'echo BECOME-SUCCESS-x ;
      LANG=C.UTF-8 LC_ALL=C.UTF-8 /usr/bin/python3'"'"' && sleep 0'

We peel it back to the command the become wrapper runs (``LANG=...
/usr/bin/python3``) so it can run in a context that already is the become
user, and, for a pipelined module, to its environment and interpreter.
A string of any other shape gives None: the connection then runs it as it
is, through ``/bin/sh`` on the target, exactly as vanilla ssh would.
"""
from __future__ import annotations

import re
import shlex
from typing import Optional

# Patterns here and in payload.py are strings, compiled on first use
# (:func:`compiled`): a worker forked for one task uses two or three of
# them, and compiling all at import cost it ~2 ms of CPU.  A process that
# forks workers after loading the plugin (the preload callback, the
# strategy) compiles them once itself (:func:`compile_patterns`), so that
# no worker does.
_SLEEP = r'\s*&&\s*sleep 0\s*$'
_ASSIGNMENT = r'^[A-Za-z_][A-Za-z0-9_]*='
_COMPILED: dict[str | bytes, re.Pattern] = {}


def compiled(pattern: str | bytes) -> re.Pattern:
    """*pattern* compiled, once per process (and its forks)."""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(pattern)
    return found


def compile_patterns(patterns: tuple = ()) -> None:
    """Compile the patterns a task's command goes through, and
    *patterns*, for the workers this process will fork."""
    for pattern in TASK_PATTERNS + tuple(patterns):
        compiled(pattern)


class Command:
    """A command line taken apart.  (Plain classes, not dataclasses, here
    and in payload.py: workers import these once per task.)"""
    __slots__ = ('shell', 'text', 'become', 'env', 'interpreter',
                 'become_runs')

    def __init__(self, shell: str, text: str, become: bool,
                 env: Optional[dict] = None,
                 interpreter: Optional[str] = None,
                 become_runs: Optional[list] = None) -> None:
        self.shell = shell              # the shell ansible asked for
        self.text = text                # what runs, become wrapper removed
        self.become = become            # did the become wrapper surround it?
        self.env = env                  # for a bare interpreter only,
        self.interpreter = interpreter  # ... like ``LANG=C python3``
        # The words the become program runs: ``[sh, '-c', 'echo <success>
        # ; CMD']`` (sudo names them in SUDO_COMMAND).
        self.become_runs = become_runs

    def __repr__(self) -> str:
        return 'Command(%r, become=%r, env=%r, interpreter=%r)' % (
            self.text, self.become, self.env, self.interpreter)


def parse(cmd: str, success: Optional[str]) -> Optional[Command]:
    """*success*: the become plugin's marker when become applies, else
    None."""
    words = _split(cmd)
    if words is None or len(words) != 3 or words[1] != '-c':
        return None
    shell, inner = words[0], compiled(_SLEEP).sub('', words[2])
    become = False
    become_runs = None
    if success:
        unwrapped = _unwrap_become(inner, success)
        if unwrapped is None:
            return None
        inner, become_runs = unwrapped
        become = True
    command = Command(shell=shell, text=inner, become=become,
                      become_runs=become_runs)
    env, interpreter = _bare_interpreter(inner)
    if interpreter is not None:
        command.env, command.interpreter = env, interpreter
    return command


def _unwrap_become(text: str, success: str,
                   depth: int = 0) -> Optional[tuple[str, list]]:
    """``<become> <sh> -c 'echo <success> ; CMD'`` -> (CMD, the last
    three words); su adds one more level: ``su <user> -c '<sh> -c ...'``."""
    words = _split(compiled(_SLEEP).sub('', text))
    if words is None or len(words) < 3 or words[-2] != '-c':
        return None
    echo = 'echo %s ; ' % success
    if words[-1].startswith(echo):
        return compiled(_SLEEP).sub('', words[-1][len(echo):]), words[-3:]
    if depth == 0:
        return _unwrap_become(words[-1], success, 1)
    return None


def _bare_interpreter(text: str) -> tuple[dict, Optional[str]]:
    """``A=1 B=2 /usr/bin/python3`` -> ({'A': '1', 'B': '2'},
    '/usr/bin/python3'); anything else -> ({}, None)."""
    written, words = _words_as_written(text), _split(text)
    if not written or words is None or len(written) != len(words):
        return {}, None
    # An assignment as sh sees one: its name unquoted, as written.
    assigned = [compiled(_ASSIGNMENT).match(word) for word in written]
    if not all(assigned[:-1]) or assigned[-1]:
        return {}, None
    env = dict(word.split('=', 1) for word in words[:-1])
    return env, words[-1]


# What sh reads as more than a word's text outside quotes: separators,
# redirections, expansions, globs, braces (bash), a comment, and the line
# ends shlex takes for spaces.
_SPECIAL = ';&|<>()$`*?[]{}~#\n\r'


def _words_as_written(text: str) -> Optional[list]:
    """*text* cut into words where sh cuts it, each as written (quotes
    and all), or None where sh would read more than words: a special
    character outside quotes, an expansion or a backslash inside double
    quotes (shlex and sh read those differently), a line continued.
    ansible-core's quoting (shlex.quote) puts a value in single quotes,
    with its own single quotes between double ones."""
    words, word, quote = [], '', None
    chars = iter(text)
    for char in chars:
        if quote == "'":
            quote = None if char == "'" else quote
        elif quote == '"':
            if char in '$`\\':
                return None
            quote = None if char == '"' else quote
        elif char == '\\':
            following = next(chars, '\n')
            if following == '\n':
                return None
            char += following
        elif char in '\'"':
            quote = char
        elif char in ' \t':
            if word:
                words.append(word)
            word = ''
            continue
        elif char in _SPECIAL:
            return None
        word += char
    if quote is not None:
        return None
    return words + [word] if word else words


def _split(text: str) -> Optional[list]:
    try:
        return shlex.split(text)
    except ValueError:
        return None


# ------------------------------------------------ housekeeping commands
#
# ActionBase surrounds some modules with commands whose output it can
# predict or does not need: finding a home directory, making the task's
# temp dir, removing it.  The shell plugin spells them the same way in
# every supported release; recognising them lets the broker answer the
# first from a cache and send the others ahead without waiting, and the
# context do those with system calls instead of a shell (chores.py).

_HOME = r'^echo ~[A-Za-z0-9_.-]*$'
_MKDTEMP = (
    r'^\( umask 77 && mkdir -p "` echo (?P<base>[^`"]+) `"&& '
    r'mkdir "` echo (?P=base)/(?P<name>ansible-tmp-[\w.-]+) `" && '
    r'echo (?P=name)="` echo (?P=base)/(?P=name) `" \)$')
_CLEANUP = r'^rm -f -r (?P<path>[\w./~-]+) > /dev/null 2>&1$'
# Making the task's own files readable or executable by their owner, the
# login user: it cannot fail where the files could be written.
_CHMOD_OWN = (r'^chmod u\+[rwx]+( [\w./~-]*/ansible-tmp-[\w.-]+/'
              r'[\w./-]*)+$')
_PLAIN_PATH = r'^(~|~/[\w./-]*|/[\w./-]*)$'


_OWNER_BITS = {'r': 0o400, 'w': 0o200, 'x': 0o100}
TASK_PATTERNS = (_SLEEP, _ASSIGNMENT, _HOME, _MKDTEMP, _CLEANUP, _CHMOD_OWN,
                 _PLAIN_PATH)


class Housekeeping:
    __slots__ = ('kind', 'base', 'name', 'paths', 'bits')

    def __init__(self, kind: str, base: str = '', name: str = '',
                 paths: tuple = (), bits: int = 0) -> None:
        # 'home', 'mkdtemp', 'cleanup' (its failure only a warning in
        # vanilla) or 'later' (output unread, failure an error)
        self.kind = kind
        self.base = base  # mkdtemp: the directory it is made in
        self.name = name  # mkdtemp: the new directory's name
        self.paths = paths  # cleanup: the dir; later: the files chmod'ed
        self.bits = bits    # later: the mode bits ``chmod u+...`` adds

    def __repr__(self) -> str:
        return 'Housekeeping(%r, %r, %r, %r, %o)' % (
            self.kind, self.base, self.name, self.paths, self.bits)


def housekeeping(text: str) -> Optional[Housekeeping]:
    """Recognise a command from the list above, else None."""
    if compiled(_HOME).match(text):
        return Housekeeping('home')
    match = compiled(_MKDTEMP).match(text)
    if match and compiled(_PLAIN_PATH).match(match.group('base')):
        return Housekeeping('mkdtemp', match.group('base'),
                            match.group('name'))
    match = compiled(_CLEANUP).match(text)
    if match:
        return Housekeeping('cleanup', paths=(match.group('path'),))
    if compiled(_CHMOD_OWN).match(text):
        words = text.split(' ')
        bits = sum(_OWNER_BITS[c] for c in set(words[1][len('u+'):]))
        return Housekeeping('later', paths=tuple(words[2:]), bits=bits)
    return None
