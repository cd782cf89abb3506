"""Reading options as getopt does (connect/options.py)."""
from __future__ import annotations

import pytest

from plasmid.connect.options import flags


@pytest.mark.parametrize('args,found', [
    (['-C', '-t'], [('C', '-C'), ('t', '-t')]),
    (['-Ctt'], [('C', '-Ctt'), ('t', '-Ctt'), ('t', '-Ctt')]),
    (['-p22', '-N'], [('p', '-p22'), ('N', '-N')]),      # value in the word
    (['-p', '-N'], [('p', '-p')]),                       # value the next word
    (['-Cp', '22', '-f'], [('C', '-Cp'), ('p', '-Cp'), ('f', '-f')]),
    (['host', '-', '-q'], [('q', '-q')]),
    (['-q', '--', '-f'], [('q', '-q')]),                 # the rest is no option
    (['--long', '-q'], [('--long', '--long'), ('q', '-q')]),
    (['--port', '-q', '-f'], [('--port', '--port'), ('f', '-f')]),
    (['--port=-q', '-f'], [('--port', '--port=-q'), ('f', '-f')]),
    (['-q', '--', '--port'], [('q', '-q')]),
])
def test_options_read_as_getopt(args: list, found: list) -> None:
    assert list(flags(args, 'p', ('--port',))) == found
