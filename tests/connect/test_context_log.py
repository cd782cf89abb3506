"""plasmid.connect.context_log: a context's records under
``plasmid.ctx.<name>``, decided as logging would decide for that logger,
without making one per context."""
from __future__ import annotations

import logging
from typing import Iterator

import pytest

import connect_fns
import plasmid
from plasmid.connect import context_log


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[Kept]:
    """What reaches a handler on ``plasmid``; the loggers the test made
    under ``plasmid.ctx.t_`` are set back afterwards."""
    handler = Kept()
    top = logging.getLogger('plasmid')
    top.addHandler(handler)
    try:
        yield handler
    finally:
        top.removeHandler(handler)
        for name, made in list(logging.Logger.manager.loggerDict.items()):
            if name.startswith('plasmid.ctx.t_') and \
                    isinstance(made, logging.Logger):
                made.setLevel(logging.NOTSET)
                made.filters.clear()
                made.disabled = False


def made_under(prefix: str) -> list[str]:
    return [name for name in logging.Logger.manager.loggerDict
            if name.startswith(prefix)]


def test_records_carry_the_contexts_name_and_make_no_logger(kept) -> None:
    logging.getLogger('plasmid.ctx').setLevel(logging.INFO)
    try:
        for n in range(20):
            context_log.log('t_many.%d' % n, logging.WARNING, 'said %s',
                            ('hello',), extra={'plasmid_context': n})
        context_log.log('t_many.0', logging.DEBUG, 'below the level')
    finally:
        logging.getLogger('plasmid.ctx').setLevel(logging.NOTSET)
    assert [(r.name, r.getMessage(), r.plasmid_context)
            for r in kept.records] == \
        [('plasmid.ctx.t_many.%d' % n, 'said hello', n) for n in range(20)]
    assert made_under('plasmid.ctx.t_many') == []


def test_a_logger_made_for_a_context_or_its_group_decides(kept) -> None:
    # One context's own logger, and one for a group (a dotted prefix of
    # the names), configured as for any logger.
    logging.getLogger('plasmid.ctx.t_group').setLevel(logging.ERROR)
    own = logging.getLogger('plasmid.ctx.t_group.chatty')
    own.setLevel(logging.DEBUG)
    for name in ('t_group.quiet', 't_group.chatty'):
        context_log.log(name, logging.INFO, 'info')
        context_log.log(name, logging.ERROR, 'error')
    assert [(r.name, r.getMessage()) for r in kept.records] == [
        ('plasmid.ctx.t_group.quiet', 'error'),
        ('plasmid.ctx.t_group.chatty', 'info'),
        ('plasmid.ctx.t_group.chatty', 'error')]
    assert context_log.level_of('t_group.quiet') == logging.ERROR
    assert context_log.level_of('t_group.chatty') == logging.DEBUG
    assert context_log.level_of('t_group.other.deeper') == logging.ERROR


def test_filters_apply_as_on_the_contexts_own_logger(kept) -> None:
    # A logger's filters see the records logged on it, not those that
    # propagate from below: the same for records of contexts.
    def refuse(record: logging.LogRecord) -> bool:
        return False
    logging.getLogger('plasmid.ctx.t_filtered').addFilter(refuse)
    context_log.log('t_filtered', logging.WARNING, 'on it')
    context_log.log('t_filtered.below', logging.WARNING, 'from below')
    disabled = logging.getLogger('plasmid.ctx.t_off')
    disabled.disabled = True
    context_log.log('t_off', logging.WARNING, 'disabled')
    assert [r.getMessage() for r in kept.records] == ['from below']


def test_contexts_started_and_stopped_leave_no_logger(kept) -> None:
    with plasmid.Router() as router:
        for n in range(3):
            ctx = router.local(name='t_started.%d' % n)
            ctx.call(connect_fns.log_warning, 'from the context')
            ctx.shutdown(wait=True)
    assert made_under('plasmid.ctx.t_started') == []
    assert ['plasmid.ctx.t_started.%d' % n for n in range(3)] == [
        r.name for r in kept.records if r.getMessage() == 'from the context']


class Failing(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        raise KeyError('a filter of the program failed')


@pytest.mark.parametrize('threaded', [False, True])
def test_a_filter_that_raises_loses_no_reply(kept, capsys,
                                             threaded: bool) -> None:
    """Raised on the loop, amid the replies read with the record: a call
    raised the filter's KeyError and its reply was lost (threadless), or
    the I/O thread ended (threaded).  It is reported as logging reports
    a handler's emit that fails."""
    failing = Failing()
    kept.addFilter(failing)
    try:
        with plasmid.Router(threaded=threaded) as router:
            ctx = router.local(name='t_failing')
            for n in range(3):
                assert ctx.call(connect_fns.log_warning, 'said %d' % n) \
                    == 'said %d' % n
    finally:
        kept.removeFilter(failing)
    said = capsys.readouterr().err
    assert said.count('logging a record of t_failing failed') == 3, said
    assert 'a filter of the program failed' in said
