"""The backend the kinematics reference tests run on.

The CPU by default (CI has no GPU). On a GPU machine, ``IKSTUDIO_TEST_BACKEND=cuda`` runs the
same reference tests on the GPU: FK and Jacobians against MuJoCo and Pinocchio and against finite
differences, IK checked by the FK of its answers, the state API, IK plans and the per-robot
kernels (see the README, "Tests on a GPU"). A backend that does not start is then an error, not a
silent fallback to the CPU.
"""

from __future__ import annotations

import os

import engine

TEST_BACKEND = os.environ.get("IKSTUDIO_TEST_BACKEND", "cpu")


def init_engine(precision: str = "32") -> str:
    """``engine.init`` on :data:`TEST_BACKEND` in ``precision``; returns the arch in use."""
    arch = engine.init(backend=TEST_BACKEND, precision=precision)
    if TEST_BACKEND != "cpu" and arch == "cpu":
        raise RuntimeError(f"IKSTUDIO_TEST_BACKEND={TEST_BACKEND!r}: that backend did not start "
                           "(the engine fell back to the CPU)")
    return arch
