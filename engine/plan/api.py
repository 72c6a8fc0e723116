"""``plan_path`` on the entity: Genesis 1.4.5's call, signature, defaults and return conventions.

``plan_path(qpos_goal, qpos_start=None, max_nodes=2000, resolution=0.05, timeout=None, max_retry=1,
smooth_path=True, num_waypoints=300, ignore_collision=False, planner="RRTConnect", envs_idx=None,
return_valid_mask=False, *, ee_link_name=None, with_entity=None)`` returns the waypoints
``(num_waypoints, [n_envs,] n_qs)`` (no env axis for an unbatched scene), and with
``return_valid_mask`` also the valid mask ``([n_envs])``.

Beyond Genesis (keywords, off by default): ``safety_margin`` (m: every returned segment stays this
far from collision), ``seed`` (the draws; None: from the engine's generator, which
``engine.init(seed=...)`` seeds), ``return_info`` (a :class:`~engine.plan.result.PlanResult`
instead: valid, failure reason, length, planning time, nodes per env), ``return_trajectory``
(a :class:`~engine.plan.timing.Trajectory` instead: qpos / dofs_vel / dofs_acc every ``dt`` s
(default: the scene's), within ``max_velocity`` (per dof, or one number; default: the robot
file's velocity limits) and ``max_acceleration`` (default: ``max_velocity / 0.5 s``), its
samples certified like the waypoints), a Cartesian goal instead of ``qpos_goal``: ``goal_link``,
``goal_pos`` ``([n_envs,] 3)``, ``goal_quat`` ``([n_envs,] 4)`` or None, ``goal_pos_mask`` /
``goal_rot_mask``, ``goal_solutions`` (IK solutions tried per env: :mod:`engine.plan.goals`).
``ee_link_name`` + ``with_entity`` (Genesis' pair): a free single body carried rigidly by that
link, its grasp as it stands at the call, checked like the link's own spheres
(:mod:`engine.plan.carried`).

Differences from Genesis, on purpose: a returned path is *certified*: every segment between
consecutive waypoints is proven free with the sphere model (not only points sampled at
``resolution``); an env that failed gets its start repeated (playing it does not move the robot);
start and goal are checked first (in collision, or outside the joint limits: invalid at once);
``max_retry`` is the number of attempts, each for the envs still failing; the state of the scene
is never touched. ``resolution`` is Genesis' step: at most that much per joint per tree edge.
"""

from __future__ import annotations

import time

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError
from ..runtime.locking import serialised
from ..runtime.randomness import draw_seed
from . import result as R
from .carried import carried_spheres
from .checks import Checker
from .goals import check_goal, ik_goals, plan_to_solutions
from .search import grow
from .smoothing import TIMED_ROUNDS, TIMED_STREAM, fit_vertices, merge_collinear, path_length, resample, shortcut
from .timing import ACCEL_TIME, Trajectory, time_path

PLANNERS = ("RRTConnect", "RRT")
LIMIT_TOL = 1e-5  # rad / m: start and goal may sit this far outside a joint limit (float32 IK answers)


