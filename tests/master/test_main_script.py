"""The script the master runs, as contexts see it (plasmid.master.
main_script): what only its ``if __name__ == '__main__':`` block defines
cannot be called in a context, and a call of it says so at once."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from plasmid.master import main_script

SCRIPT = '''
import plasmid

def top():
    return 'top'

if __name__ == '__main__':
    def guarded():
        return 'guarded'

    class Tool:
        @staticmethod
        def run():
            return 'run'

    def top():  # defined at the top level too: found there
        return 'top'

    with plasmid.Router() as router:
        ctx = router.local()
        print(ctx.call(top))
        for func in (guarded, Tool.run):
            try:
                ctx.call(func)
            except TypeError as exc:
                print(exc)
'''


def test_a_function_only_the_guard_defines_fails_at_once(tmp_path) -> None:
    """Before: a CallError from the context, "AttributeError: module
    '__plasmid_main__' has no attribute 'guarded'"."""
    script = tmp_path / 'script.py'
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script)], capture_output=True,
                          text=True, timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    top, guarded, method = done.stdout.splitlines()
    assert top == 'top'
    for line, name in ((guarded, 'guarded'), (method, 'Tool')):
        assert line.startswith('cannot call <function')
        assert ('%s is defined under "if __name__ == \'__main__\':" in %s'
                % (name, script)) in line, line


def test_which_names_only_the_guard_defines(tmp_path) -> None:
    source = tmp_path / 'names.py'
    source.write_text(textwrap.dedent('''
        try:
            def in_try(): pass
        except ImportError:
            def in_handler(): pass
        if '__main__' == __name__:
            def reversed_guard(): pass
            if True:
                def nested_in_guard(): pass
        else:
            def in_else(): pass  # runs on import
        if __name__ != '__main__':
            def not_a_guard(): pass
        def outer():
            def inner(): pass
    '''))
    assert main_script._defined_only_under_guard(str(source)) == \
        frozenset(['reversed_guard', 'nested_in_guard'])


def test_a_script_that_does_not_parse_names_nothing(tmp_path) -> None:
    source = tmp_path / 'broken.py'
    source.write_text('if __name__ == "__main__":\n    def f(:\n')
    assert main_script._defined_only_under_guard(str(source)) == frozenset()
