"""``python -m plasmid`` is the ``plasmid`` command."""
import sys

from plasmid.cli import main

sys.exit(main())
