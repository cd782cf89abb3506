"""Files copied to and from contexts: ``plasmid.put_file``,
``plasmid.fetch_file``, ``plasmid.broadcast_file`` and
``plasmid.gather_file``.

``transfer``, ``broadcast`` and ``gather`` are the master's half (Python 3 only);
``remote``, ``relay`` and ``unfinished`` are shipped into contexts (Python
2.7-compatible).
This file stays empty of code: a context imports it on its way to
``remote``.
"""
