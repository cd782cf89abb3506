"""The master's half of a copy of one file from many contexts, each to a
local file of its own: every context's reads on their way at once, so the
copies take about as long as the slowest one, not the sum of them.

Each source gets its own :class:`~plasmid.files.transfer.Fetch`; one pass
takes a chunk from each in turn, writing it to that source's temporary
file beside its destination, which is renamed into place once whole.  A
source that fails does not stop the others.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Union

from plasmid.core.context import Context
from plasmid.files.transfer import (CHUNK_SIZE, WINDOW, CopyFailures, Fetch,
                                    LocalPath, Path, check_arguments,
                                    chunk_within_budget, deadline_after,
                                    fitting_chunk, local_path_of,
                                    remote_path_of,
                                    unique_contexts)

Destination = Union[LocalPath, Callable[[Context], LocalPath]]


def gather_file(contexts: Iterable[Context], remote_path: Path,
                local_path: Destination, chunk_size: int = CHUNK_SIZE,
                window: int = WINDOW,
                timeout: Optional[float] = None) -> Dict[Context, int]:
    """Copy the file *remote_path* in each of *contexts* to a file here:
    *local_path* with ``{name}`` and ``{id}`` replaced by the context's
    name and id (``'logs/{name}.log'``), or what *local_path* returns
    when called with the context (a str, bytes or path object, as
    :func:`plasmid.fetch_file` takes).  Return each context's file size.

    *chunk_size*, *window* and *timeout* are as for
    :func:`plasmid.fetch_file`; many contexts get smaller chunks, so that
    the chunks on their way stay within 64 MiB.  Raises
    :class:`plasmid.CopyFailures` once done if some copies failed (the
    others are in place)."""
    sources = unique_contexts(contexts, 'gather_file')
    remote_path = remote_path_of(remote_path)
    check_arguments(None, chunk_size, window, timeout)
    destinations = _destinations(sources, local_path)
    if not sources:
        return {}
    # Within the message limit too, as a fetch's (a router's smaller
    # max_message_size failed every copy: the answers could not be sent).
    chunk_size = fitting_chunk(sources[0], chunk_within_budget(
        chunk_size, len(sources) * window))
    fetches: Dict[Context, Fetch] = {}
    failures: Dict[Context, BaseException] = {}
    try:
        for context in sources:  # all of them reading before any wait
            try:
                fetches[context] = Fetch(context, remote_path,
                                         destinations[context], chunk_size,
                                         window, timeout)
            except Exception as exc:  # a context lost refuses calls
                failures[context] = exc
        copied = _take_turns(fetches, failures, timeout)
    except BaseException:
        for fetch in fetches.values():
            fetch.abandon()
        raise
    if failures:
        raise CopyFailures({c: failures[c] for c in sources if c in failures},
                           {c: copied[c] for c in sources if c in copied},
                           'gather_file from %r' % (remote_path,))
    return {context: copied[context] for context in sources}


def _take_turns(fetches: Dict[Context, Fetch],
                failures: Dict[Context, BaseException],
                timeout: Optional[float]) -> Dict[Context, int]:
    """A chunk of each fetch in turn until all ended; their sizes.  A
    fetch that fails moves to *failures*, without its temporary file.

    Every answer of a turn is due *timeout* after the turn's start: the
    contexts read side by side, so their waits overlap (counted from each
    wait's own start, after the one before it gave up, N stalled contexts
    took N times *timeout*)."""
    copied: Dict[Context, int] = {}
    while fetches:
        deadline = deadline_after(timeout)
        for context, fetch in list(fetches.items()):
            try:
                done = fetch.step(deadline)
            except Exception as exc:
                fetch.abandon()
                failures[context] = exc
                del fetches[context]
                continue
            if done:
                copied[context] = fetch.size
                del fetches[context]
    return copied


def _destinations(sources: List[Context],
                  local_path: Destination) -> Dict[Context, str]:
    """Each source's local file, as text (bytes decoded as os.fsdecode
    does: a function's bytes failed in the copy, as an AttributeError);
    two sources may not share one."""
    if not callable(local_path):
        local_path = _template_of(local_path)
    paths = {}
    for context in sources:
        if callable(local_path):
            path = local_path(context)
        else:
            path = _filled_in(local_path, context)
        paths[context] = local_path_of(path)
    if len(set(paths.values())) < len(paths):
        raise ValueError('gather_file would write the files of two contexts '
                         'to one path: put {name} or {id} in local_path')
    return paths


def _template_of(local_path: LocalPath) -> str:
    """*local_path*, not a function, as text; anything else refused
    naming what it may be."""
    try:
        return local_path_of(local_path)
    except TypeError:
        raise TypeError('local_path must be a str, bytes, a path object or '
                        'a function of the context, not %r'
                        % (local_path,)) from None


def _filled_in(template: str, context: Context) -> str:
    """*template* with the context's ``{name}`` and ``{id}``; another
    field (``{host}``), or a lone brace, is refused naming them."""
    try:
        return template.format(name=context.name, id=context.context_id)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError('local_path %r may name {name} and {id} only '
                         '(double a brace meant as itself): %s'
                         % (template, exc)) from None

