"""Checking what the public API is given: the arguments of ``Router``,
its start methods (``ssh``, ``sudo``, ``docker``...) and ``shutdown``,
each refused at once with the ``TypeError`` or ``ValueError`` that names
it, before anything starts, instead of failing deep in a start (or on
another machine).  Each check returns the value as the start uses it.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Mapping, Optional

from plasmid.master.futures import checked_timeout


# A start's timers and waits go through poll(), which takes at most
# 2**31 - 1 ms.
LONGEST_CONNECT_TIMEOUT = 2147483.0


def checked_keepalive(keepalive: Any) -> Optional[tuple[int, int]]:
    if keepalive is None:
        return None
    try:
        interval, count = keepalive
        valid = all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                    for n in (interval, count))
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ValueError('keepalive must be None or (seconds, count), two '
                         'positive integers, not %r' % (keepalive,))
    return (interval, count)


def checked_seconds(option: str, seconds: Any,
                    longest: Optional[float] = None) -> Optional[float]:
    """None or a positive number of seconds for *option*, at most
    *longest* where given (connect_timeout=0 used to mean the default,
    a string failed deep in the start)."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not seconds > 0 or (longest is not None and seconds > longest):
        raise ValueError('%s must be None or a positive number of seconds%s, '
                         'not %r' % (option, '' if longest is None else
                                     ' (at most %d)' % longest, seconds))
    return float(seconds)


def checked_wait(option: str, seconds: Any) -> float:
    """*seconds* for a shutdown's wait as a call's result() takes them
    (None or infinity: without limit, a negative one: none), within what
    poll() takes (a NaN failed deep in the wait, in int())."""
    seconds = checked_timeout(seconds, option)
    if seconds is None:
        return LONGEST_CONNECT_TIMEOUT
    return min(seconds, LONGEST_CONNECT_TIMEOUT)


# The frame header's length field has 32 bits; a limit below a few KiB
# would refuse the start-up's own messages.
SMALLEST_MESSAGE_LIMIT = 4096
LARGEST_MESSAGE_LIMIT = (1 << 32) - 1


