"""The calling API against real local contexts: call, call_async,
call_no_reply, as_completed, errors, and every target Python version."""
from __future__ import annotations

import builtins
import functools
import logging
import os
import pathlib
import subprocess
import sys
import threading
import time
from typing import Iterator

import pytest

import plasmid
from plasmid.master.router import ARGUMENT_DEPTH
from testbed.pythons import require_python

import local_fns

ALL_VERSIONS = ['2.7', '3.6', '3.7', '3.8', '3.9', '3.10', '3.11', '3.12',
                '3.13']


@pytest.fixture
def router() -> Iterator[plasmid.Router]:
    with plasmid.Router() as r:
        yield r


@pytest.fixture
def ctx(router: plasmid.Router) -> plasmid.Context:
    return router.local(name='api')


# ------------------------------------------------------------------ calls

def test_call_returns_the_remote_result(ctx: plasmid.Context) -> None:
    pid = ctx.call(local_fns.getpid)
    assert pid == ctx.info['pid']
    assert pid != os.getpid()
    assert ctx.call(local_fns.add, 2, b=40) == 42
    # Builtins and stdlib functions are called by name too.
    assert ctx.call(os.getppid) == os.getpid()
    assert ctx.call(local_fns.echo, {'k': [1, 2.5, (b'x', None)]}) == \
        {'k': [1, 2.5, (b'x', None)]}


def test_call_async_future(ctx: plasmid.Context, tmp_path) -> None:
    release = str(tmp_path / 'release')
    fut = ctx.call_async(local_fns.wait_for_file, release, 'finished')
    assert isinstance(fut, plasmid.Future)
    assert not fut.done()
    # A timed-out wait raises both our and the builtin TimeoutError and
    # leaves the future usable.
    with pytest.raises(plasmid.TimeoutError):
        fut.result(timeout=0.2)
    with pytest.raises(builtins.TimeoutError):
        fut.result(timeout=0.01)
    assert not fut.done()
    open(release, 'w').close()
    assert fut.result(timeout=30) == 'finished'
    assert fut.done()
    assert fut.result() == 'finished'  # the outcome is kept


def test_call_no_reply_burst_runs_in_order(ctx: plasmid.Context) -> None:
    for i in range(1000):
        ctx.call_no_reply(local_fns.record, i)
    # Calls run one at a time in arrival order, so once this call answers
    # every burst call has run.
    assert ctx.call(local_fns.recorded) == list(range(1000))


def test_as_completed_yields_in_completion_order(router: plasmid.Router,
                                                 tmp_path) -> None:
    contexts = [router.local(name='ac%d' % i) for i in range(3)]
    paths = [str(tmp_path / ('go%d' % i)) for i in range(3)]
    futures = [c.call_async(local_fns.wait_for_file, p, i)
               for i, (c, p) in enumerate(zip(contexts, paths))]
    order = [2, 0, 1]  # the order in which we let the calls finish
    open(paths[order[0]], 'w').close()
    seen = []
    for fut in plasmid.as_completed(futures, timeout=60):
        seen.append(fut.result())
        if len(seen) < len(order):
            open(paths[order[len(seen)]], 'w').close()
    assert seen == order
    assert all(f.done() for f in futures)


def test_as_completed_timeout(ctx: plasmid.Context, tmp_path) -> None:
    release = str(tmp_path / 'release')
    done = ctx.call_async(local_fns.echo, 'quick')
    stuck = ctx.call_async(local_fns.wait_for_file, release, 'late')
    assert done.result(timeout=30) == 'quick'
    yielded = []
    with pytest.raises(plasmid.TimeoutError):
        for fut in plasmid.as_completed([done, stuck], timeout=0.5):
            yielded.append(fut)
    assert yielded == [done]
    assert not stuck.done()
    open(release, 'w').close()
    assert stuck.result(timeout=30) == 'late'


def test_static_and_class_methods(ctx: plasmid.Context) -> None:
    assert ctx.call(local_fns.Tools.multiply, 6, 7) == 42
    assert ctx.call(local_fns.Tools.describe, '!') == 'Tools!'


