"""Taichi start-up: backend choice with a safe GPU fallback, and precision.

Never ``ti.init(arch=ti.gpu)``: with no GPU it segfaults or silently picks software OpenGL.
"gpu" asks for CUDA, then Vulkan, and falls back to the CPU with one warning.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

os.environ.setdefault("TI_SKIP_VERSION_CHECK", "ON")
os.environ.setdefault("TI_ENABLE_TELEMETRY", "0")

import taichi as ti  # noqa: E402  (the environment must be set first)

BACKENDS = ("gpu", "cuda", "vulkan", "cpu")
# Genesis' and Python's level names -> taichi's
LOGGING_LEVELS = {"debug": "debug", "info": "info", "warning": "warn", "warn": "warn", "error": "error",
                  "critical": "critical", "trace": "trace"}
PRECISIONS = ("32", "64")


@dataclass
class _State:
    initialised: bool = False
    arch: str = "cpu"
    precision: str = "32"
    seed: int | None = None
    debug: bool = False
    generation: int = 0  # bumped by every init(): buffers of an older generation are invalid


STATE = _State()


def _try_arch(arch, **kwargs) -> bool:
    """Initialise taichi on ``arch``; False when the arch is unavailable here. Taichi's own
    "not supported, falling back" messages are silenced: :func:`init` warns once itself."""
    level = kwargs.get("log_level", "warn")
    try:
        ti.init(arch=arch, **{**kwargs, "log_level": "error"})
    except Exception:  # taichi raises a bare RuntimeError for a missing driver
        return False
    ti.set_logging_level(level)
    return ti.lang.impl.current_cfg().arch == arch


def init(backend: str = "gpu", precision: str = "32", seed: int | None = None, debug: bool = False,
         logging_level: str = "warn") -> str:
    """Initialise (or re-initialise) the engine. Returns the arch in use: "cuda", "vulkan" or "cpu".

    ``precision`` "32" or "64" sets the float type of every buffer and kernel. Calling ``init`` again
    resets taichi: scenes built before it must be built again.
    """
    logging_level = LOGGING_LEVELS.get(str(logging_level).lower(), logging_level)
    if logging_level not in LOGGING_LEVELS.values():
        raise ValueError(f"logging_level: expected one of {sorted(LOGGING_LEVELS)}, got {logging_level!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    precision = str(precision)
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {PRECISIONS}, got {precision!r}")
    if STATE.initialised:
        ti.reset()
    fp = ti.f64 if precision == "64" else ti.f32
    kwargs = dict(default_fp=fp, default_ip=ti.i32, debug=debug, log_level=logging_level,
                  offline_cache=True)
    if seed is not None:
        kwargs["random_seed"] = int(seed)
    candidates = {"gpu": [ti.cuda, ti.vulkan], "cuda": [ti.cuda], "vulkan": [ti.vulkan], "cpu": []}[backend]
    chosen = None
    for arch in candidates:
        if _try_arch(arch, **kwargs):
            chosen = arch
            break
    if chosen is None:
        if backend != "cpu":
            warnings.warn(f"init: backend {backend!r} is not available here; running on the CPU",
                          RuntimeWarning, stacklevel=2)
        ti.init(arch=ti.cpu, **kwargs)
        chosen = ti.cpu
    STATE.initialised = True
    STATE.arch = {ti.cuda: "cuda", ti.vulkan: "vulkan"}.get(chosen, "cpu")
    STATE.precision = precision
    STATE.seed = seed
    STATE.debug = debug
    STATE.generation += 1
    return STATE.arch


def ensure_init() -> None:
    """Initialise on the CPU with defaults if the user never called :func:`init`."""
    if not STATE.initialised:
        init(backend="cpu")


def float_dtype():
    """numpy float dtype matching the engine precision."""
    import numpy as np

    return np.float64 if STATE.precision == "64" else np.float32
