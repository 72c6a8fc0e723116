"""Stopping a long command cleanly on SIGINT, SIGTERM and SIGHUP.

``ikstudio record`` must stop within a second of any of them, finish the video with every frame
written so far, and exit with the shell's status for the signal (128 + its number: 130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP). :func:`stop_on_signals` turns each into
:class:`Interrupted` raised in the main thread, and remembers it: a library that swallows the
exception (trimesh's optional imports catch ``BaseException`` while meshes load lazily) cannot
make the command forget it, because the command also calls :meth:`Signals.check` between frames.
A second signal while the video is being finished is noted, not raised, so the file is closed
whole; after the block, further signals are ignored while the command exits.
"""

from __future__ import annotations

import contextlib
import signal

HANDLED = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s is not None)


class Interrupted(KeyboardInterrupt):
    """A handled signal arrived; ``exit_code`` is the shell's status for it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.exit_code = 128 + signum


class Signals:
    """The first handled signal seen (``signum``, None so far)."""

    def __init__(self):
        self.signum: int | None = None

    def _handler(self, signum, frame):
        if self.signum is None:
            self.signum = signum
            raise Interrupted(signum)

    def check(self) -> None:
        """Raise :class:`Interrupted` if a signal arrived (also one whose exception was swallowed)."""
        if self.signum is not None:
            raise Interrupted(self.signum)


class _Early:
    """The first handled signal since :func:`catch_early`, remembered only (``signum``)."""

    signum: int | None = None

    @classmethod
    def handler(cls, signum, frame):
        if cls.signum is None:
            cls.signum = signum


def catch_early() -> None:
    """Remember SIGINT, SIGTERM and SIGHUP from now on (main thread only), to be raised by the
    next :func:`stop_on_signals` block: the command line calls it first, before its own imports,
    so that a signal in the gap before its handlers are in place is never lost."""
    import threading

    if threading.current_thread() is threading.main_thread():
        for s in HANDLED:
            signal.signal(s, _Early.handler)


@contextlib.contextmanager
def stop_on_signals():
    """Handle SIGINT, SIGTERM and SIGHUP as :class:`Interrupted` while the block runs (main thread
    only: Python runs signal handlers there); the previous handlers come back afterwards. A signal
    :func:`catch_early` remembered is raised as the block starts."""
    signals = Signals()
    previous = {s: signal.signal(s, signals._handler) for s in HANDLED}
    try:
        if _Early.signum is not None and signals.signum is None:
            signals.signum, _Early.signum = _Early.signum, None
            raise Interrupted(signals.signum)
        yield signals
    finally:
        for s, handler in previous.items():  # once stopped by one, the command is ending: ignore the rest
            signal.signal(s, signal.SIG_IGN if signals.signum is not None else handler)
