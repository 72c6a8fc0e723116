"""Shared pieces of the continuity and tracking tests (tests/test_ik_tracking.py).

:func:`restart_starts` computes, independently of the kernels, where each random restart of an
IK call starts: the solver draws restart ``s`` of env ``e`` for qpos entry ``q`` as
``lower + u (upper - lower)``, ``u`` a PCG-style integer hash of ``(seed, e, s, q)`` (documented in
:mod:`engine.kernels.solver`), here written again in numpy for the reference.
"""

from __future__ import annotations

import hashlib

import numpy as np

N = 16
HAND = "panda_hand"
MASK = 0xFFFFFFFF


def _hash_uniform(seed: int, a: int, b: int, c: int) -> float:
    h = ((seed & MASK) * 747796405 + 2891336453) & MASK
    h = ((h ^ (a & MASK)) * 2654435761) & MASK
    h = (((h >> 16) ^ h) * 0x45D9F3B) & MASK
    h = ((h ^ (b & MASK)) * 2246822519) & MASK
    h = (((h >> 15) ^ h) * 0x2C1B3C6D) & MASK
    h = ((h ^ (c & MASK)) * 3266489917) & MASK
    h = (((h >> 16) ^ h) * 0x297A2D39) & MASK
    h = (h >> 15) ^ h
    return (h >> 8) / 16777216.0


def restart_starts(robot, q0: np.ndarray, seed: int, n_samples: int, moved: list[int]) -> np.ndarray:
    """``(n_samples, n_envs, n_qs)``: each sample's start (sample 0: ``q0``; restart s > 0: the
    qpos entries ``moved``, the arm's bounded hinges, drawn within the joint limits, float32)."""
    lo, hi = (np.asarray(v, np.float32) for v in robot.q_limits)
    out = np.repeat(q0[None].astype(np.float32), n_samples, axis=0)
    for s in range(1, n_samples):
        for e in range(q0.shape[0]):
            for q in moved:
                u = np.float32(_hash_uniform(seed, e, s, q))
                out[s, e, q] = lo[q] + u * (hi[q] - lo[q])
    return out


def far_problems(robot, seed: int, n: int = N):
    """Starts ``(n, n_qs)`` and hand targets (pos, quat) from FK of other random configurations:
    many warm starts fail (the target is far), while restarts reach it on one branch or another."""
    rng = np.random.default_rng(seed)
    lo, hi = robot.q_limits
    q0 = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo), (n, robot.n_qs))
    qt = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo), (n, robot.n_qs))
    pos, quat = robot.forward_kinematics(qt)
    hand = robot.get_link(HAND).idx_local
    return q0, pos[:, hand].astype(float), quat[:, hand].astype(float)


def panda_scene(n: int = N):
    """The Panda (URDF, fixed base) built for ``n`` envs on the engine already started."""
    import engine as gs

    scene = gs.Scene(show_FPS=False)
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.build(n_envs=n)
    return scene, robot


def continuity_digest() -> str:
    """:func:`answers_digest` in a process of its own: starts the test backend
    (``_backend.active()``) and builds the Panda."""
    from _backend import init_engine

    init_engine(precision="32")
    scene, robot = panda_scene()
    out = answers_digest(robot)
    scene.destroy()
    return out


def answers_digest(robot) -> str:
    """SHA-256 of the answers of two fixed calls whose warm starts often fail (so continuity picks
    among restarts), per-robot and generic: what a second process must reproduce bit for bit."""
    q0, pos, quat = far_problems(robot, 3)
    h = hashlib.sha256()
    for kernel in ("per_robot", "generic"):
        res = robot.inverse_kinematics(robot.get_link(HAND), pos=pos, quat=quat, init_qpos=q0, seed=11,
                                       max_samples=12, kernel=kernel, return_info=True)
        for name in ("qpos", "error", "success", "sample", "step", "warm_start_success"):
            h.update(np.ascontiguousarray(getattr(res, name)).tobytes())
    return h.hexdigest()