def test_class_methods_written_in_c(ctx: plasmid.Context) -> None:
    """Bound to their type, they name no module of their own: they were
    refused ("cannot be called by name")."""
    assert ctx.call(int.from_bytes, b'\x01\x00', 'big') == 256
    assert ctx.call(bytes.fromhex, '41') == b'A'
    assert ctx.call(dict.fromkeys, 'ab') == {'a': None, 'b': None}


# ----------------------------------------------------------------- errors

@pytest.mark.parametrize('version', ['2.7', 'master'])
def test_builtins_are_called_by_their_name_in_the_context(
        router: plasmid.Router, version: str) -> None:
    """Python 3's builtins module is __builtin__ on Python 2: sorted, len
    or an exception class are callable in either, directly or via."""
    python = require_python(version)
    direct = router.local(python_path=python)
    behind = router.local(via=router.local(python_path=require_python(
        '3.12' if version == '2.7' else '2.7')), python_path=python)
    for ctx in direct, behind:
        assert ctx.call(sorted, [3, 1, 2]) == [1, 2, 3]
        assert ctx.call(len, 'abc') == 3
        assert ctx.call(int, '7') == 7


def test_keyword_arguments_named_func_or_self_reach_the_function(
        ctx: plasmid.Context) -> None:
    sent = {'func': 1, 'self': 2, 'args': 3, 'kwargs': 4}
    assert ctx.call(local_fns.keywords, **sent) == sent
    assert ctx.call_async(local_fns.keywords, **sent).result() == sent
    ctx.call_no_reply(local_fns.record, value=sent)
    assert ctx.call(local_fns.recorded) == [sent]


def test_remote_exception_becomes_call_error(ctx: plasmid.Context) -> None:
    with pytest.raises(plasmid.CallError) as info:
        ctx.call(local_fns.fail, 'the sky fell')
    err = info.value
    assert isinstance(err, plasmid.Error)
    assert err.type_name == 'ValueError'
    assert err.message == 'the sky fell'
    assert 'local_fns' in err.remote_traceback
    assert "raise ValueError(message)" in err.remote_traceback
    text = str(err)
    assert 'ValueError' in text and 'the sky fell' in text
    assert 'raise ValueError(message)' in text
    # The context survives its function's failure.
    assert ctx.call(local_fns.add, 1, 1) == 2


def test_a_functions_own_plasmid_error_is_a_call_error(
        ctx: plasmid.Context) -> None:
    """A ConnectError that the called function raises is its failure,
    with its traceback, like any other: it came back bare, as if the
    context had failed to start (only a start via the context is that)."""
    with pytest.raises(plasmid.CallError) as info:
        ctx.call(local_fns.fail_to_connect, 'not a start')
    assert info.value.type_name == 'ConnectError'
    assert info.value.message == 'not a start'
    assert 'fail_to_connect' in info.value.remote_traceback


def test_remote_exception_via_future(ctx: plasmid.Context) -> None:
    fut = ctx.call_async(local_fns.fail, 'async failure')
    with pytest.raises(plasmid.CallError) as info:
        fut.result(timeout=30)
    assert info.value.type_name == 'ValueError'
    assert fut.done()


def _nested_function() -> int:
    def inner() -> int:
        return 1
    return inner  # type: ignore[return-value]


@pytest.mark.parametrize('make_func, words', [
    (lambda: (lambda: 1), 'lambda'),
    (_nested_function, 'closures'),
    (lambda: local_fns.Tools().instance_method, 'bound to an instance'),
    (lambda: functools.partial(local_fns.add, 1), 'a partial has no name'),
    (lambda: str.maketrans, 'str.maketrans names no module'),
], ids=['lambda', 'closure', 'bound-method', 'partial', 'builtin-static'])
def test_unimportable_functions_fail_at_once(ctx: plasmid.Context,
                                             make_func, words: str) -> None:
    func = make_func()
    for send in (ctx.call, ctx.call_async, ctx.call_no_reply):
        with pytest.raises(TypeError) as info:
            send(func)
        assert words in str(info.value)
    # Nothing was sent: the context has run no call at all.
    assert ctx.call(local_fns.recorded) == []


@pytest.mark.parametrize('owner', [local_fns.ReprFails,
                                   local_fns.ReprShowsSecrets])
