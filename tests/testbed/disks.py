"""A disk that fills up, for tests of what a full disk does."""
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    """*folder*, a file system of 1 MiB of its own (a tmpfs) for the
    block.  Mounting needs root (as in CI): skips the test otherwise."""
    import pytest  # only tests call this; keep the module importable without

    if os.geteuid() != 0:
        pytest.skip('needs root to mount a small tmpfs')
    folder.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs',
                    str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(['umount', '-l', str(folder)], check=True)
