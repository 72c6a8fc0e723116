"""Planned motion for a scene file's runner (``solver.plan``): each env moves along collision-free,
time-parametrised paths instead of solving its targets frame by frame.

When an env's targets move (and have settled, or kept moving for :data:`CHASE_AFTER` s) and the env
is at rest, the runner solves the targets with collision-aware IK (the full restart search, keeping
:data:`GOAL_ROOM` more than the margin) and plans a path from where the env stands to that answer with
``robot.plan_path(..., return_trajectory=True)``:
a certified path played within the velocity limits (``solver.max_joint_velocity``, by default the
robot file's) and the default acceleration limits. A moving env finishes its path before it plans
again (it never stops short), unless the obstacles moved: then every env that is moving or failed
plans again from where it stands. An env whose planning failed holds its configuration until its
targets or the obstacles move, and says why (:data:`engine.plan.result.REASONS`, or
:data:`GOAL_UNREACHABLE` when IK found no collision-free answer).

:class:`PathPlayer` keeps each env's timed path and the targets it was planned for; the runner asks it
which envs plan, hands it the trajectories, and reads each frame's configurations from it. It runs on
its own clock (s), advanced by every frame's ``dt`` (or the runner's ``dt`` for a frame that does not
advance time: an edit while paused is followed to its end).
"""

from __future__ import annotations

import numpy as np

from ..plan.result import GOAL_UNREACHABLE, OK
from ..transforms import quat_to_matrix
from .models import solver_keywords

CHASE_AFTER = 0.3  # s: a target still moving after this long is chased (planned to where it is now)
MARGIN_SLACK = 1e-3  # m: a path's margin stays this far below its starts' clearance (float32 distances)
# m: the answers an env plans to keep this much more than the paths' margin where they can (else the
# margin alone). The checks are exact
# to a few hundredths of a millimetre near contact (the links' hulls), so an answer can sit a hair
# above the margin, and a path out of it (or into it) would have to thread that needle: the
# planner then ran out of nodes (a Panda start 1.2 mm above the margin, 2000 nodes)
GOAL_ROOM = 5e-3
SAME_TARGET = 1e-6  # m (or quaternion units): targets that moved less than this did not move


def target_keys(targets: list, n_envs: int) -> np.ndarray:
    """``(n_envs, k)``: every target's position and orientation, side by side, per env (what a path is
    planned for)."""
    parts = [np.asarray(x, float).reshape(n_envs, -1) for pose in targets for x in pose if x is not None]
    return np.concatenate(parts, axis=1) if parts else np.zeros((n_envs, 0))


def pose_errors(robot, links: list, targets: list, pos_masks: list, rot_masks: list) -> tuple[np.ndarray, np.ndarray]:
    """``(pos_error, rot_error)``, each ``(n_envs, n_targets)`` m / rad, of the robot's current
    configuration: the masked position error, and the rotation error as the IK measures it (all
    axes: the angle between the link's frame and the target's; one axis: the angle between that axis
    of both; none: 0)."""
    n = robot.scene.n_batch
    pos_all = np.asarray(robot.get_links_pos(), float).reshape(n, -1, 3)
    quat_all = np.asarray(robot.get_links_quat(), float).reshape(n, -1, 4)
    pos_err, rot_err = np.zeros((n, len(links))), np.zeros((n, len(links)))
    for i, (link, (pos, quat)) in enumerate(zip(links, targets, strict=True)):
        if pos is not None:
            d = (np.asarray(pos, float).reshape(n, 3) - pos_all[:, link.idx_local]) * np.asarray(pos_masks[i], float)
            pos_err[:, i] = np.linalg.norm(d, axis=1)
        mask = np.asarray(rot_masks[i], bool)
        if quat is None or not mask.any():
            continue
        R_t = quat_to_matrix(np.asarray(quat, float).reshape(n, 4))
        R_l = quat_to_matrix(quat_all[:, link.idx_local])
        if mask.all():
            cos = (np.einsum("nij,nij->n", R_t, R_l) - 1.0) / 2.0
        else:
            axis = int(np.flatnonzero(mask)[0])
            cos = np.einsum("ni,ni->n", R_t[:, :, axis], R_l[:, :, axis])
        rot_err[:, i] = np.arccos(np.clip(cos, -1.0, 1.0))
    return pos_err, rot_err