def test_a_refusal_names_a_method_without_its_objects_repr(
        ctx: plasmid.Context, owner: type) -> None:
    """The refusal showed repr(): one that raised replaced the TypeError,
    one of megabytes made a message of megabytes (os.environ.get's held
    every environment variable)."""
    for func in (owner().instance_method, owner()):
        for send in (ctx.call, ctx.call_async, ctx.call_no_reply):
            with pytest.raises(TypeError) as info:
                send(func)
            said = str(info.value)
            assert owner.__name__ in said and 'secret' not in said
            assert len(said) < 300
    assert ctx.call(local_fns.recorded) == []


def test_unsupported_argument_type(ctx: plasmid.Context) -> None:
    for send in (ctx.call, ctx.call_async, ctx.call_no_reply):
        with pytest.raises(plasmid.Error) as info:
            send(local_fns.record, object())
        assert 'builtins.object' in str(info.value)
    assert ctx.call(local_fns.recorded) == []


def nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_arguments_nested_too_deep_are_refused_with_their_own_limit(
        ctx: plasmid.Context) -> None:
    """The refusal named the codec's limit (100), which the call's own
    tuples count in: arguments got 98 levels."""
    deepest = nested(ARGUMENT_DEPTH)
    assert ctx.call(local_fns.echo, deepest) == deepest
    for send in (ctx.call, ctx.call_async, ctx.call_no_reply):
        with pytest.raises(plasmid.Error,
                           match='more than %d containers' % ARGUMENT_DEPTH):
            send(local_fns.record, nested(ARGUMENT_DEPTH + 1))
    assert ctx.call(local_fns.recorded) == []


def test_results_nested_too_deep_are_refused_with_their_own_limit(
        ctx: plasmid.Context) -> None:
    """The refusal said "deeper than 100", the codec's limit, which the
    reply's own tuple counts in: a result gets 99 levels."""
    assert ctx.call(local_fns.nested, 99) == nested(99)
    with pytest.raises(plasmid.CallError,
                       match='nested more than 99 containers deep'):
        ctx.call(local_fns.nested, 100)
    assert ctx.call(local_fns.echo, 'still fine') == 'still fine'


def test_an_argument_that_holds_itself_is_refused_saying_so(
        ctx: plasmid.Context) -> None:
    """A list that holds itself was refused as nested too deep, which
    read as a wrong count: the refusal names the likely cause too."""
    looped: list = [1]
    looped.append(looped)
    with pytest.raises(plasmid.Error, match='holds itself'):
        ctx.call(local_fns.record, looped)
    assert ctx.call(local_fns.recorded) == []


@pytest.mark.parametrize('version', [None, '2.7'])
def test_a_dict_subclass_whose_attributes_are_its_keys_travels(
        router: plasmid.Router, version) -> None:
    """Looking for a context's __plasmid_ref__ on the value itself raised
    KeyError: returned, it killed the context; sent, a bare KeyError."""
    ctx = router.local(python_path=version and require_python(version))
    assert ctx.call(local_fns.return_attr_dict) == {'a': 1}
    assert ctx.call(local_fns.echo, local_fns.AttrDict(b=2)) == {'b': 2}


def test_a_value_whose_own_methods_fail_is_refused_not_fatal(
        ctx: plasmid.Context) -> None:
    """An exception other than StreamError out of encoding a reply ended
    the context's main thread."""
    with pytest.raises(plasmid.CallError,
                       match='could not be sent.*no items today'):
        ctx.call(local_fns.return_broken_list)
    with pytest.raises(plasmid.Error, match='no items today'):
        ctx.call(local_fns.echo, local_fns.BrokenList([1]))
    assert ctx.call(local_fns.echo, 'still fine') == 'still fine'


def test_a_context_of_another_router_is_refused_as_an_argument(
        router: plasmid.Router, ctx: plasmid.Context) -> None:
    """Ids are a router's own: another router's context 1 went as this
    router's context 1, and the call reached the wrong process."""
    with plasmid.Router() as other:
        stranger = other.local(name='stranger')
        assert stranger.context_id == ctx.context_id
        for send in (ctx.call, ctx.call_async, ctx.call_no_reply):
            with pytest.raises(plasmid.Error,
                               match='stranger: it is a context of another '
                                     'router'):
                send(local_fns.record, [stranger])
        assert ctx.call(local_fns.recorded) == []
        assert ctx.call(local_fns.echo, ctx) is ctx
        # Nor through a handle a reply named (one this router forgot).
        gone = router.local()
        gone.shutdown()
        named = ctx.call(local_fns.echo, gone)
        assert type(named) is not type(gone)
        with pytest.raises(plasmid.Error, match='another router'):
            named.call_async(local_fns.record, [stranger])


