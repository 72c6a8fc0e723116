"""The app's command line: `ikstudio` and its subcommands (`solve`, `record`, ...). It starts the
GUI (:mod:`app.gui`) by name, and imports no other wing."""

from .commands import main as main
