"""plasmid.master.shorten: locals renamed in the core's blob, meaning kept."""
from __future__ import annotations

import ast
import itertools
import textwrap

from plasmid.master import bootstrap, shorten


def _shortened(source: str) -> str:
    tree = shorten.shorten_locals(ast.parse(textwrap.dedent(source)))
    return ast.unparse(tree)


def _run(source: str, expression: str) -> object:
    namespace: dict = {}
    exec(compile(source, '<test>', 'exec'), namespace)
    return eval(expression, namespace)


def _same_result(source: str, expression: str) -> str:
    """Run *expression* against *source* before and after shortening."""
    short = _shortened(source)
    assert _run(textwrap.dedent(source), expression) == _run(short, expression)
    return short


def _scope_names(short: str) -> dict[str, set[str]]:
    """For each function of *short* (by dotted path: ``Box.__init__``,
    ``make.inc``), the whole names its own scope spells: variables,
    parameters and ``global``/``nonlocal`` declarations, not those of the
    functions, lambdas or classes it holds, nor attributes."""
    scopes: dict[str, set[str]] = {}

    def collect(node: ast.AST, names: set[str], path: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for outer in child.decorator_list + child.args.defaults:
                    collect(outer, names, path)
                inner = scopes.setdefault(path + child.name, set())
                inner.update(arg.arg for arg in ast.walk(child.args)
                             if isinstance(arg, ast.arg))
                for statement in child.body:
                    collect_one(statement, inner, path + child.name + '.')
            elif isinstance(child, ast.ClassDef):
                for statement in child.body:
                    collect_one(statement, set(), path + child.name + '.')
            elif isinstance(child, ast.Lambda):
                collect(child.args, names, path)
            else:
                collect_one(child, names, path)

    def collect_one(node: ast.AST, names: set[str], path: str) -> None:
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            wrapper = ast.Module(body=[node], type_ignores=[])
            collect(wrapper, names, path)
        else:
            collect(node, names, path)

    collect(ast.parse(short), set(), '')
    return scopes


def _attributes(short: str) -> set[str]:
    return {node.attr for node in ast.walk(ast.parse(short))
            if isinstance(node, ast.Attribute)}


def test_scope_names_sees_whole_names_of_one_scope() -> None:
    """The helper the tests below lean on: a name in a nested scope, an
    attribute or a longer name holding it is not the name."""
    scopes = _scope_names('''
counter = 1
def outer(a, *rest, key=counter, **more):
    global g
    b = obj.attr
    def inner(c):
        d = counter
    return lambda e: e
class K(object):
    def m(self):
        pass
''')
    assert scopes == {'outer': {'a', 'rest', 'key', 'more', 'g', 'b', 'obj'},
                      'outer.inner': {'c', 'd', 'counter'},
                      'K.m': {'self'}}


def test_locals_and_self_get_letters_parameters_keep_their_names() -> None:
    short = _same_result('''
        class Box(object):
            def __init__(self, content):
                self.content = content
            def doubled(self, times=2):
                total = []
                for index in range(times):
                    total.append(self.content)
                return total
        def use(value):
            holder = Box(value)
            return holder.doubled(times=3)
        ''', '(use(value="x"), Box(content="y").doubled(times=1))')
    for gone in ('self', 'total', 'index', 'holder'):
        assert gone not in short
    # Callers may pass these by keyword (the calls above do); attributes
    # are not variables.
    scopes = _scope_names(short)
    assert 'content' in scopes['Box.__init__']
    assert 'times' in scopes['Box.doubled']
    assert 'value' in scopes['use']
    assert {'content', 'doubled'} <= _attributes(short)


def test_closures_and_shadowing_inner_scopes_keep_their_meaning() -> None:
    short = _same_result('''
        def outer(items):
            offset = 10
            def add(item):
                return item + offset
            shifted = [add(entry) for entry in items]
            def shadow():
                offset = 1
                return offset
            squares = list(map(lambda entry: entry * entry, items))
            return shifted, shadow(), squares, offset
        ''', 'outer([1, 2])')
    assert 'offset' not in short and 'shifted' not in short
    # A lambda's parameter is a parameter: a name it uses stays.
    assert 'lambda entry' in short


def test_a_letter_the_module_uses_is_never_taken() -> None:
    short = _same_result('''
        a = 'global a'
        def f():
            b = 'local'
            return a, b
        ''', 'f()')
    assert "return (a, " in short


def test_names_another_scope_can_reach_stay() -> None:
    source = '''
        counter = 0
        def bump():
            global counter
            counter += 1
            return counter
        def make():
            count = 0
            def inc():
                nonlocal count
                count += 1
                return count
            return inc
        def peek():
            hidden = 5
            return sorted(locals())
        def holder():
            label = 'x'
            class Kind(object):
                label = 'attribute'
            return Kind.label, label
        class Tools(object):
            @staticmethod
            def join(first, second):
                joined = first + second
                return joined
        '''
    short = _same_result(source, '(bump(), make()(), peek(), holder(), '
                                 'Tools.join("a", "b"))')
    scopes = _scope_names(short)
    assert 'counter' in scopes['bump']
    assert 'count' in scopes['make'] and 'count' in scopes['make.inc']
    assert 'hidden' in scopes['peek']
    assert 'label' in scopes['holder']  # the local, not Kind's attribute
    assert 'first' in scopes['Tools.join']
    assert 'joined' not in short


def test_what_names_show_or_scopes_are_read_stay_as_written() -> None:
    """Cases a review found: each changed meaning in a first version."""
    source = '''
        import sys
        def by_dir():
            value = 1
            return dir()
        def by_eval():
            value = 41
            return eval('value + 1')
        def by_frame():
            value = 41
            return sys._getframe().f_locals['value']
        def nested_name():
            def helper():
                pass
            return helper.__name__
        class Tools(object):
            def double(value):
                doubled = value * 2
                return doubled
            double = staticmethod(double)
            def mangled(self):
                __x = 1
                _Tools__x = 2
                return __x
            @property
            def size(self):
                counted = 3
                return counted
        '''
    short = _same_result(source, '(by_dir(), by_eval(), by_frame(), '
                                 'nested_name(), Tools.double(value=3), '
                                 'Tools().mangled(), Tools().size)')
    assert 'def helper' in short and 'def double(value)' in short
    assert 'counted' not in short


def test_keywords_are_never_short_names() -> None:
    taken = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ')
    names = list(itertools.islice(shorten._short_names(taken), 200))
    assert 'aa' in names and not {'as', 'if', 'in', 'is', 'or'} & set(names)


def test_decorators_and_defaults_are_the_enclosing_scope_s() -> None:
    short = _same_result('''
        limit = 3
        def outer():
            result = []
            def inner(bound=limit):
                return bound
            result.append(inner())
            return result
        ''', 'outer()')
    assert 'bound=limit' in short and 'result' not in short


def test_the_core_shrinks_and_keeps_the_names_others_use() -> None:
    saved = 0
    for name, source in bootstrap._core_sources().items():
        tree = ast.parse(source)
        before = ast.unparse(tree)
        after = ast.unparse(shorten.shorten_locals(ast.parse(source)))
        saved += len(before) - len(after)
        # What a context sees of a module from outside stays: its names.
        assert _public_names(ast.parse(after)) == _public_names(tree), name
    assert saved > 5000


def _public_names(tree: ast.AST) -> set[str]:
    """Module and class level definitions, attributes, keywords passed."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef)):
            names.update(child.name for child in node.body if isinstance(
                child, (ast.FunctionDef, ast.ClassDef)))
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
    return names
