"""The pyenv-built interpreters (2.7, 3.6 ... 3.13) that remote ends may run."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Iterator

DEFAULT_PYENV_ROOT = "/root/.pyenv"


def pyenv_root() -> str:
    """pyenv's root: `pyenv root`, else $PYENV_ROOT, else /root/.pyenv."""
    exe = shutil.which("pyenv")
    if exe:
        out = subprocess.run([exe, "root"], capture_output=True, text=True)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    return os.environ.get("PYENV_ROOT") or DEFAULT_PYENV_ROOT


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name.split("."))


def available_pythons() -> dict[str, str]:
    """{'2.7': '/root/.pyenv/versions/2.7.18/bin/python', ...}, oldest first.

    Only plain CPython release dirs (X.Y.Z) count; if several patch
    releases of one X.Y exist, the newest wins.  No pyenv means {}.
    """
    versions_dir = os.path.join(pyenv_root(), "versions")
    try:
        names = os.listdir(versions_dir)
    except OSError:
        return {}
    found: dict[str, tuple[tuple[int, ...], str]] = {}
    for name in names:
        if not re.fullmatch(r"\d+\.\d+\.\d+", name):
            continue  # virtualenvs, pypy, dev builds
        exe = os.path.join(versions_dir, name, "bin", "python")
        if not os.access(exe, os.X_OK):
            continue
        key = _version_key(name)
        minor = f"{key[0]}.{key[1]}"
        if minor not in found or key > found[minor][0]:
            found[minor] = (key, exe)
    ordered = sorted(found.items(), key=lambda kv: kv[1][0])
    return {minor: exe for minor, (_, exe) in ordered}


def require_python(version: str) -> str:
    """Path of the interpreter for `version` ('3.8'; 'master': the one
    running the tests), or skip the test."""
    import pytest  # only tests call this; keep the module importable without

    if version == 'master':
        return sys.executable
    exe = available_pythons().get(version)
    if exe is None:
        pytest.skip(f"Python {version} interpreter not found under {pyenv_root()}/versions")
    return exe


def executable_by_others(path: str) -> bool:
    """True if a non-root account could run `path` (every dir above is o+x).

    /root is usually 0700; .ci/setup opens it so test accounts can run the
    pyenv pythons.
    """
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for i in range(2, len(parts)):
        if not os.stat(os.sep.join(parts[:i])).st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o001)


@contextlib.contextmanager
def script_for_all(text: str, folder_mode: int = 0o755) -> Iterator[str]:
    """The path of a script holding *text*, in a folder of its own (of
    *folder_mode*) where any account may run it; removed after the
    block."""
    folder = tempfile.mkdtemp(prefix="plasmid-script-")
    try:
        os.chmod(folder, folder_mode)
        path = os.path.join(folder, "script")
        with open(path, "w") as script:
            script.write(text)
        os.chmod(path, 0o755)
        yield path
    finally:
        shutil.rmtree(folder)


def slow_python_script(seconds: float):
    """A path to /usr/bin/python3 that starts *seconds* late (a loaded
    host, or a start surely under way), where any account may run it;
    removed after the block."""
    return script_for_all(
        '#!/bin/sh\nsleep %g\nexec /usr/bin/python3 "$@"\n' % seconds)
