"""What the file-copy tests (tests/files) look at: a copy's temporary files
left behind, and the master's waits for the targets' answers."""
from __future__ import annotations

import os

import plasmid


def leftovers(directory) -> list[str]:
    """The copies' temporary files in *directory* (``.plasmid-`` names)."""
    return [name for name in os.listdir(directory) if '.plasmid-' in name]


def timed_out_waits(monkeypatch, module) -> list:
    """(deadline, timeout) of each of the master's waits for an answer
    (*module*'s answer_by) that ran out: the moment it waited until and
    the time it names."""
    real = module.answer_by
    timed_out: list = []

    def recorded(call, deadline, timeout):
        try:
            return real(call, deadline, timeout)
        except plasmid.TimeoutError:
            timed_out.append((deadline, timeout))
            raise
    monkeypatch.setattr(module, 'answer_by', recorded)
    return timed_out
