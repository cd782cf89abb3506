"""Files copied to and from contexts: ``plasmid.put_file``,
``plasmid.fetch_file`` and ``plasmid.broadcast_file``.

``transfer`` and ``broadcast`` are the master's half (Python 3 only);
``remote`` and ``relay`` are shipped into contexts (Python 2.7-compatible).
This file stays empty of code: a context imports it on its way to
``remote``.
"""
