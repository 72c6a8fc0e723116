"""The backends the kinematics reference tests run on.

The reference modules (FK and Jacobians against MuJoCo, Pinocchio and finite differences, IK
judged by FK, IK semantics and honest success flags, the state API, IK plans, the per-robot
kernels, thread safety) take the module-scoped ``backend`` fixture of ``conftest.py``, so each of
them runs once per backend in :data:`TEST_BACKENDS` and its test ids end in ``-cpu`` / ``-vulkan``.

``IKSTUDIO_TEST_BACKENDS`` (comma-separated) sets the list; the default, ``cpu,vulkan``, runs
every reference test on the CPU and again on Vulkan (Mesa's lavapipe on a machine without a GPU,
Debian package ``mesa-vulkan-drivers``). On a GPU machine ``IKSTUDIO_TEST_BACKENDS=cuda`` runs them
on CUDA. A backend that does not start is a failure under ``CI=true`` (a skip elsewhere), never a
silent fallback to the CPU.
"""

from __future__ import annotations

import os

from _support import skip_or_fail

KNOWN = ("cpu", "vulkan", "cuda")


def _from_environment() -> tuple[str, ...]:
    raw = os.environ.get("IKSTUDIO_TEST_BACKENDS") or os.environ.get("IKSTUDIO_TEST_BACKEND") or "cpu,vulkan"
    names = tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    unknown = [n for n in names if n not in KNOWN]
    if unknown or not names:
        raise ValueError(f"IKSTUDIO_TEST_BACKENDS: expected a comma-separated list of {KNOWN}, got {raw!r}")
    return names


TEST_BACKENDS = _from_environment()
_active = {"backend": TEST_BACKENDS[0]}


def use(backend: str) -> None:
    """Make ``backend`` the one :func:`init_engine` starts (the ``backend`` fixture calls this);
    skip (or, under CI, fail) when this machine cannot run it."""
    from engine.runtime import devices  # not at import: conftest imports this module before taichi's warnings filter

    if backend == "vulkan" and not devices.vulkan_devices():
        skip_or_fail("no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")
    if backend == "cuda" and not devices.cuda_device_name():
        skip_or_fail("no CUDA device")
    _active["backend"] = backend


def active() -> str:
    """The backend of the reference module now running."""
    return _active["backend"]


def init_engine(precision: str = "32") -> str:
    """``engine.init`` on the active backend in ``precision``; returns the arch in use. A backend
    that falls back to another is an error."""
    import engine

    backend = active()
    arch = engine.init(backend=backend, precision=precision)
    if arch != backend:
        raise RuntimeError(f"test backend {backend!r} did not start (the engine runs on {arch!r})")
    return arch
