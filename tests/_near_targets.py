"""The Panda among the obstacles of ``scenes/panda_clutter.yaml`` and hand targets near them,
shared by the near-obstacle tests (``test_ik_collision_near.py``, ``test_ik_window.py``).

The targets are the hand poses of seeded configurations that Pinocchio + coal find collision-free
at mesh level and within a few centimetres of an obstacle, so the same in every process.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from _coal import MeshJudge, near_free_configurations

SCENE = Path(__file__).resolve().parent.parent / "scenes" / "panda_clutter.yaml"
HAND = "panda_hand"
WINDOW_SEED = 300  # test_ik_window.py's targets: the first seed of their draws


def window_envs() -> int:
    """How many envs (and targets) test_ik_window.py solves on the test backend."""
    from _backend import active

    return 64 if active() == "cpu" else 32


def clutter_panda(n: int):
    """``(scene, panda, judge)``: the Panda (URDF, fixed base) among the clutter's obstacles, built
    for ``n`` envs on the engine already started; ``judge`` a :class:`MeshJudge` over them."""
    import engine as gs
    from engine.scenefile import io
    from engine.scenefile.obstacles import add_obstacles

    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    morphs = [b.morph for b in add_obstacles(io.load(SCENE), scene)]
    scene.build(n_envs=n)
    return scene, panda, MeshJudge(panda, morphs)


def near_hand_targets(panda, judge: MeshJudge, n: int, seed: int, near: float = 0.04):
    """Hand targets ``(pos (n, 3) m, quat (n, 4) wxyz)``: the hand's poses at ``n`` configurations
    ``judge`` finds free with an obstacle within ``near`` (m), drawn from ``seed`` on."""
    qs = near_free_configurations(panda, judge, n, seed, near=near, chunk=64)
    pose = panda.configuration.fk_poses(np.ascontiguousarray(qs, panda.configuration.dtype))
    hand = panda.get_link(HAND).idx_local
    return pose[:, hand, :3].astype(float), pose[:, hand, 3:].astype(float)


def avoiding_digest(panda, pos, quat) -> str:
    """SHA-256 of the answers of avoiding calls on ``pos`` / ``quat`` (margins 0 and 2 cm; every
    stage of :mod:`engine.ik.avoiding` runs on the clutter's near targets): the bytes a second
    process must give."""
    h = hashlib.sha256()
    for margin in (0.0, 0.02):
        r = panda.inverse_kinematics(HAND, pos, quat, seed=7, return_info=True, avoid_collisions=True,
                                     collision_margin=margin)
        for name in ("qpos", "error", "success", "sample", "iterations", "min_distance"):
            h.update(np.ascontiguousarray(getattr(r, name)).tobytes())
    return h.hexdigest()


def avoiding_digest_in_this_process() -> str:
    """:func:`avoiding_digest` on test_ik_window.py's targets, in a process of its own: starts the
    test backend (``_backend.active()``) and builds the scene."""
    from _backend import init_engine

    init_engine(precision="32")
    n = window_envs()
    scene, panda, judge = clutter_panda(n)
    out = avoiding_digest(panda, *near_hand_targets(panda, judge, n, WINDOW_SEED))
    scene.destroy()
    return out