def checked_message_limit(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or \
            not SMALLEST_MESSAGE_LIMIT <= size <= LARGEST_MESSAGE_LIMIT:
        raise ValueError('max_message_size must be a whole number of bytes '
                         'from %d to %d, not %r' % (SMALLEST_MESSAGE_LIMIT,
                                                    LARGEST_MESSAGE_LIMIT,
                                                    size))
    return size


def checked_password(password: Any) -> Optional[str]:
    """None or a string typed as one line: a line break in it ended the
    password early and sent the rest on as the start of the core (a
    "zlib.error" from the start)."""
    if password is None:
        return None
    if not isinstance(password, str):
        raise TypeError('password must be None or a string, not %s'
                        % type(password).__name__)
    if '\n' in password or '\r' in password:
        raise ValueError('password must be one line: it holds a line break')
    return password


def checked_prompt_timeout(seconds: Any) -> Optional[float]:
    return checked_seconds('prompt_timeout', seconds)


def checked_python_path(python_path: Any) -> Any:
    """A path (a string or os.PathLike) or an argv list of strings."""
    if python_path is None:
        return None
    if isinstance(python_path, os.PathLike):
        python_path = os.fspath(python_path)
    if isinstance(python_path, str):
        if not python_path:
            raise ValueError('python_path must not be empty')
        return python_path
    if isinstance(python_path, (list, tuple)) and python_path and all(
            isinstance(word, str) for word in python_path):
        return list(python_path)
    raise TypeError('python_path must be a path or a non-empty list of '
                    'strings (an argv), not %r' % (python_path,))


def checked_flag(option: str, value: Any) -> bool:
    """True or False, nothing taken for one: ``set_home='no'`` was
    true."""
    if not isinstance(value, bool):
        raise TypeError('%s must be True or False, not %r' % (option, value))
    return value


def checked_program(option: str, path: Any) -> Optional[str]:
    """A program's (or a key file's) path: a string or os.PathLike, made
    a string, which a start through another context can send."""
    if path is None:
        return None
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError('%s must be a path (a string or os.PathLike), '
                        'not %r' % (option, path))
    if not path:
        raise ValueError('%s must not be empty' % option)
    return path


def checked_args(option: str, args: Any,
                 refusal: Optional[Callable[[list[str]], Optional[str]]]
                 = None) -> list[str]:
    """Extra arguments for a program: a sequence of strings.  One string
    would otherwise be taken apart into characters.  *refusal* (the
    method's) names an option that would keep the context from starting."""
    if args is None:
        return []
    if isinstance(args, (str, bytes)) or not isinstance(
            args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise ValueError('%s must be a list of strings, not %r'
                         % (option, args))
    why = refusal and refusal(list(args))
    if why:
        raise ValueError('%s: %s; plasmid talks to the new Python over the '
                         "program's plain input and output" % (option, why))
    return list(args)


def checked_env(option: str, env: Any) -> Optional[dict[str, str]]:
    """Environment variables for a program: names and values as strings,
    a name neither empty nor holding '=' (None: none)."""
    if env is None:
        return None
    if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and k and '=' not in k
            and '\0' not in k + v for k, v in env.items()):
        raise ValueError('%s must map variable names to strings, not %r'
                         % (option, env))
    return dict(env) or None


def checked_user(username: Any) -> Optional[str]:
    """A container user: a name, or a uid (an int is taken as one)."""
    if username is None:
        return None
    if isinstance(username, int) and not isinstance(username, bool) and \
            username >= 0:
        return str(username)
    if not isinstance(username, str) or not username.strip():
        raise ValueError('username must be a user name or uid, not %r'
                         % (username,))
    return username


def checked_user_name(username: Any) -> Optional[str]:
    """A user name for ssh, sudo, su or doas: None or '' for the method's
    own choice (ssh's configured user, root), as before; refused where the
    program would read it as an option."""
    if username is None or username == '':
        return None
    return checked_name('username', username, what='a user name')


def checked_port(port: Any) -> Optional[int]:
    """An ssh port: None (ssh's choice), or 1-65535 (digits as text
    too).  0 was dropped without a word; a word went to ssh as given."""
    if port is None:
        return None
    if isinstance(port, str) and port.isdigit():
        port = int(port)
    if not isinstance(port, int) or isinstance(port, bool) or \
            not 0 < port < 65536:
        raise ValueError('port must be None or 1-65535, not %r' % (port,))
    return port


def checked_container(container: Any) -> str:
    """A container name or id, refused where the engine's client would
    read it as an option, or as nothing at all."""
    return checked_name('container', container, what='a container name '
                        'or id')


def checked_name(option: str, value: Any, optional: bool = False,
                 what: str = 'a name') -> Optional[str]:
    """A name a client takes as one word of its command line: refused
    where it would read it as an option, or as nothing at all."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or \
            value.startswith('-'):
        raise ValueError('%s must be %s, not %r' % (option, what, value))
    return value


def checked_pid(pid: Any) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise ValueError('pid must be a positive integer, not %r' % (pid,))
    return pid


# What nsenter can enter, by its option names.
NAMESPACES = ('mount', 'uts', 'ipc', 'net', 'pid', 'cgroup', 'user', 'time')


def checked_namespaces(namespaces: Any) -> Optional[list[str]]:
    """None (every namespace the target does not share with us) or a
    non-empty selection of NAMESPACES."""
    if namespaces is None:
        return None
    if isinstance(namespaces, str) or not isinstance(
            namespaces, (list, tuple, set, frozenset)) or not namespaces or \
            not all(n in NAMESPACES for n in namespaces):
        raise ValueError('namespaces must be None (all of them) or some of '
                         '%s, not %r' % (', '.join(NAMESPACES), namespaces))
    return sorted(namespaces, key=NAMESPACES.index)