def test_unsupported_return_type(ctx: plasmid.Context) -> None:
    with pytest.raises(plasmid.CallError) as info:
        ctx.call(local_fns.return_object)
    assert 'object' in str(info.value)
    assert ctx.call(local_fns.echo, 'still fine') == 'still fine'


def test_calls_to_a_shut_down_context_fail(router: plasmid.Router) -> None:
    ctx = router.local()
    ctx.shutdown()
    assert not ctx.is_alive()
    with pytest.raises(plasmid.ContextLost):
        ctx.call(local_fns.getpid)
    with pytest.raises(plasmid.ContextLost):
        ctx.call_no_reply(local_fns.getpid)


# --------------------------------------------------------- every version

@pytest.mark.parametrize('version', ALL_VERSIONS)
def test_every_target_python(version: str, caplog) -> None:
    python = require_python(version)
    caplog.set_level(logging.DEBUG, logger='plasmid.ctx')
    name = 'py' + version
    with plasmid.Router() as router:
        ctx = router.local(python_path=python, name=name)
        want = [int(x) for x in version.split('.')]
        assert ctx.call(local_fns.version_info)[:2] == want
        assert ctx.info['version'][:2] == want
        # local_fns is not on the target's path: it came from the master.
        loader, filename = ctx.call(local_fns.loaded_by)
        assert loader == 'Importer'
        assert filename == local_fns.__file__
        assert ctx.call(local_fns.log_levels, 'v') == 'v'
        with pytest.raises(plasmid.CallError) as info:
            ctx.call(local_fns.fail, 'on ' + version)
        assert info.value.type_name == 'ValueError'
        assert 'raise ValueError(message)' in info.value.remote_traceback
        assert ctx.call(local_fns.chatter, 2, 'c') == 2
    texts = [(r.plasmid_origin, r.levelno, r.getMessage())
             for r in caplog.records if r.name == 'plasmid.ctx.' + name
             and not r.plasmid_origin.startswith('plasmid')]
    assert texts == [
        ('local_fns.levels', logging.DEBUG, 'v debug'),
        ('local_fns.levels', logging.INFO, 'v info'),
        ('local_fns.levels', logging.WARNING, 'v warning'),
        ('local_fns.levels', logging.ERROR, 'v error'),
        ('local_fns.chatter', logging.WARNING, 'c record 0'),
        ('stdout', logging.INFO, 'c line 0'),
        ('local_fns.chatter', logging.WARNING, 'c record 1'),
        ('stdout', logging.INFO, 'c line 1'),
    ]



# Each method with its program's extra-arguments option and what else it
# needs to start.
ARGS_OPTIONS = [
    ('ssh', 'ssh_args', {'hostname': 'example.invalid'}),
    ('sudo', 'sudo_args', {}), ('su', 'su_args', {}),
    ('doas', 'doas_args', {}),
    ('docker', 'exec_args', {'container': 'c'}),
    ('podman', 'exec_args', {'container': 'c'}),
    ('lxc', 'attach_args', {'container': 'c'}),
]


@pytest.mark.parametrize('method, option, needs', ARGS_OPTIONS)
@pytest.mark.parametrize('args', ['-o BatchMode=yes', [1], ('-x', None),
                                  {'-x': 1}])
def test_extra_arguments_that_are_no_list_of_strings_are_refused(
        router: plasmid.Router, method, option, needs, args) -> None:
    """One string would be taken apart into characters."""
    with pytest.raises(ValueError, match='%s must be a list of strings'
                       % option):
        getattr(router, method)(**needs, **{option: args})
    assert router.streams == []


