"""What the master adds to a remote call's error so that it explains itself.

A function of the script you run is imported in the context from the
script's file (under an alias, so its ``if __name__ == '__main__':`` block
stays out), which runs the script's top level there.  Code at the top level
that is not under that guard, such as ``with plasmid.Router() as router:``,
then fails in the context with an error that names something else
(``module 'plasmid' has no attribute 'Router'``: a context's plasmid has no
master API).  The remote traceback shows where: a ``<module>`` frame of the
script.  Such an error gets a hint that says so.
"""
from __future__ import annotations

import re
from typing import Optional

from plasmid.core.errors import CallError
from plasmid.master import main_script

_FRAME = re.compile(r'^  File "(?P<path>.+)", line (?P<line>\d+), in <module>$',
                    re.MULTILINE)


def explained(error: CallError) -> CallError:
    """*error*, or a copy whose message says why it happened."""
    line = _top_level_line(error.remote_traceback)
    if line is None:
        return error
    hint = ('raised by the top level of your script (%s, line %d), which ran '
            'in the context as it imported the script for the function '
            'called: put that code under "if __name__ == \'__main__\':"'
            % (main_script.path(), line))
    return CallError(error.type_name, '%s (%s)' % (error.message, hint),
                     error.remote_traceback)


def _top_level_line(remote_traceback: str) -> Optional[int]:
    """The line of the script's top level a remote traceback passed
    through, if it did."""
    path = main_script.path()
    if not path or not remote_traceback:
        return None
    for frame in _FRAME.finditer(remote_traceback):
        if frame.group('path') == path:
            return int(frame.group('line'))
    return None
