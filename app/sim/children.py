"""How the app starts its child Pythons (the IK solver's children and the generic solver's
warm-up, :mod:`app.sim.solver_proc` and :mod:`app.sim.warmup`): where they find the app, the
environment they run in, and the engine settings they copy from the parent."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding app/ and engine/


def child_env() -> dict:
    """The environment a solver child runs in: this one, taichi's banner off, mujoco's GL off unless
    ``MUJOCO_GL`` says otherwise (a child only compiles models: importing mujoco with GL probes GLFW,
    ~0.1 s of CPU), and this checkout first on ``PYTHONPATH`` (the child imports the same app and
    engine as this process)."""
    env = dict(os.environ, ENABLE_TAICHI_HEADER_PRINT="0")
    env.setdefault("MUJOCO_GL", "disable")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)
    return env


def engine_init_args() -> dict:
    """The parent's ``engine.init`` arguments (the child initialises the same backend)."""
    from engine.runtime.state import STATE

    st = STATE
    if not st.initialised:
        return {"backend": "cpu"}
    return {"backend": st.arch, "precision": st.precision, "seed": st.seed, "debug": st.debug}
