"""A kubectl login's start on the broker's machine: what
``plasmid.accel.kubectl``'s options ask beyond ``router.kubectl``'s
arguments.

- A kubeconfig given as data (a dictionary) is written to a file only its
  owner can read, given to kubectl with ``--kubeconfig``, and removed once
  the context has started (kubectl reads it when it starts, and the
  context's stream outlives the file).
- Environment variables for kubectl itself go to ``router.kubectl``'s
  ``kubectl_env``, on top of the broker's environment.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from typing import Any, Iterator, Optional

import plasmid


def start(router: plasmid.Router, login: dict,
          python_path: Any) -> plasmid.Context:
    """The context of the kubectl *login* spec (its 'method' removed)."""
    data: Optional[dict] = login.pop('kubeconfig_data', None)
    env: Optional[dict] = login.pop('local_env', None)
    with _kubeconfig_file(data) as path:
        args = list(login.pop('kubectl_args', None) or [])
        if path is not None:
            args = ['--kubeconfig', path] + args
        return router.kubectl(python_path=python_path, kubectl_args=args,
                              kubectl_env=env, **login)


@contextlib.contextmanager
def _kubeconfig_file(data: Optional[dict]) -> Iterator[Optional[str]]:
    """A private file holding the kubeconfig *data* while the block runs
    (None: no file)."""
    if data is None:
        yield None
        return
    fd, path = tempfile.mkstemp(prefix='plasmid-kubeconfig-')
    try:
        with os.fdopen(fd, 'w') as config:
            json.dump(data, config)
        yield path
    finally:
        os.unlink(path)
