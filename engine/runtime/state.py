"""The engine's process-wide runtime state: what :func:`engine.runtime.backend.init` chose, and the
lock every kernel launch and compile holds.

Kept apart from :mod:`engine.runtime.backend` (which starts taichi) so that kernels and launch
helpers can read it without importing the code that starts them: no import circle.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np


@dataclass
class RuntimeState:
    initialised: bool = False
    arch: str = "cpu"
    device: str = ""
    software: bool = False
    precision: str = "32"
    seed: int | None = None
    debug: bool = False
    generation: int = 0  # bumped by every init() and destroy(): scenes of an older generation are invalid
    runtime: int = 0  # bumped each time taichi's runtime is (re)started: kernels and device arrays of an
    # older runtime are gone (init() with the settings in use keeps the runtime: engine.runtime.backend)


STATE = RuntimeState()
# Serialises every kernel launch and compile (engine.runtime.launch), and init() against them:
# taichi's runtime and the launch contexts kept per kernel are shared by all threads.
LOCK = threading.RLock()


def float_dtype():
    """numpy float dtype matching the engine precision."""
    return np.float64 if STATE.precision == "64" else np.float32
