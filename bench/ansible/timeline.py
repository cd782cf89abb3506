"""Where a linear playbook's rounds go, from bench_timeline's stamps.

With a linear strategy every task is a round: the strategy queues the task
for each host in turn, then waits until every host has answered.  For a
run, :func:`summarize` gives the first round (which includes every host's
connection) and, over the later rounds, how long a round lasts, how long
after its start the last host's task was started (the strategy's
queueing) and how long after that the last host answered (the tail).
A round bound by queueing is bound by the controller's own work.
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Optional


@dataclasses.dataclass
class Round:
    start: float
    starts: list[float] = dataclasses.field(default_factory=list)
    dones: list[float] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Timeline:
    rounds: int
    first_round: float        # s, task start to the next task's start
    later_round: float        # s, median over rounds 2..n-1
    queueing: float           # s, median: round start to last host started
    tail: float               # s, median: last host started to last done


def read_rounds(path: str) -> tuple[list[Round], Optional[float]]:
    rounds: list[Round] = []
    end = None
    with open(path) as handle:
        for line in handle:
            stamp, event, _ = line.rstrip('\n').split(' ', 2)
            when = float(stamp)
            if event == 'task':
                rounds.append(Round(when))
            elif event == 'end':
                end = when
            elif rounds:
                (rounds[-1].starts if event == 'start'
                 else rounds[-1].dones).append(when)
    return rounds, end


def summarize(path: str) -> Optional[Timeline]:
    """The run's rounds; None with fewer than three of them (nothing
    between the first and the last to take a median of)."""
    rounds, end = read_rounds(path)
    rounds = [r for r in rounds if r.starts and r.dones]
    if len(rounds) < 3 or end is None:
        return None
    lengths = [b.start - a.start for a, b in zip(rounds, rounds[1:])]
    later = rounds[1:-1]
    return Timeline(
        rounds=len(rounds), first_round=lengths[0],
        later_round=statistics.median(lengths[1:]),
        queueing=statistics.median(max(r.starts) - r.start for r in later),
        tail=statistics.median(max(r.dones) - max(r.starts) for r in later))
