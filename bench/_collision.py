"""The collision-aware case of ``bench/ik.py``: the Panda among a table and four obstacles.

Scene: example-robot-data's Panda URDF (its SRDF, the sphere model's default 8 spheres per link),
a table, a pillar, a ball, an overhead bar and a crate (the scene of
``tests/test_ik_collision.py``). Targets: the hand poses of uniform random configurations that the
sphere model calls collision-free, so every target has an answer the solver may accept. Each
batch is solved twice per cycle, plain (``inverse_kinematics``) and with
``avoid_collisions=True``, alternating, so that the machine's load weighs on both alike; the
ratio is plain time over avoiding time (1.0: free; the issue's goal is >= 0.25 at 1024 envs).

Columns: success (the solver's flag; every success is within the tolerances, checked by FK in
the IK bench's other cases), "coll": the share of all answers that report success and yet collide
by the sphere model (``in_collision``; sphere clearance implies mesh clearance, so for the
avoiding solver this is its false-success rate at mesh level too), and the ms/call of each.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import engine
from engine.collision.robot import sample_qpos

CLUTTER = (  # kind, morph arguments (m)
    ("Box", dict(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3))),          # table
    ("Cylinder", dict(pos=(0.45, 0.25, 0.45), radius=0.04, height=0.3)),  # pillar
    ("Sphere", dict(pos=(0.5, -0.25, 0.38), radius=0.07)),               # ball
    ("Box", dict(pos=(0.45, 0.0, 0.85), size=(0.06, 0.9, 0.06))),        # overhead bar
    ("Box", dict(pos=(0.7, 0.0, 0.4), size=(0.14, 0.2, 0.2))),           # crate
)
HAND = "panda_hand"


def clutter_scene(n_envs: int):
    """(scene, panda) built with ``n_envs`` envs."""
    scene = engine.Scene()
    panda = scene.add_entity(engine.morphs.URDF(file="erd:panda", fixed=True))
    for kind, kwargs in CLUTTER:
        scene.add_entity(getattr(engine.morphs, kind)(fixed=True, **kwargs))
    scene.build(n_envs=n_envs)
    return scene, panda


def free_targets(panda, n_batches: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_batches`` batches of n_envs hand poses ``(pos (n, 3), quat (n, 4))`` of sphere-free
    random configurations."""
    n = panda.configuration.n_envs
    qs, k = [], 0
    while sum(map(len, qs)) < n * n_batches:
        q = sample_qpos(panda.tree, n, seed=seed + k)
        qs.append(q[~panda.in_collision(q)])
        k += 1
    qs = np.concatenate(qs)[:n * n_batches]
    hand = panda.get_link(HAND).idx_local
    out = []
    for b in range(n_batches):
        pos, quat = panda.forward_kinematics(qs[b * n:(b + 1) * n])
        out.append((np.asarray(pos[:, hand], np.float32), np.asarray(quat[:, hand], np.float32)))
    return out


def bench_collision(n_envs: int, args) -> dict:
    """Plain and avoiding IK over ``ceil(min_targets / n_envs)`` batches of ``n_envs`` targets:
    ``{plain, avoid}`` each with ``s`` (median seconds per call), ``ok`` (success share), ``coll``
    (share of answers reporting success while in collision)."""
    scene, panda = clutter_scene(n_envs)
    batches = free_targets(panda, max(1, -(-args.min_targets // n_envs)), args.seed)
    common = dict(seed=args.seed, return_info=True, kernel=args.kernel)
    modes = {"plain": {}, "avoid": dict(avoid_collisions=True)}
    out = {}
    for mode, extra in modes.items():  # warm-up (compiles) and the answers that are judged
        ok, coll = [], []
        for pos, quat in batches:
            r = panda.inverse_kinematics(HAND, pos, quat, **common, **extra)
            ok.append(r.success)
            coll.append(r.success & panda.in_collision(r.qpos))
        out[mode] = dict(ok=float(np.concatenate(ok).mean()), coll=float(np.concatenate(coll).mean()), times=[])
    deadline = time.perf_counter() + args.budget * 2
    cycles = 0
    while cycles < args.repeats or time.perf_counter() < deadline:
        for mode, extra in modes.items():  # alternating: the same load on both
            t0 = time.perf_counter()
            for pos, quat in batches:
                panda.inverse_kinematics(HAND, pos, quat, **common, **extra)
            out[mode]["times"].append((time.perf_counter() - t0) / len(batches))
        cycles += 1
        if cycles >= 50:
            break
    for row in out.values():
        row["s"] = statistics.median(row.pop("times"))
    out["batches"] = len(batches)
    scene.destroy()
    return out


__all__ = ["CLUTTER", "bench_collision", "clutter_scene", "free_targets"]
