"""Master-only code: the public Router, bootstrap building, module serving.

Requires Python 3.9+; never shipped to targets.
"""
