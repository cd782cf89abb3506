"""Reading one-letter options as getopt does (connect/options.py)."""
from __future__ import annotations

import pytest

from plasmid.connect.options import short_flags


@pytest.mark.parametrize('args,flags', [
    (['-C', '-t'], [('C', '-C'), ('t', '-t')]),
    (['-Ctt'], [('C', '-Ctt'), ('t', '-Ctt'), ('t', '-Ctt')]),
    (['-p22', '-N'], [('p', '-p22'), ('N', '-N')]),      # value in the word
    (['-p', '-N'], [('p', '-p')]),                       # value the next word
    (['-Cp', '22', '-f'], [('C', '-Cp'), ('p', '-Cp'), ('f', '-f')]),
    (['host', '-', '--long', '-q'], [('q', '-q')]),
    (['-q', '--', '-f'], [('q', '-q')]),                 # the rest is no option
])
def test_short_flags_read_as_getopt(args: list, flags: list) -> None:
    assert list(short_flags(args, takes_value='p')) == flags