class PlanMethods:
    """``plan_path``, mixed into :class:`~engine.entity.RigidEntity`."""

    @serialised
    def plan_path(self, qpos_goal=None, qpos_start=None, max_nodes=2000, resolution=0.05, timeout=None, max_retry=1,
                  smooth_path=True, num_waypoints=300, ignore_collision=False, planner="RRTConnect", envs_idx=None,
                  return_valid_mask=False, *, ee_link_name=None, with_entity=None, safety_margin=0.0, seed=None,
                  return_info=False, return_trajectory=False, max_velocity=None, max_acceleration=None, dt=None,
                  goal_link=None, goal_pos=None, goal_quat=None, goal_pos_mask=(True, True, True),
                  goal_rot_mask=(True, True, True), goal_solutions=4):
        """A collision-free joint path from ``qpos_start`` (None: the current qpos) to ``qpos_goal``
        (``([n_envs,] n_qs)``, or one ``(n_qs,)`` for every env) in every env of ``envs_idx``: see
        the module's docstring for the arguments and what comes back."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        M, n = len(envs), self.n_qs
        opts = _options(max_nodes, resolution, timeout, max_retry, num_waypoints, planner, safety_margin, seed)
        smooth_path = inputs.as_flag("smooth_path", smooth_path)
        ignore_collision = inputs.as_flag("ignore_collision", ignore_collision)
        return_valid_mask = inputs.as_flag("return_valid_mask", return_valid_mask)
        return_info = inputs.as_flag("return_info", return_info)
        return_trajectory = inputs.as_flag("return_trajectory", return_trajectory)
        limits = _limits(self, max_velocity, max_acceleration, dt) if return_trajectory else None
        ee_link = None if ee_link_name is None else self.own_link(ee_link_name, "ee_link_name")
        if with_entity is not None and ee_link is None:
            raise InvalidValueError("ee_link_name: with_entity needs the link that carries it (ee_link_name=...)")
        cartesian = goal_link is not None
        if cartesian == (qpos_goal is not None):
            raise InvalidValueError("qpos_goal, goal_link: give one goal, a configuration or a link's pose")
        if cartesian:
            link = self.own_link(goal_link, "goal_link")
            target = check_goal(self, M, goal_pos, goal_quat, goal_pos_mask, goal_rot_mask)
            count = inputs.as_positive("goal_solutions", goal_solutions, integer=True, maximum=64)
        else:
            goal = self.tree.apply_mimic(inputs.batched("qpos_goal", qpos_goal, (n,), M, cfg.batched))
            self.tree.check_joint_values("qpos_goal", goal)
        start = cfg.qpos[envs].astype(float) if qpos_start is None else \
            inputs.batched("qpos_start", qpos_start, (n,), M, cfg.batched)
        self.tree.check_joint_values("qpos_start", start)
        t0 = time.monotonic()
        carried = None if with_entity is None else carried_spheres(self, ee_link, with_entity, envs)
        checker = Checker(self, envs, opts["safety_margin"], ignore_collision, carried)  # refuses free, ball joints
        start = self.tree.apply_mimic(start)
        if cartesian:
            goals, ok = ik_goals(self, envs, link, *target, opts["safety_margin"], start, opts["seed"], count)
            out = plan_to_solutions(lambda s_, g_, e_: _plan(checker, s_, g_, e_, opts, smooth_path, t0),
                                    start, goals, ok, envs, opts["num_waypoints"])
        else:
            out = _plan(checker, start, goal, envs, opts, smooth_path, t0)
            out["goal"] = goal
        path = out.pop("path").astype(cfg.dtype)
        res = R.PlanResult(path=path if cfg.batched else path[:, 0], valid=cfg.out(out["valid"]),
                           reason=out["reason"] if cfg.batched else out["reason"][0],
                           length=cfg.out(out["length"]), planning_time=time.monotonic() - t0,
                           nodes=cfg.out(out["nodes"]), attempts=cfg.out(out["attempts"]),
                           certified=cfg.out(out["valid"] & ~ignore_collision), goal=cfg.out(out["goal"]))
        if return_trajectory:
            return _trajectory(checker, cfg, out, start, envs, limits, opts["seed"])
        if return_info:
            return res
        if return_valid_mask:
            return res.path, (res.valid if cfg.batched else bool(res.valid))
        return res.path


def _options(max_nodes, resolution, timeout, max_retry, num_waypoints, planner, safety_margin, seed) -> dict:
    if not isinstance(planner, str) or planner not in PLANNERS:
        raise InvalidValueError(f"planner: expected one of {', '.join(PLANNERS)}, got {planner!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise InvalidTypeError(f"seed: expected an integer or None, got {seed!r}")
    return {
        "max_nodes": inputs.as_positive("max_nodes", max_nodes, integer=True, maximum=1_000_000),
        "resolution": inputs.as_positive("resolution", resolution, maximum=10.0),
        "timeout": None if timeout is None else inputs.as_positive("timeout", timeout),
        "max_retry": inputs.as_positive("max_retry", max_retry, integer=True, maximum=1000),
        "num_waypoints": inputs.as_positive("num_waypoints", num_waypoints, integer=True, maximum=1_000_000),
        "planner": planner,
        "safety_margin": inputs.as_positive("safety_margin", safety_margin, allow_zero=True, maximum=10.0),
        "seed": draw_seed() if seed is None else int(seed) & 0x7FFFFFFF,
    }


def _plan(checker, start, goal, envs, opts, smooth, t0) -> dict:
    """Checks, attempts, smoothing, resampling and the final certification; arrays per env."""
    M, n = start.shape
    lo, hi = checker.entity.q_limits
    reason = [None] * M
    out_lo = ((start < lo - LIMIT_TOL) | (start > hi + LIMIT_TOL)).any(axis=1)
    out_hi = ((goal < lo - LIMIT_TOL) | (goal > hi + LIMIT_TOL)).any(axis=1)
    c_start, c_goal = checker.clearance(start, envs), checker.clearance(goal, envs)
    for r in range(M):
        reason[r] = (R.START_OUT_OF_LIMITS if out_lo[r] else R.GOAL_OUT_OF_LIMITS if out_hi[r] else
                     R.START_IN_COLLISION if c_start[r] <= 0 else R.GOAL_IN_COLLISION if c_goal[r] <= 0 else None)
    box_lo = np.minimum(np.where(np.isfinite(lo), lo, -np.pi), np.minimum(start, goal).min(axis=0))
    box_hi = np.maximum(np.where(np.isfinite(hi), hi, np.pi), np.maximum(start, goal).max(axis=0))
    paths, nodes, attempts = [None] * M, np.zeros(M, np.int64), np.zeros(M, np.int64)
    deadline_of = (lambda: np.inf) if opts["timeout"] is None else (lambda: time.monotonic() + opts["timeout"])
    for attempt in range(opts["max_retry"]):
        todo = np.array([r for r in range(M) if reason[r] is None or (attempt and reason[r] in
                                                                      (R.TIMEOUT, R.NODE_BUDGET))], np.int64)
        if not len(todo):
            break
        why, found, used = grow(checker, start[todo], goal[todo], c_start[todo], c_goal[todo], envs[todo],
                                box_lo, box_hi, opts["resolution"], opts["planner"], opts["seed"], attempt,
                                opts["max_nodes"], deadline_of())
        for k, r in enumerate(todo):
            reason[r], paths[r] = why[k], found[k]
        nodes[todo] += used
        attempts[todo] += 1
    T = opts["num_waypoints"]
    if smooth:
        paths = shortcut(checker, paths, envs, opts["seed"])
    paths = fit_vertices(checker, paths, envs, opts["seed"], T)  # so that the waypoints keep every vertex
    path = np.repeat(start[None], T, axis=0)
    recheck = []
    for r in range(M):
        if reason[r] == R.OK:
            path[:, r], on_edges = resample(paths[r], T)
            path[:, r] = path[:, r].astype(checker.dtype)  # certified as returned, in the engine's precision
            if not on_edges:
                recheck.append(r)
    valid = np.array([x == R.OK for x in reason], bool)
    # every returned segment certified, as returned (on-edge waypoints included: the proof is cheap)
    rows = np.flatnonzero(valid)
    if len(rows):
        ok = checker.certify_path(path[:, rows], envs[rows])
        for r in rows[~ok]:
            reason[r], valid[r] = R.NOT_CERTIFIED, False
            path[:, r] = start[r]
    length = np.array([path_length(path[:, r]) if valid[r] else 0.0 for r in range(M)])
    return {"path": path, "valid": valid, "reason": reason, "length": length, "nodes": nodes,
            "attempts": attempts, "vertices": paths}


def _limits(entity, max_velocity, max_acceleration, dt) -> tuple:
    """``(vmax (n_qs,), amax (n_qs,), dt)`` of a time parametrisation, checked."""
    n = entity.n_qs

    def per_dof(name, value):
        arr = np.broadcast_to(inputs.as_float_array(name, value), (n,)) if np.ndim(value) == 0 else \
            inputs.as_float_array(name, value)
        if arr.shape != (n,) or not (arr > 0).all():
            raise InvalidValueError(f"{name}: expected a positive number or {n} positive numbers, got {value!r}")
        return np.array(arr, float)

    if entity.n_dofs != n:
        raise InvalidValueError("return_trajectory: the robot's qpos and dofs differ (free or ball joints)")
    vmax = np.asarray(entity.tree.velocity_limits(), float) if max_velocity is None else \
        per_dof("max_velocity", max_velocity)
    amax = vmax / ACCEL_TIME if max_acceleration is None else per_dof("max_acceleration", max_acceleration)
    step = float(entity.scene.dt) if dt is None else inputs.as_positive("dt", dt, maximum=10.0)
    return vmax, amax, step


def _trajectory(checker, cfg, out, start, envs, limits, seed) -> Trajectory:
    """The :class:`Trajectory` of each env's smoothed path, its samples certified as returned. Each
    vertex is a stop, so the path is made of as few as it can: collinear steps merged, and
    :data:`~engine.plan.smoothing.TIMED_ROUNDS` more shortcut rounds."""
    vmax, amax, dt = limits
    M, n = start.shape
    valid, reason = out["valid"].copy(), list(out["reason"])
    vertices = [merge_collinear(p) if valid[r] else None for r, p in enumerate(out["vertices"])]
    vertices = shortcut(checker, vertices, envs, seed, rounds=TIMED_ROUNDS, stream=TIMED_STREAM)
    parts, times = [], []
    for r in range(M):
        verts = vertices[r] if valid[r] else start[r:r + 1]
        q, v, a, t = time_path(verts, vmax, amax, dt)
        parts.append((q.astype(cfg.dtype).astype(float), v, a))
        times.append(t)
    T = max(len(p[0]) for p in parts)
    qpos, vel, acc = np.zeros((T, M, n)), np.zeros((T, M, n)), np.zeros((T, M, n))
    for r, (q, v, a) in enumerate(parts):
        qpos[:, r], qpos[len(q):, r] = q[-1], q[-1]
        qpos[:len(q), r], vel[:len(v), r], acc[:len(a), r] = q, v, a
    rows = np.flatnonzero(valid)
    if len(rows):
        ok = checker.certify_path(qpos[:, rows], envs[rows])
        for r in rows[~ok]:
            reason[r], valid[r] = R.NOT_CERTIFIED, False
            qpos[:, r], vel[:, r], acc[:, r], times[r] = start[r], 0.0, 0.0, np.zeros(1)
    duration = np.array([t[-1] for t in times])
    dtype = cfg.dtype
    one = (lambda x: x) if cfg.batched else (lambda x: x[:, 0])
    return Trajectory(qpos=one(qpos.astype(dtype)), dofs_vel=one(vel.astype(dtype)), dofs_acc=one(acc.astype(dtype)),
                      dt=dt, valid=cfg.out(valid), duration=cfg.out(duration),
                      waypoint_times=times if cfg.batched else times[0], reason=reason if cfg.batched else reason[0])


__all__ = ["LIMIT_TOL", "PLANNERS", "PlanMethods"]
