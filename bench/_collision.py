"""The collision-aware case of ``bench/ik.py``: the Panda among the obstacles of
``scenes/panda_clutter.yaml`` (a table top, a pillar, a ball, an overhead bar and a crate).

Targets (:mod:`_near`, judged by Pinocchio + coal on the collision meshes, independent of the
model under test): the hand poses of seeded random configurations that are collision-free at
mesh level and

* ``near``: pass within 4 cm of an obstacle (the hard case: a loose model reads many of them as
  colliding);
* ``far``: stay farther than 4 cm from every obstacle.

Models: ``new`` (the default: the cover fit and the links' hulls near contact,
``collision_model()``), ``cover`` (the cover fit's spheres alone, ``collision_model(hulls=False)``)
and ``old`` (the cluster fit of 8 spheres per link, ``collision_model(spheres_per_link=8,
hulls=False)``, the model before issue 29).

Each batch is solved plain (``inverse_kinematics``) and with ``avoid_collisions=True``,
alternating, so that the machine's load weighs on both alike; the ratio is plain time over
avoiding time (1.0: free). Columns: "ok" (the solver's success flag), "good" (success and
collision-free at mesh level, by coal), "false" (success yet colliding at mesh level, by coal:
for the avoiding solver a false success; it must be 0), and the ms/call of each. The judged calls
ask for the info (``return_info=True``: each answer's exact ``min_distance`` too); the timed ones
do not, as a Genesis script calls IK (the answers' checks then stop at the margin).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from _near import NEAR, clutter_scene, hand_poses, near_configurations

HAND = "panda_hand"
FITS = {"new": {}, "cover": dict(hulls=False), "old": dict(spheres_per_link=8, hulls=False)}
_TARGETS: dict = {}  # (kind, n, seed) -> configurations, found once per run


def target_configurations(panda, judge, kind: str, n: int, seed: int) -> np.ndarray:
    """``(n, n_qs)`` mesh-free configurations near (within 4 cm) or far from the obstacles."""
    key = (kind, n, seed)
    if key not in _TARGETS:
        if kind == "near":
            _TARGETS[key] = near_configurations(panda, judge, n, seed)
        else:
            _TARGETS[key] = near_configurations(panda, judge, n, seed + 10_000, near=np.inf, beyond=NEAR)
    return _TARGETS[key]


def bench_collision(n_envs: int, args, kind: str = "near", model: str = "new") -> dict:
    """Plain and avoiding IK over ``ceil(min_targets / n_envs)`` batches of ``n_envs`` targets of
    ``kind`` with the collision ``model``: ``{plain, avoid}`` each with ``s`` (median seconds per
    call), ``ok``, ``good``, ``false`` (shares of all targets); ``batches``."""
    scene, panda, judge = clutter_scene(n_envs)  # judge: coal on the meshes, whatever the model
    panda.collision_model(**FITS[model])
    n_batches = max(1, -(-args.min_targets // n_envs))
    qs = target_configurations(panda, judge, kind, n_batches * n_envs, args.seed)
    batches = [hand_poses(panda, qs[b * n_envs:(b + 1) * n_envs]) for b in range(n_batches)]
    common = dict(seed=args.seed, return_info=True, kernel=args.kernel)
    timed = dict(common, return_info=False)
    modes = {"plain": {}, "avoid": dict(avoid_collisions=True)}
    out = {}
    for mode, extra in modes.items():  # warm-up (compiles) and the answers that are judged
        ok, bad = [], []
        for pos, quat in batches:
            r = panda.inverse_kinematics(HAND, pos, quat, **common, **extra)
            success = np.asarray(r.success, bool)
            ok.append(success)
            bad.append(np.array([s and judge.collides(q) for s, q in zip(success, np.asarray(r.qpos))]))
        ok, bad = np.concatenate(ok), np.concatenate(bad)
        out[mode] = dict(ok=float(ok.mean()), good=float((ok & ~bad).mean()), false=float(bad.mean()), times=[])
    deadline = time.perf_counter() + args.budget * 2
    cycles = 0
    while cycles < args.repeats or time.perf_counter() < deadline:
        for mode, extra in modes.items():  # alternating: the same load on both
            t0 = time.perf_counter()
            for pos, quat in batches:  # as a Genesis script calls it: the answers only
                panda.inverse_kinematics(HAND, pos, quat, **timed, **extra)
            out[mode]["times"].append((time.perf_counter() - t0) / len(batches))
        cycles += 1
        if cycles >= 50:
            break
    for row in out.values():
        row["s"] = statistics.median(row.pop("times"))
    out["batches"] = len(batches)
    out["spheres"] = panda.collision_model().spheres.n_spheres
    scene.destroy()
    return out


__all__ = ["FITS", "bench_collision", "target_configurations"]