@pytest.mark.parametrize('method, option, needs', [
    ('ssh', 'identity_file', {'hostname': 'h'}),
    ('ssh', 'ssh_path', {'hostname': 'h'}),
    ('sudo', 'sudo_path', {}), ('su', 'su_path', {}),
    ('doas', 'doas_path', {}),
    ('podman', 'podman_path', {'container': 'c'}),
    ('docker', 'docker_path', {'container': 'c'}),
    ('lxc', 'lxc_attach_path', {'container': 'c'}),
    ('kubectl', 'kubectl_path', {'pod': 'p'}),
    ('setns', 'nsenter_path', {'pid': 1}),
])
def test_a_program_or_key_path_that_is_no_path_is_refused(
        router: plasmid.Router, method, option, needs) -> None:
    """Before, 5 failed in os.fspath deep in the start (through another
    context: a CallError with spawn.py's traceback), and a pathlib.Path
    worked directly but could not be sent through another context."""
    start = getattr(router, method)
    with pytest.raises(TypeError, match='%s must be a path' % option):
        start(**needs, **{option: 5})
    with pytest.raises(ValueError, match='%s must not be empty' % option):
        start(**needs, **{option: ''})
    assert router.streams == []


def test_a_path_object_for_a_program_goes_through_another_context(
        router: plasmid.Router, tmp_path) -> None:
    """It is sent as a string ("cannot send a value of type PosixPath")."""
    top = router.local()
    with pytest.raises(plasmid.ConnectError):
        router.ssh('127.0.0.1', via=top, connect_timeout=5,
                   ssh_path=pathlib.Path('/nonexistent/ssh'))
    assert top.call(os.getpid) == top.info['pid']


@pytest.mark.parametrize('method, kwargs, named', [
    # Each word would have reached the program's command line as an option
    # (ssh -oProxyCommand=..., su -c ...), or as nothing.
    ('ssh', {'hostname': '-oProxyCommand=touch /tmp/owned'}, 'hostname'),
    ('ssh', {'hostname': ''}, 'hostname'),
    ('ssh', {'hostname': 'h', 'username': '-oProxyCommand=x'}, 'username'),
    ('ssh', {'hostname': 'h', 'port': 0}, 'port'),
    ('ssh', {'hostname': 'h', 'port': 'twenty-two'}, 'port'),
    ('ssh', {'hostname': 'h', 'port': 65536}, 'port'),
    ('su', {'username': '-c'}, 'username'),
    ('sudo', {'username': '--preserve-env'}, 'username'),
    ('doas', {'username': ' '}, 'username'),
])
def test_a_host_user_or_port_read_as_an_option_or_nothing_is_refused(
        router: plasmid.Router, method, kwargs, named) -> None:
    with pytest.raises(ValueError, match='%s must be' % named):
        getattr(router, method)(**kwargs)
    assert router.streams == []


def test_an_empty_user_name_is_the_methods_own_choice() -> None:
    """ansible passes an unset remote_user as '': ssh's configured user,
    as vanilla's ssh plugin reads it (and sudo's root)."""
    from plasmid.master.arguments import checked_user_name
    assert checked_user_name('') is None
    assert checked_user_name(None) is None
    assert checked_user_name('deploy') == 'deploy'


def test_a_port_given_as_digits_is_a_port() -> None:
    from plasmid.master.arguments import checked_port
    assert checked_port('2222') == 2222
    assert checked_port(None) is None


@pytest.mark.parametrize('method', ['docker', 'podman'])
@pytest.mark.parametrize('username', ['', ' ', True, 1.5, -1, ['root']])
def test_a_container_user_that_is_no_name_or_uid_is_refused(
        router: plasmid.Router, method, username) -> None:
    with pytest.raises(ValueError, match='username must be'):
        getattr(router, method)(container='c', username=username)
    assert router.streams == []


@pytest.mark.parametrize('method, needs', [
    ('local', {}), ('sudo', {}), ('ssh', {'hostname': 'example.invalid'})])
def test_via_a_context_of_another_router_is_refused(
        router: plasmid.Router, method, needs) -> None:
    """Before: a bare KeyError, or (another context of this router with
    that id) a context started below the wrong one, unreachable."""
    mine = router.local(name='mine')
    with plasmid.Router() as other:
        theirs = other.local(name='theirs')
        assert theirs.context_id == mine.context_id
        with pytest.raises(ValueError, match='theirs: it is a context of '
                           'another router'):
            getattr(router, method)(via=theirs, **needs)
        with pytest.raises(TypeError, match='via must be None or a '
                           'context, not str'):
            getattr(router, method)(via='mine', **needs)
    assert router.streams == [mine.stream] and len(router.contexts) == 1
    assert router.local(via=mine).call(os.getppid) == mine.info['pid']


