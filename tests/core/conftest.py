"""Fixtures the core's tests share."""
from __future__ import annotations

import os
from typing import Iterator

import pytest


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass
