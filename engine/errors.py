"""The engine's exceptions: one root, :class:`IKStudioError`, so ``except IKStudioError`` catches
everything the engine raises on purpose.

Each also derives from the built-in exception its kind has always been (a bad value is still a
``ValueError``, an unknown name still a ``KeyError``), so code written against Genesis or against
earlier versions of this project keeps catching what it caught. Messages name the argument, what
it got and what it expects.
"""

from __future__ import annotations


class IKStudioError(Exception):
    """Root of every error the engine raises on purpose."""


class InvalidValueError(IKStudioError, ValueError):
    """An argument has the right type but a value, shape or range the call does not take."""


class InvalidTypeError(IKStudioError, TypeError):
    """An argument has a type the call does not take."""


class OutOfRangeIndexError(IKStudioError, IndexError):
    """An index (env, dof, link, qpos entry) outside its range."""


class UnknownNameError(IKStudioError, KeyError):
    """A link, joint or robot name that does not exist; the message lists what does."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class StateError(IKStudioError, RuntimeError):
    """A call made in the wrong state: a scene not built yet, built before a later ``init``, ..."""


class OutOfMemoryError(IKStudioError, MemoryError):
    """A batch too large for the memory its call needs; the message names the call and the size."""


class MissingFileError(IKStudioError, FileNotFoundError):
    """A file or folder an argument names does not exist."""


class NotCoveredError(IKStudioError, AttributeError):
    """A Genesis feature that is not part of this engine (dynamics, cameras, other solvers, ...):
    the message names the feature and says so. An ``AttributeError``, as Genesis' missing names are."""
