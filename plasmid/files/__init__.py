"""Files copied to and from contexts: ``plasmid.put_file`` and
``plasmid.fetch_file``.

``transfer`` is the master's half (Python 3 only); ``remote`` is shipped
into contexts (Python 2.7-compatible).  This file stays empty of code: a
context imports it on its way to ``remote``.
"""