@pytest.mark.parametrize('method, needs', [
    ('sudo', {}), ('su', {}), ('doas', {}),
    ('ssh', {'hostname': 'example.invalid'})])
@pytest.mark.parametrize('password, error, complaint', [
    ('first\nsecond', ValueError, 'password must be one line'),
    ('first\r', ValueError, 'password must be one line'),
    (b'bytes', TypeError, 'password must be None or a string, not bytes'),
    (1234, TypeError, 'password must be None or a string, not int')])
def test_a_password_that_is_no_line_of_text_is_refused(
        router: plasmid.Router, method, needs, password, error,
        complaint) -> None:
    """Before, a line break ended the typed password early and the rest
    went on into the core: "zlib.error: Error -3 while decompressing"."""
    with pytest.raises(error, match=complaint) as caught:
        getattr(router, method)(password=password, **needs)
    assert 'second' not in str(caught.value)  # no password in messages
    assert router.streams == []


@pytest.mark.parametrize('value', ['no', 0, None])
def test_a_flag_that_is_no_bool_is_refused(router: plasmid.Router,
                                           value) -> None:
    """Its truth was taken: set_home='no' meant True."""
    for option in ('threaded', 'send_bytecode'):
        with pytest.raises(TypeError, match='%s must be True or False'
                           % option):
            plasmid.Router(**{option: value})
    with pytest.raises(TypeError, match='set_home must be True or False'):
        router.sudo(set_home=value)
    assert router.streams == []


@pytest.mark.parametrize('size', [0, -5, 1024, 1 << 32, 1.5, '4096', True,
                                  None])
def test_a_message_limit_that_is_no_size_is_refused(size) -> None:
    """Before: a string failed in the first send's comparison, 0 or 1.5
    refused every message, 1 << 40 passed the 32-bit length field."""
    with pytest.raises(ValueError, match='max_message_size must be a '
                       'whole number of bytes from 4096 to 4294967295'):
        plasmid.Router(max_message_size=size)


def test_a_threaded_router_refuses_to_be_shut_down_from_its_io_thread(
        tmp_path) -> None:
    """From a future's callback (on the I/O thread) it stalled the loop
    for shutdown_timeout, then failed joining itself, and its contexts
    were lost as broken links."""
    with plasmid.Router(threaded=True) as router:
        ctx = router.local()
        raised: list = []

        def shut_down(_: plasmid.Future) -> None:
            try:
                router.shutdown()
            except RuntimeError as exc:
                raised.append(str(exc))
        go = tmp_path / 'go'
        future = ctx.call_async(local_fns.wait_for_file, str(go), 1)
        future.add_done_callback(shut_down)  # before it is done: on I/O
        go.touch()
        assert future.result(timeout=30) == 1
        assert ctx.call(local_fns.echo, 2) == 2  # the callback ran by now
        assert len(raised) == 1 and 'own I/O thread' in raised[0], raised
        assert not router.closed


def test_a_router_shutdown_with_no_timeout_waits_for_a_busy_call(
        tmp_path) -> None:
    """timeout=None means no limit, as for result() and Context.shutdown;
    Router.shutdown took it for its default, shutdown_timeout, and killed
    the context while its call ran.  The context's own grace (2 s) ended a
    call waited for without limit, or longer than that, as well."""
    release = tmp_path / 'release'
    released = threading.Event()

    def release_later() -> None:
        time.sleep(3.0)  # past the shutdown_timeout and the grace
        released.set()
        release.write_text('')

    router = plasmid.Router(shutdown_timeout=0.1)
    ctx = router.local()
    call = ctx.call_async(local_fns.wait_for_file, str(release), 'done')
    threading.Thread(target=release_later).start()
    router.shutdown(timeout=None)
    assert released.is_set()  # it waited for the call to end
    assert call.result(timeout=0) == 'done'


@pytest.mark.parametrize('timeout, error', [
    (float('nan'), ValueError), ('1', TypeError), (True, TypeError)])