def plan_envs(runner, envs: np.ndarray, targets: list, keys: np.ndarray, q_now: np.ndarray,
              place: bool = False) -> dict:
    """Solve the targets of ``envs`` of ``runner`` (a :class:`~engine.scenefile.runner.Runner`) with
    collision avoidance (the full search, from where they stand) and plan a timed path there from
    ``q_now`` ``(n_envs, n_qs)`` (``place``: go there at once); ``keys``: the targets each env moves
    for (:func:`target_keys`). Returns the paths begun, ``{env: (samples (T, n_qs), dt s)}``."""
    solver, robot, player = runner.spec.solver, runner.robot, runner.player
    batched = runner.scene.is_batched
    pick = (lambda x: None if x is None else np.asarray(x)[envs]) if batched else \
        (lambda x: None if x is None else np.asarray(x)[0])
    envs_idx = envs if batched else None
    base = None if solver.seed is None else solver.seed + 7919 * runner.frame_index

    def answers(margin: float) -> tuple[np.ndarray, np.ndarray]:
        q = q_now[envs]
        ok = np.ones(len(envs), bool)
        keywords = {**solver_keywords(solver), "avoid_collisions": True, "collision_margin": margin}
        for g, (_name, idx) in enumerate(runner.groups):
            first = runner.spec.targets[idx[0]]
            result = robot.inverse_kinematics_multilink(
                links=[runner.links[i] for i in idx], poss=[pick(targets[i][0]) for i in idx],
                quats=[pick(targets[i][1]) for i in idx], pos_mask=first.pos_mask, rot_mask=first.rot_mask,
                init_qpos=q if batched else q[0], envs_idx=envs_idx, return_info=True,
                seed=None if base is None else (base + g) % (2**31 - 1), **keywords)
            q = np.asarray(result.qpos, float).reshape(len(envs), -1)
            ok &= np.asarray(result.success, bool).reshape(len(envs))
        return q, ok

    # the room first; an env with no answer that keeps it takes one that keeps the margin alone
    q, ok = answers(solver.collision_margin + GOAL_ROOM)
    if not ok.all():
        q_tight, ok_tight = answers(solver.collision_margin)
        q = np.where(ok[:, None], q, q_tight)
        ok |= ok_tight
    for k in np.flatnonzero(~ok):
        player.fail(envs[k], GOAL_UNREACHABLE, keys[envs[k]], q_now[envs[k]])
    rows = envs[ok]
    if place:
        for k in np.flatnonzero(ok):
            player.begin(envs[k], q[k][None], runner.dt, keys[envs[k]])
        return {int(envs[k]): (q[k][None], runner.dt) for k in np.flatnonzero(ok)}
    if not len(rows):
        return {}
    velocity = solver.max_joint_velocity
    # the paths keep the solver's margin, or as much of it as the starts have (an obstacle moved near)
    clearance = runner.clearance_now()
    start_clear = np.inf if clearance is None else np.nanmin(clearance[rows], initial=np.inf)
    margin = max(0.0, min(solver.collision_margin, start_clear - MARGIN_SLACK))
    trajectory = robot.plan_path(
        qpos_goal=q[ok] if batched else q[0], qpos_start=q_now[rows] if batched else q_now[0],
        envs_idx=rows if batched else None, max_nodes=solver.plan_max_nodes, return_trajectory=True,
        safety_margin=margin,
        max_velocity=None if velocity in (None, "file") else velocity, dt=runner.dt,
        seed=None if base is None else (base + 104729) % (2**31 - 1))
    qpos = np.asarray(trajectory.qpos, float).reshape(len(trajectory.qpos), len(rows), -1)
    valid = np.asarray(trajectory.valid, bool).reshape(len(rows))
    reasons = trajectory.reason if batched else [trajectory.reason]
    duration = np.asarray(trajectory.duration, float).reshape(len(rows))
    paths = {}
    for k, e in enumerate(rows):
        if not valid[k]:
            player.fail(e, reasons[k], keys[e], q_now[e])
            continue
        samples = qpos[:int(round(duration[k] / trajectory.dt)) + 1, k]
        player.begin(e, samples, trajectory.dt, keys[e])
        paths[int(e)] = (samples, trajectory.dt)
    return paths



