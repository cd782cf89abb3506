"""A context loads ``logging`` only when a record must go out, and then
forwards records as it always did (plasmid/core/logger.py, logs.install)."""
from __future__ import annotations

import importlib
import logging
import sys

import pytest

import plasmid
from plasmid.core import logs
from testbed.pythons import require_python

import logger_fns

# Each costs a context's start milliseconds it rarely needs (logging pulls
# in re, enum and traceback; base64 pulls in re): the core must not load
# them.  Python 2 loads logging and traceback with the core (compat.stdlib).
UNWANTED = ['logging', 'base64']
PY3_VERSIONS = ['3.6', '3.8', '3.11', '3.13', 'master']


@pytest.fixture(autouse=True)
def default_level() -> None:
    """Contexts start at the default level (WARNING), whatever pytest's
    log capture has set."""
    logger = logging.getLogger('plasmid.ctx')
    saved = logger.level
    logger.setLevel(logging.WARNING)
    yield
    logger.setLevel(saved)


@pytest.mark.parametrize('version', PY3_VERSIONS)
def test_a_context_runs_calls_without_loading_logging(version: str) -> None:
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version))
        assert ctx.call(logger_fns.loaded, UNWANTED) == []
        # A failed call formats its traceback without logging too.
        with pytest.raises(plasmid.CallError, match='no logging here'):
            ctx.call(logger_fns.fail, 'no logging here')
        # And a debug record of the core's below the context's level.
        ctx.call(logger_fns.core_debug, 'dropped')
        assert ctx.call(logger_fns.loaded, UNWANTED) == []


def records_of(caplog: pytest.LogCaptureFixture, name: str) -> list:
    """(origin, level, first line) of what context *name* sent."""
    return [(r.plasmid_origin, r.levelno, r.getMessage().split('\n')[0])
            for r in caplog.records if r.name == 'plasmid.ctx.' + name]


@pytest.mark.parametrize('version', ['2.7', '3.6', 'master'])
def test_a_core_error_before_logging_is_loaded_reaches_the_master(
        version: str, caplog: pytest.LogCaptureFixture) -> None:
    """The core's own record loads logging, which routes to the master
    from then on, for the core's records and the program's alike."""
    with plasmid.Router() as router:
        ctx = router.local(python_path=require_python(version), name='lazy')
        ctx.call_no_reply(logger_fns.fail, 'unheard')
        ctx.call(logger_fns.warn_with_logging, 'later')
        assert records_of(caplog, 'lazy') == [
            ('plasmid.dispatch', logging.ERROR,
             'call_no_reply failed: ValueError: unheard'),
            ('logger_fns', logging.WARNING, 'later')]
        assert ctx.call(logger_fns.forwarding_handlers) == (
            ['ForwardingHandler'], 0)


def test_a_program_importing_logging_is_routed_before_its_first_record(
        caplog: pytest.LogCaptureFixture) -> None:
    with plasmid.Router() as router:
        ctx = router.local(name='first')
        assert ctx.call(logger_fns.loaded, ['logging']) == []
        ctx.call(logger_fns.warn_with_logging, 'at once')
        assert records_of(caplog, 'first') == [
            ('logger_fns', logging.WARNING, 'at once')]


def write_module(tmp_path, name: str) -> None:
    (tmp_path / (name + '.py')).write_text('VALUE = 42\n')


def test_when_imported_runs_before_the_import_returns(tmp_path) -> None:
    name = 'plasmid_when_imported_probe'
    write_module(tmp_path, name)
    seen = []

    def then(module):
        seen.append(module.VALUE)
        module.VALUE = 'set by then'

    sys.path.insert(0, str(tmp_path))
    hook = logs.WhenImported(name, then)
    sys.meta_path.insert(0, hook)
    try:
        module = importlib.import_module(name)
        assert seen == [42]
        assert module.VALUE == 'set by then'
        # It leaves no trace: the module keeps its own loader, the hook
        # is spent, and a reload runs the module alone.
        assert hook.done
        assert type(module.__loader__).__name__ == 'SourceFileLoader'
        assert 'exec_module' not in vars(module.__loader__)
        importlib.reload(module)
        assert module.VALUE == 42 and seen == [42]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)


def test_when_imported_lets_a_missing_module_fail(tmp_path) -> None:
    hook = logs.WhenImported('plasmid_no_such_module', lambda m: None)
    sys.meta_path.insert(0, hook)
    try:
        with pytest.raises(ImportError):
            importlib.import_module('plasmid_no_such_module')
    finally:
        if hook in sys.meta_path:
            sys.meta_path.remove(hook)