def test_a_shutdown_timeout_that_is_no_number_is_refused(
        router: plasmid.Router, timeout, error) -> None:
    """Before, a NaN failed deep in the wait ("cannot convert float NaN
    to integer"), the context told to shut down all the same."""
    ctx = router.local()
    with pytest.raises(error, match='timeout must be None or a number'):
        ctx.shutdown(timeout=timeout)
    with pytest.raises(error, match='timeout must be None or a number'):
        router.shutdown(timeout=timeout)
    with pytest.raises(error, match='shutdown_timeout must be None or a '
                       'number'):
        plasmid.Router(shutdown_timeout=timeout)
    assert ctx.call(os.getpid) == ctx.info['pid']
    ctx.shutdown(timeout=float('inf'))  # no limit, as result() takes it
    assert not ctx.is_alive()


def test_a_shutdown_timeout_past_float_s_range_is_no_limit() -> None:
    """An int too large for a float raised OverflowError."""
    with plasmid.Router(shutdown_timeout=10 ** 400) as router:
        ctx = router.local()
        ctx.shutdown(timeout=10 ** 400)
        assert not ctx.is_alive()
        router.local().shutdown(timeout=-10 ** 400)  # a deadline passed
    assert router.closed


def test_a_function_of_a_main_without_source_fails_at_once(tmp_path) -> None:
    """python -c (or stdin, or a REPL) leaves nothing the context could
    import: the call fails here, naming why, not remotely with an
    ImportError of plasmid's alias for __main__."""
    code = ('import plasmid\n'
            'def here(): return 1\n'
            'with plasmid.Router() as router:\n'
            '    ctx = router.local()\n'
            '    try:\n'
            '        ctx.call(here)\n'
            '    except TypeError as exc:\n'
            '        print(exc)\n'
            '    print(ctx.call(abs, -3))\n')
    done = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert 'no source file' in first and 'python -c' in first, first
    assert second == '3'


MAIN_SCRIPT = """import sys
import plasmid
def here():
    raise ValueError('from the function')
%s
    router = plasmid.Router()
    ctx = router.local(python_path=sys.argv[1] or None)
    try:
        ctx.call(here)
    except plasmid.CallError as exc:
        print(exc.type_name)
        print(exc.message)
    router.shutdown()
"""


@pytest.mark.parametrize('version', [None, '2.7'])
@pytest.mark.parametrize('guarded', [False, True])
def test_a_scripts_top_level_run_in_the_context_is_named_as_the_cause(
        tmp_path, version: str | None, guarded: bool) -> None:
    """A script without an ``if __name__ == '__main__':`` guard runs its
    top level again in the context that imports it for its function: the
    error named something else (no attribute 'Router'); it now says
    where it came from and what to do.  An error of the function itself is
    left as it was."""
    python = version and require_python(version)
    guard = "if __name__ == '__main__':" if guarded else 'if True:'
    script = tmp_path / 'unguarded.py'
    script.write_text(MAIN_SCRIPT % guard)
    done = subprocess.run([sys.executable, str(script), python or ''],
                          capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    type_name, message = done.stdout.splitlines()
    if guarded:
        assert (type_name, message) == ('ValueError', 'from the function')
        return
    assert type_name == 'AttributeError'
    assert "has no attribute 'Router' (raised by the top level" in message
    assert 'top level of your script (%s, line 6)' % script in message
    assert "if __name__ == '__main__':" in message


@pytest.mark.parametrize('option, value', [
    ('connect_timeout', 0), ('connect_timeout', -1),
    ('connect_timeout', '5'), ('connect_timeout', float('nan')),
    ('connect_timeout', float('inf')), ('connect_timeout', True),
    ('python_path', b'/usr/bin/python3'), ('python_path', 3),
    ('python_path', []), ('python_path', ['python3', 3]),
    ('name', 5),
])
def test_start_arguments_of_the_wrong_kind_are_refused(
        router: plasmid.Router, option: str, value) -> None:
    """connect_timeout=0 used to mean the default 30 s; the others failed
    deep in the start with a message about something else."""
    with pytest.raises((TypeError, ValueError), match=option):
        router.local(**{option: value})
    assert router.streams == []


def test_a_path_object_is_a_python_path(router: plasmid.Router) -> None:
    import pathlib
    ctx = router.local(python_path=pathlib.Path(sys.executable))
    assert ctx.call(os.getppid) == os.getpid()
