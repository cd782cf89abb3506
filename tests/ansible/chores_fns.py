"""Run in target contexts by test_chores.py (any Python, 2.7 too)."""
import os
import shutil
import stat
import struct

# A default ACL (user::rwx group::r-x other::r-x) as the kernel stores it.
_ACL_VERSION = 2
_UNDEFINED_ID = 0xffffffff
_DEFAULT_ACL = struct.pack('<I', _ACL_VERSION) + b''.join(
    struct.pack('<HHI', tag, perm, _UNDEFINED_ID)
    for tag, perm in ((0x01, 7), (0x04, 5), (0x20, 5)))


def build(root, entries):
    """Make *root* afresh with *entries*: (relative path, kind, mode)
    with kind 'dir', 'file', 'acl-dir' (a directory with a default ACL)
    or 'link:TARGET'.  Modes are set once everything is made, deepest
    first, so that a directory may hold entries it lets nobody add."""
    remove(root)
    os.mkdir(root)
    for relpath, kind, _ in entries:
        path = os.path.join(root, relpath)
        if kind.startswith('link:'):
            os.symlink(kind[len('link:'):], path)
        elif kind == 'file':
            open(path, 'w').close()
        else:
            os.mkdir(path)
        if kind == 'acl-dir':
            os.setxattr(path, 'system.posix_acl_default', _DEFAULT_ACL)
    for relpath, kind, mode in reversed(entries):
        if not kind.startswith('link:'):
            os.chmod(os.path.join(root, relpath), mode)


def remove(root):
    """Remove *root*, whatever modes the test left inside."""
    if os.path.lexists(root):
        _make_removable(root)
        shutil.rmtree(root)


def new_temp_dir():
    import tempfile
    return tempfile.mkdtemp(prefix='plasmid-chores-')


def state(root):
    """What is under *root*: sorted (relative path, type, mode)."""
    found = []
    for parent, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            kind = 'link' if stat.S_ISLNK(info.st_mode) else \
                'dir' if stat.S_ISDIR(info.st_mode) else 'file'
            found.append((os.path.relpath(path, root), kind,
                          oct(stat.S_IMODE(info.st_mode))))
    return sorted(found)


def set_umask(mask):
    return os.umask(mask)


def _make_removable(root):
    for parent, dirs, _ in os.walk(root):
        for name in dirs:
            path = os.path.join(parent, name)
            if not os.path.islink(path):
                os.chmod(path, 0o700)
