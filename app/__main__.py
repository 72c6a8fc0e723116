"""``python -m app`` and the ``ikstudio`` console script (:func:`main`): catch signals first, then
run the command line (:mod:`app.cli`).

A SIGINT, SIGTERM or SIGHUP that arrives while the command line's modules import is remembered
(:func:`app.signals.catch_early`) and raised once its own handlers are in place, so the command
stops with the shell's status for it (130 for SIGINT) instead of the signal being lost in a
library's import. Only these entry points do this: importing :mod:`app.cli` (as tests do) leaves
the process's handlers alone. (A signal during the interpreter's own start-up, before any of this
runs, is CPython's: a KeyboardInterrupt, or "Fatal Python error: init_import_site" and exit 1
while its ``site`` module imports.)
"""

import sys


def main() -> int:
    """Run ``ikstudio`` with ``sys.argv``; its exit status."""
    from app.signals import catch_early

    catch_early()
    from app.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