class PathPlayer:
    """Each env's timed path (samples ``(T, n_qs)`` every ``dt`` s from ``start`` on the player's
    clock), the targets it was planned for ``(k,)``, and the last planning outcome (a reason of
    :data:`engine.plan.result.REASONS`)."""

    def __init__(self, n_envs: int, n_qs: int):
        self.n_envs, self.n_qs = n_envs, n_qs
        self.reset()

    def reset(self) -> None:
        """No paths, nothing planned, clock at 0."""
        n = self.n_envs
        self.clock = 0.0
        self.samples: list[np.ndarray | None] = [None] * n
        self.starts = np.zeros(n)
        self.dts = np.ones(n)
        self.ends = np.full(n, -np.inf)  # clock time each env's path ends (-inf: no path)
        self.plan_keys: np.ndarray | None = None  # (n_envs, k) the targets each env planned for (NaN: none)
        self.reason: list[str | None] = [None] * n
        self.last_keys: np.ndarray | None = None
        self.moving_since = np.full(n, np.nan)  # clock time each env's targets started moving (NaN: still)
        self.obstacles_moved = False

    def forget_targets(self) -> None:
        """The targets changed shape (added, removed, masks): every env plans again once at rest."""
        self.plan_keys = None
        self.last_keys = None

    def obstacles_changed(self) -> None:
        """The obstacles moved: moving and failed envs plan again from where they stand."""
        self.obstacles_moved = True

    # -- reading --------------------------------------------------------------------------------------
    def playing(self) -> np.ndarray:
        """``(n_envs,)`` bool: the env's path has not ended on the clock."""
        return self.clock < self.ends - 1e-9

    def failed(self) -> np.ndarray:
        """``(n_envs,)`` bool: the env's last planning, for its current targets, failed."""
        return np.array([r is not None and r != OK for r in self.reason], bool)

    def placed(self) -> np.ndarray:
        """``(n_envs,)`` bool: the env was placed at an answer (or has moved along a path) since the
        last :meth:`reset`; an env not yet placed goes to its first answer at once."""
        return np.array([s is not None for s in self.samples], bool)

    def path_of(self, env: int) -> np.ndarray | None:
        """The env's current path, ``(T, n_qs)`` samples, or None."""
        return self.samples[int(env)]

    def qpos_at(self, current: np.ndarray) -> np.ndarray:
        """``(n_envs, n_qs)``: each env's configuration at the clock (``current`` where it has no path):
        linear between two samples, which lie on one certified segment."""
        out = np.array(current, float, copy=True)
        for e, s in enumerate(self.samples):
            if s is None:
                continue
            x = max(0.0, (self.clock - self.starts[e]) / self.dts[e])
            k = min(int(np.floor(x)), len(s) - 1)
            if k >= len(s) - 1:
                out[e] = s[-1]
            else:
                f = x - k
                out[e] = s[k] + f * (s[k + 1] - s[k])
        return out

    def unplanned(self, keys: np.ndarray) -> np.ndarray:
        """``(n_envs,)`` bool: the targets ``keys`` ``(n_envs, k)`` differ from those the env last
        planned for (it will plan once at rest and they settle)."""
        if self.plan_keys is None or self.plan_keys.shape != keys.shape:
            return np.ones(self.n_envs, bool)
        return ~(np.abs(self.plan_keys - keys) <= SAME_TARGET).all(axis=1)  # NaN (never planned): unplanned

    # -- deciding -------------------------------------------------------------------------------------
    def due(self, keys: np.ndarray, timeless: bool = False) -> np.ndarray:
        """``(n_envs,)`` bool: envs that plan this frame, given the targets' ``keys`` ``(n_envs, k)``:
        their targets differ from the ones planned for, they have settled (or kept moving for
        :data:`CHASE_AFTER` s), and the env is at rest; after the obstacles moved, also every moving or
        failed env. ``timeless``: the frame does not advance time (an edit while paused), so a target
        that moved in it has settled."""
        n = self.n_envs
        changed = self.unplanned(keys)
        if timeless or self.last_keys is None or self.last_keys.shape != keys.shape:
            settled = np.ones(n, bool)
        else:
            settled = np.abs(keys - self.last_keys).max(axis=1, initial=0.0) <= SAME_TARGET
        self.moving_since = np.where(settled, np.nan, np.where(np.isnan(self.moving_since), self.clock,
                                                                self.moving_since))
        self.last_keys = keys.copy()
        chase = ~settled & (self.clock - np.nan_to_num(self.moving_since, nan=self.clock) >= CHASE_AFTER)
        playing = self.playing()
        due = changed & (settled | chase) & ~playing
        if self.obstacles_moved:
            due |= playing | self.failed()
            self.obstacles_moved = False
        return due

    # -- writing --------------------------------------------------------------------------------------
    def begin(self, env: int, samples: np.ndarray, dt: float, key: np.ndarray) -> None:
        """The env starts ``samples`` ``(T, n_qs)`` (every ``dt`` s) now, planned for ``key``."""
        self.samples[env] = np.asarray(samples, float)
        self.starts[env], self.dts[env] = self.clock, float(dt)
        self.ends[env] = self.clock + (len(samples) - 1) * float(dt)
        self._planned(env, key, OK)

    def fail(self, env: int, reason: str, key: np.ndarray, at: np.ndarray) -> None:
        """The env's planning for ``key`` failed (``reason``): it holds ``at`` ``(n_qs,)`` (an env never
        placed stays unplaced: it is placed, not planned, once its targets can be met)."""
        if self.samples[env] is not None:
            self.samples[env] = np.asarray(at, float)[None]
            self.starts[env], self.dts[env], self.ends[env] = self.clock, 1.0, self.clock
        self._planned(env, key, str(reason))

    def _planned(self, env: int, key: np.ndarray, reason: str) -> None:
        key = np.asarray(key, float)
        if self.plan_keys is None or self.plan_keys.shape[1] != len(key):
            self.plan_keys = np.full((self.n_envs, len(key)), np.nan)
        self.plan_keys[env], self.reason[env] = key, reason

    def advance(self, dt: float) -> None:
        """Move the clock ``dt`` s on."""
        self.clock += float(dt)


__all__ = ["CHASE_AFTER", "GOAL_UNREACHABLE", "PathPlayer", "plan_envs", "pose_errors", "target_keys"]
