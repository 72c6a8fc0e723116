"""Errors raised while turning a robot file into a :class:`KinematicTree`."""


from ..errors import IKStudioError


class ModelLoadError(IKStudioError, ValueError):
    """A robot file could not be read: the message names the file and the offending element."""
