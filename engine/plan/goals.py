"""Cartesian goals for ``plan_path``: ``goal_link`` / ``goal_pos`` / ``goal_quat`` (with masks).

The goal configurations come from collision-aware IK in the same call (``avoid_collisions=True``,
its margin the ``safety_margin``): up to ``goal_solutions`` per env, the first from the start
configuration, the others from seeded random configurations (:mod:`engine.plan.draws`). Each env
plans to its first solution; an env that fails is planned again to its next one. An env whose IK
found no collision-free solution is invalid with the reason ``goal_unreachable``.
"""

from __future__ import annotations

import numpy as np

from .. import inputs
from .checks import SLACK
from .draws import uniform
from .result import GOAL_UNREACHABLE

_STREAM = 1 << 13  # draw stream of the IK starts (the search and shortcuts use streams below it)


def check_goal(entity, M, goal_pos, goal_quat, goal_pos_mask, goal_rot_mask):
    """``(pos (M, 3), quat (M, 4) | None, pos_mask, rot_mask)``, checked; errors name the argument."""
    batched = entity.configuration.batched
    pos = inputs.batched("goal_pos", goal_pos, (3,), M, batched)
    quat = None if goal_quat is None else inputs.batched("goal_quat", goal_quat, (4,), M, batched)
    return pos, quat, inputs.as_mask("goal_pos_mask", goal_pos_mask), inputs.as_mask("goal_rot_mask", goal_rot_mask)


def ik_goals(entity, envs, link, pos, quat, pos_mask, rot_mask, margin, start, seed, count):
    """``(goals (count, M, n_qs), ok (count, M))``: IK solutions (``ok``: met and collision-free)."""
    cfg = entity.configuration
    M, n = start.shape
    lo, hi = entity.q_limits
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    one = (lambda x: x) if cfg.batched else (lambda x: x[0])
    goals, ok = np.zeros((count, M, n)), np.zeros((count, M), bool)
    for k in range(count):
        init = start if k == 0 else entity.tree.apply_mimic(lo + uniform(seed, _STREAM + k, envs, 0, n) * (hi - lo))
        kw = {"envs_idx": envs} if cfg.batched else {}
        res = entity.inverse_kinematics(link, one(pos), None if quat is None else one(quat), init_qpos=one(init),
                                        pos_mask=pos_mask, rot_mask=rot_mask, seed=(seed + k) & 0x7FFFFFFF,
                                        avoid_collisions=True, collision_margin=margin + 2 * SLACK,
                                        return_info=True, **kw)
        goals[k] = np.asarray(res.qpos, float).reshape(M, n)
        ok[k] = np.asarray(res.success).reshape(M)
    return goals, ok


def plan_to_solutions(plan, start, goals, ok, envs, T):
    """Run ``plan(start_rows, goal_rows, env_rows) -> dict`` (as ``engine.plan.api``'s, ``T``
    waypoints) for each env's solutions in turn until it succeeds; the merged dict, with ``goal
    (M, n_qs)`` added (the start where no solution was found)."""
    M, n = start.shape
    out = {"path": np.repeat(start[None], T, axis=0), "valid": np.zeros(M, bool),
           "reason": [GOAL_UNREACHABLE] * M, "length": np.zeros(M), "nodes": np.zeros(M, np.int64),
           "attempts": np.zeros(M, np.int64), "vertices": [None] * M, "goal": start.copy()}
    remaining = np.arange(M)
    for k in range(len(goals)):
        rows = remaining[ok[k, remaining]]
        if not len(rows):
            continue
        got = plan(start[rows], goals[k, rows], envs[rows])
        out["path"][:, rows] = got["path"]
        for key in ("valid", "length", "goal"):
            out[key][rows] = got[key] if key != "goal" else goals[k, rows]
        out["nodes"][rows] += got["nodes"]
        out["attempts"][rows] += got["attempts"]
        for j, r in enumerate(rows):
            out["reason"][r], out["vertices"][r] = got["reason"][j], got["vertices"][j]
        remaining = remaining[~out["valid"][remaining]]
    return out


__all__ = ["check_goal", "ik_goals", "plan_to_solutions"]
