"""ansible-core's housekeeping commands, done by the context itself.

Shipped into target contexts, so it stays stdlib-only and Python
2.7-compatible.

Around a module that needs files on the target (``copy``, ``template``,
``script``...) ActionBase runs shell commands besides the module: make the
task's temp dir, make its files readable or executable by their owner
(``chmod u+...``), remove the dir.  Through ``/bin/sh`` each costs the
target a fork of this interpreter, a shell and a program: 6-11 ms of CPU
per command on the development machine (docs/benchmarks.md).  Done here
with the matching system calls, a fraction of a millisecond.

The broker sends these ahead (``commands.housekeeping`` recognises them),
so nobody reads their output at once.  Each function takes the command as
ansible-core wrote it and runs it with the shell instead wherever doing it
here could end differently: a path the shell would expand (``~``), a
directory with a default ACL (which, not the umask, sets a new entry's
mode), a Python without the calls needed to tell, and any failure (the
shell then fails the same way and says so in its own words, as vanilla's
run would).  Each returns ``(how, answer)``: *how* is ``'native'`` or
``'shell'``, *answer* what the shell's version returns.
"""
from __future__ import absolute_import
import errno
import os
import shutil
import stat

from plasmid.ansible import target

NATIVE, SHELL = 'native', 'shell'
_DEFAULT_ACL = 'system.posix_acl_default'


def make_dir(command, parent, name):
    """The task's temp dir *parent*/*name*, mode 0700, as *command* (the
    mkdtemp line: ``( umask 77 && mkdir -p PARENT && mkdir PARENT/NAME
    ...)``) makes it; *parent* is the expanded directory an earlier
    mkdtemp of this login made."""
    if _plain(parent) and '/' not in name and _umask_decides(parent):
        path = os.path.join(parent, name)
        try:
            os.mkdir(path, 0o700)
        except OSError:
            pass  # exists, or cannot be made: the shell says which
        else:
            _owner_only(path)
            return NATIVE, 0
    return SHELL, target.run_shell_checked(command)


def add_owner_mode(command, bits, paths):
    """``chmod u+BITS PATHS`` (*bits*: the S_IRUSR/S_IWUSR/S_IXUSR ones),
    following symbolic links.  Like chmod, it changes a mode that has
    the bits already (the same mode again): only the owner may do that."""
    if not bits & ~0o700 and all(_plain(p) for p in paths):
        try:
            for path in paths:
                mode = stat.S_IMODE(os.stat(path).st_mode)
                os.chmod(path, mode | bits)
            return NATIVE, 0
        except OSError:
            pass  # the shell tries again and says why it fails
    return SHELL, target.run_shell_checked(command)


def remove_tree(command, path):
    """``rm -f -r PATH > /dev/null 2>&1``: (rc, b'', b'') as
    :func:`target.run_shell` answers it."""
    real = path.rstrip('/')
    if _plain(path) and real:
        try:
            mode = os.lstat(real).st_mode
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return NATIVE, (0, b'', b'')  # rm -f: nothing to remove
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            try:
                shutil.rmtree(real)
                return NATIVE, (0, b'', b'')
            except OSError:
                pass  # rm removes what it can and fails as vanilla's
    return SHELL, target.run_shell(command)


def _plain(path):
    """An absolute path the shell would pass on as it is."""
    return path.startswith('/') and '~' not in path


def _umask_decides(directory):
    """Whether an entry made in *directory* gets its mode from the
    requested mode and the umask: not where a default ACL sets it, nor
    where this Python cannot tell (2.7 has no ``os.listxattr``)."""
    listxattr = getattr(os, 'listxattr', None)
    if listxattr is None or not os.path.isdir(directory):
        return False
    try:
        return _DEFAULT_ACL not in listxattr(directory)
    except OSError as exc:
        # A file system without extended attributes has no ACLs.
        return exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP)


def _owner_only(path):
    """``mkdir`` under ``umask 77`` gives rwx for the owner alone; this
    process's umask may have taken some of those away too."""
    mode = os.stat(path).st_mode
    if stat.S_IMODE(mode) & 0o777 != 0o700:
        os.chmod(path, (stat.S_IMODE(mode) & ~0o777) | 0o700)
