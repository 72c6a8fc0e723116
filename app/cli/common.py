"""What the ``ikstudio`` subcommands share: exit statuses, the error they report, and starting the
engine quietly. A module of its own so that the subcommands (:mod:`app.cli.commands`, :mod:`app.cli.solve`)
import it and never each other.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure to report as ``ikstudio: error: ...`` with exit status ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAIL):
        super().__init__(message)
        self.code = code


@contextlib.contextmanager
def _silenced_fds():
    """Silence stdout and stderr at the file-descriptor level (taichi's C++ logs bypass Python)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = []
    try:
        with open(os.devnull, "w") as devnull:
            for fd in (1, 2):
                try:
                    saved.append((fd, os.dup(fd)))
                    os.dup2(devnull.fileno(), fd)
                except OSError:
                    pass
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)


def init_engine(backend: str):
    """``engine.init(backend)`` without taichi's console noise; init's own one-line note (a CPU
    fallback, a software device skipped) goes to stderr. Returns the :class:`engine.runtime.backend.Backend`."""
    import engine

    with warnings.catch_warnings(record=True) as caught, _silenced_fds(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("always")
        arch = engine.init(backend=backend)
    for w in caught:
        if issubclass(w.category, RuntimeWarning) and str(w.message).startswith("init: "):
            print(f"note: {str(w.message).removeprefix('init: ')}", file=sys.stderr)
    return arch
