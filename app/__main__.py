"""``python -m app`` runs the ``ikstudio`` command line (see :mod:`app.cli.commands`)."""

import sys

from app.cli import main

sys.exit(main())
