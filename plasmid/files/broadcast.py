"""The master's half of a copy of one file to many contexts: the file
crosses each link once, however many targets lie beyond it.

The targets' routes from the master form a tree.  The master sends each
chunk once to each root of that tree; a context where the tree branches
(a bastion with many hosts behind it) passes the chunk to its branches
(:mod:`plasmid.files.relay`) and answers once they have it, so the
master's window of unanswered chunks per root bounds every hop's memory
as for one copy.  A context on the way to a single target is left out of
the plan: the router forwards the calls through it anyway.

Each target writes a temporary file beside the destination and renames it
into place once whole; a target that fails does not stop the others.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Dict, Iterable, List, Optional

from plasmid.core.context import Context, Future
from plasmid.files import relay
from plasmid.files.transfer import (CHUNK_SIZE, WINDOW, CopyFailures,
                                    LocalPath, Path, answer_by,
                                    check_arguments, chunk_within_budget,
                                    fitting_chunk, local_path_of,
                                    open_source,
                                    remote_path_of, temp_beside,
                                    unique_contexts)

Node = list  # [context, here, below]: see plasmid.files.relay


def broadcast_file(contexts: Iterable[Context], local_path: LocalPath,
                   remote_path: Path, mode: Optional[int] = None,
                   chunk_size: int = CHUNK_SIZE, window: int = WINDOW,
                   timeout: Optional[float] = None) -> int:
    """Copy the file *local_path* here to *remote_path* in every one of
    *contexts*; return its size.  Each link carries the file once: a
    context that started several of them passes it on.  *mode*,
    *chunk_size* and *window* are as for :func:`plasmid.put_file`;
    *timeout* is the seconds one step (a chunk, the commit) may take in
    a target: one that takes longer fails with
    :class:`plasmid.TimeoutError`, and so do the targets behind a hop that
    does, and they are sent nothing more but a discard.

    Raises :class:`plasmid.CopyFailures` once done if some contexts did
    not get the file (the others did)."""
    targets = unique_contexts(contexts, 'broadcast_file')
    remote_path = remote_path_of(remote_path)
    check_arguments(mode, chunk_size, window, timeout)
    temp = temp_beside(remote_path)
    with open_source(local_path_of(local_path)) as source:
        if not targets:
            return source.size
        plan = plan_for(targets)
        # Within the message limit too, as a put's (a router's smaller
        # max_message_size failed every copy with StreamError).
        chunk_size = fitting_chunk(targets[0],
                                   chunk_for(plan, chunk_size, window))
        fanout = _Fanout(plan, temp, window, timeout)
        first = source.read(chunk_size)
        if len(first) < chunk_size:
            fanout.send('put_whole', [temp, remote_path, first, mode])
            size = len(first)
        else:
            size = fanout.send_all(first, source, chunk_size, remote_path)
            fanout.send('commit', [temp, remote_path, mode, size])
        fanout.drain()
    if fanout.failures:
        raise CopyFailures(
            {context: fanout.failures[context.context_id]
             for context in targets if context.context_id in fanout.failures},
            {context: size for context in targets
             if context.context_id not in fanout.failures},
            'broadcast_file to %r' % (remote_path,))
    return size


def plan_for(targets: List[Context]) -> List[Node]:
    """The roots of the tree the targets' routes make, as relay nodes;
    a context that is no target and leads to one node only is left out."""
    nodes: Dict[int, Node] = {}
    roots: List[Node] = []
    for context in targets:
        _node_for(context, nodes, roots)[1] = context.context_id
    return [_without_passages(root) for root in roots]


def chunk_for(plan: List[Node], chunk_size: int, window: int) -> int:
    """*chunk_size*, or less so that the chunks on their way in any one
    process stay within the budget: the master holds a window of them per
    root, a hop one per branch (each a copy of its own, as each is a
    call) and the window queued for it."""
    return chunk_within_budget(chunk_size, max(len(plan) * window,
                                               _widest(plan) + window))


def _widest(nodes: List[Node]) -> int:
    """The most branches any node under *nodes* passes a chunk to."""
    return max([max(len(node[2]), _widest(node[2])) for node in nodes] or
               [0])


def _node_for(context: Context, nodes: Dict[int, Node],
              roots: List[Node]) -> Node:
    node = nodes.get(context.context_id)
    if node is None:
        node = nodes[context.context_id] = [context, 0, []]
        via = getattr(context, 'via', None)
        above = roots if via is None else _node_for(via, nodes, roots)[2]
        above.append(node)
    return node


def _without_passages(node: Node) -> Node:
    context, here, below = node
    below = [_without_passages(child) for child in below]
    if not here and len(below) == 1:
        return below[0]
    return [context, here, below]


class _Fanout:
    """Each step as one call per root, at most *window* unanswered per
    root; the failures met, the first for each target.

    The master waits for its roots in rounds (an answer from each) and
    counts each wait from the round's start, so stalled roots' waits
    overlap as their steps do: counted from each wait's own start, after
    the one before it gave up, N stalled roots took N times the timeout."""

    def __init__(self, roots: List[Node], temp: str, window: int,
                 timeout: Optional[float]) -> None:
        self.temp = temp
        self.window = window
        self.timeout = timeout
        self.unanswered = [(root, deque()) for root in roots]
        self.failures: Dict[int, BaseException] = {}  # by context id
        self.gone: set = set()  # roots whose whole tree failed

    def send_all(self, first: bytes, source, chunk_size: int,
                 path: str) -> int:
        chunk, offset = first, 0
        try:
            while chunk:
                self.send('write', [self.temp, path, chunk, offset])
                offset += len(chunk)
                chunk = source.read(chunk_size)
        except BaseException:
            self.send('discard', [self.temp])
            self.drain()
            raise
        return offset

    def send(self, step: str, args: list) -> None:
        since = time.monotonic()  # a round, for the roots whose window is full
        for root, calls in self.unanswered:
            if len(calls) >= self.window:
                self._collect(root, calls.popleft(), since)
            if id(root) in self.gone:
                continue
            try:
                calls.append(root[0].call_async(relay.run, step, args,
                                                root[1], root[2],
                                                self.timeout))
            except Exception as exc:  # a context lost refuses calls
                self._fail_all(root, exc)

    def drain(self) -> None:
        """Collect every answer, a round at a time: the oldest of each
        root's."""
        while any(calls for _, calls in self.unanswered):
            since = time.monotonic()
            for root, calls in self.unanswered:
                if calls:
                    self._collect(root, calls.popleft(), since)

    def _collect(self, root: Node, call: Future, since: float) -> None:
        """*root*'s answer to *call*, waited for until its time, counted
        from *since* (its round's start), runs out; or its targets fail."""
        if id(root) in self.gone:
            return  # given up on: its answers are no longer awaited
        wait = self.timeout and self.timeout * (
            relay.height_below(root[2]) + 1)  # as the root waits, and a level
        try:
            failed = answer_by(call, wait and since + wait, wait)
        except Exception as exc:  # lost, or late: TimeoutError
            self._fail_all(root, exc)
            return
        for context, error in failed:
            context = context or root[0]
            self.failures.setdefault(context.context_id, error)

    def _fail_all(self, root: Node, error: BaseException) -> None:
        """Give up on *root*: its targets failed, it gets no more steps
        but a discard (which runs once it is free, if it is there)."""
        self.gone.add(id(root))
        relay.discard_later(root, self.temp)
        for target in relay.targets(root):
            self.failures.setdefault(target.context_id, error)
