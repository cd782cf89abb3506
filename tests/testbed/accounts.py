"""Local test accounts and their sudo rules.

plasmid-a logs in over ssh and may sudo to root without a password, and to
plasmid-b only with its own password.  Nothing else is granted, so sudo to
any other user (e.g. nobody) is refused.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import contextlib
import tempfile
from typing import Iterator, Optional

from .procs import wait_gone

USER_A = "plasmid-a"
USER_B = "plasmid-b"
# Throwaway passwords for throwaway accounts on a test machine.
PASSWORD_A = "plasmid-a-pw-7Qx2"
PASSWORD_B = "plasmid-b-pw-4Kd9"
SUDOERS_PATH = "/etc/sudoers.d/plasmid-testbed"

# timestamp_timeout=0: sudo never caches a correct password, so a test that
# gives a wrong password can't pass on credentials left by an earlier test.
# The system's use_pty default is deliberately kept.
SUDOERS = f"""\
# Written by plasmid's test bed (tests/testbed/accounts.py).
Defaults:{USER_A} timestamp_timeout=0
{USER_A} ALL=(root) NOPASSWD: ALL
{USER_A} ALL=({USER_B}) PASSWD: ALL
"""


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def ensure_account(name: str, password: str) -> None:
    """Create a login account (if missing) and (re)set its password."""
    if not user_exists(name):
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", name],
                       check=True, capture_output=True)
    # Always reset: an account left over from an older run may have
    # another password.
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True,
                   check=True, capture_output=True)


@contextlib.contextmanager
def login_shell(shell: str, *names: str) -> Iterator[None]:
    """Accounts *names* log in with *shell* while the block runs, then with
    the shell each had (the test bed's accounts use bash, which runs a
    lone command in its own place; Debian's sh, dash, does not)."""
    before = {name: pwd.getpwnam(name).pw_shell for name in names}
    try:
        for name in names:
            subprocess.run(["usermod", "-s", shell, name], check=True,
                           capture_output=True)
        yield
    finally:
        for name, old in before.items():
            subprocess.run(["usermod", "-s", old, name], check=True,
                           capture_output=True)


@contextlib.contextmanager
def start_up_file(name: str, user: str, text: str) -> Iterator[None]:
    """``~user/name`` (a ``.bashrc``, a ``.profile``) holds *text* while
    the block runs, then what it held before (or nothing)."""
    entry = pwd.getpwnam(user)
    path = os.path.join(entry.pw_dir, name)
    before = None
    if os.path.exists(path):
        with open(path) as handle:
            before = handle.read()
    try:
        with open(path, "w") as handle:
            handle.write(text)
        os.chown(path, entry.pw_uid, entry.pw_gid)
        yield
    finally:
        if before is None:
            os.unlink(path)
        else:
            with open(path, "w") as handle:
                handle.write(before)


def install_sudoers() -> None:
    """Install the test bed's SUDOERS."""
    write_sudoers(SUDOERS_PATH, SUDOERS)


@contextlib.contextmanager
def requiring_tty(path: str, text: str, user: str) -> Iterator[None]:
    """Sudoers file *path* holds *text* plus ``requiretty`` for *user*
    while the block runs, and *text* again after it."""
    write_sudoers(path, text + 'Defaults:%s requiretty\n' % user)
    try:
        yield
    finally:
        write_sudoers(path, text)


def write_sudoers(path: str, text: str) -> None:
    """Install *text* as sudoers file *path*, atomically, after visudo has
    approved it.

    The temp file's name contains a '.', which sudo's @includedir skips, so
    a half-written file is never live.
    """
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path),
                               dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o440)
        check = subprocess.run(["visudo", "-cf", tmp], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"visudo rejected sudoers: {check.stdout}{check.stderr}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def remove_orphaned_sudoers(prefix: str) -> None:
    """Remove the sudoers files named *prefix*... whose account is gone: a
    test session killed before its clean-up leaves its file behind, and a
    later account of that name must not inherit its rights."""
    for path in glob.glob('/etc/sudoers.d/%s*' % prefix):
        try:
            pwd.getpwnam(os.path.basename(path))
        except KeyError:
            os.unlink(path)


def remove_orphaned_accounts(prefixes: tuple[str, ...], live: set[int],
                             modulus: int) -> list[str]:
    """Remove the accounts named ``prefix + str(pid % modulus)`` whose test
    session (pid) is not among the *live* ones: a session killed before its
    clean-up leaves an account with a known password and sudo rights.
    Their processes, homes and sudoers files go too.  Returns their names."""
    owners = {pid % modulus for pid in live}
    removed = []
    for entry in pwd.getpwall():
        name = entry.pw_name
        prefix = next((p for p in prefixes if name.startswith(p)), None)
        suffix = name[len(prefix):] if prefix else ''
        if not suffix.isdigit() or int(suffix) in owners:
            continue
        kill_user_processes(name)
        subprocess.call(["userdel", "-r", name], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        try:
            os.unlink("/etc/sudoers.d/" + name)
        except FileNotFoundError:
            pass
        removed.append(name)
    return removed


def create_accounts() -> None:
    """Idempotently create plasmid-a, plasmid-b and their sudo rules."""
    ensure_account(USER_A, PASSWORD_A)
    ensure_account(USER_B, PASSWORD_B)
    install_sudoers()


def _user_pids(uid: int) -> set[int]:
    pids = set()
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.stat(f"/proc/{name}").st_uid == uid:
                pids.add(int(name))
        except OSError:
            pass
    return pids


def kill_user_processes(name: str) -> None:
    """Kill everything running as `name`; userdel refuses otherwise."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for sig in ("TERM", "KILL"):
        # pkill exits 1 when nothing matched; that's fine.
        subprocess.run(["pkill", f"-{sig}", "-u", name], capture_output=True)
        if not wait_gone(_user_pids(uid), 2.0):
            return


def remove_temp_files(name: str, folder: Optional[str] = None) -> None:
    """Remove what `name` left at the top of `folder` (the temp folder):
    vanilla Ansible leaves a module's payload dir there when the module
    is killed, and tests kill some."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return
    for entry in os.scandir(folder or tempfile.gettempdir()):
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except FileNotFoundError:
            continue


def remove_accounts() -> None:
    """Undo create_accounts(): processes, sudo rules, accounts, homes."""
    remove_account(USER_A, SUDOERS_PATH)
    remove_account(USER_B)


def remove_account(name: str, sudoers_path: Optional[str] = None) -> Optional[str]:
    """Kill `name`'s processes, remove its sudoers file (if given), the
    account and its home; what userdel said if it failed, else None."""
    kill_user_processes(name)
    if sudoers_path and os.path.exists(sudoers_path):
        os.unlink(sudoers_path)
    error = None
    if user_exists(name):
        # -r also removes the home dir; the missing mail spool warning
        # is noise.
        done = subprocess.run(["userdel", "-r", name], capture_output=True, text=True)
        if done.returncode != 0:
            error = done.stderr.strip()
    # sudo keeps per-user timestamp files; a future account with the
    # same name must not inherit them.
    ts = f"/run/sudo/ts/{name}"
    if os.path.exists(ts):
        os.unlink(ts)
    return error
