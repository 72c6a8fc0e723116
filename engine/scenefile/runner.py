"""Building a scene file into an engine Scene, and the :class:`Runner` that plays it.

The runner owns time. Each :meth:`Runner.step` computes every target's pose for the current time
(its motion pattern, per env), runs one batched IK call per target group starting from the current
qpos (so consecutive frames warm-start; with ``solver.track`` velocity-limited after frame 0, which
places the robot with the full restart search: each dof then moves at most its velocity times the
frame's ``dt``), writes the answer with ``set_qpos``, moves the target
frames drawn in the visualizer (when the scene has one), and advances time by ``dt``. With
``solver.plan`` the envs move along planned, collision-free paths instead (:mod:`.planned`).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import morphs
from ..errors import InvalidValueError
from ..options import SimOptions, ViewerOptions, studio_vis_options
from ..runtime import launch
from ..scene import Scene
from ..transforms import quat_to_matrix
from . import patterns, planned, smoothness
from .errors import Issue, SceneFileError
from .io import check_spec, resolve_robot
from .models import CircleMotion, Figure8Motion, KeyframesMotion, OffsetMotion, SceneSpec, TargetSpec, solver_keywords
from .obstacles import add_obstacles

CLEARANCE_SLACK_M = 1e-5  # float32 distances: closer than this to the bound is not closer


@dataclass
class RunnerFrame:
    """What one :meth:`Runner.step` did.

    ``index`` / ``t``: the frame number and the time (s) its targets were computed for. ``qpos``
    (n_envs, n_qs) after the step. ``success`` (n_envs,): every target of every group within
    tolerance. ``pos_error`` / ``rot_error`` (n_envs, n_targets): masked error norms, m / rad, in
    the file's target order. ``ik_ms``: wall time of the IK calls; ``group_ms`` per group.
    ``targets``: per target ``(pos (n_envs, 3) | None, quat (n_envs, 4) | None)``.
    ``min_distance`` (n_envs,): with ``solver.avoid_collisions``, each env's least clearance (m) of
    ``qpos`` as the solve measured it (``robot.collision_distance``'s, NaN with nothing to check),
    so a reader need not run the check again; None without avoidance. ``step`` (n_envs,): each
    env's largest hinge or slide move in this frame, rad or m; ``lagging`` (n_envs,) bool:
    velocity-limited, short of its targets, moving as fast as allowed
    (:mod:`engine.scenefile.smoothness`). An env held clear of collision under tracking
    (:meth:`Runner.step`) keeps its configuration: it is not a success, its ``min_distance`` is its
    clearance as held, and its errors are those of the answer it did not take.

    With ``solver.plan`` (:mod:`engine.scenefile.planned`): the errors are those of ``qpos``;
    ``success``: the env rests at its targets; ``lagging``: the env is moving along a path, or
    will plan for targets that moved;
    ``plan_reason`` (n_envs,): each env's last planning outcome (None: none yet, "ok", or why it
    failed); ``paths``: the paths begun in this frame, ``{env: (samples (T, n_qs), dt s)}``.
    ``ik_ms`` then counts the IK and planning calls. ``kernels_prepared``: the step compiled or
    loaded a kernel (:func:`engine.runtime.launch.kernels_prepared`), so ``ik_ms`` counts that too
    and is no measure of the solver's speed.
    """

    index: int
    t: float
    qpos: np.ndarray
    success: np.ndarray
    pos_error: np.ndarray
    rot_error: np.ndarray
    ik_ms: float
    group_ms: list[float] = field(default_factory=list)
    targets: list = field(default_factory=list)
    min_distance: np.ndarray | None = None
    step: np.ndarray | None = None
    lagging: np.ndarray | None = None
    plan_reason: list | None = None
    paths: dict = field(default_factory=dict)
    kernels_prepared: bool = False

    @property
    def success_rate(self) -> float:
        return float(np.mean(self.success)) if self.success.size else 1.0


class _Track:
    """One target's motion, with its per-env parameters drawn once."""

    def __init__(self, target: TargetSpec, n_envs: int):
        self.n = n_envs
        self.pos = None if target.pos is None else np.array(target.pos, float)
        self.quat = target.orientation()
        self.motion = m = target.motion
        if isinstance(m, CircleMotion):
            self.omega = patterns.uniform_speeds(m.speed[0], m.speed[1], n_envs, m.seed)
        elif isinstance(m, OffsetMotion):
            if m.offsets is not None:
                self.offsets = np.array(m.offsets, float)
            elif m.grid is not None:
                self.offsets = patterns.offsets_grid(n_envs, np.array(m.grid))
            else:
                self.offsets = patterns.offsets_random(n_envs, np.array(m.random), m.seed)
        elif isinstance(m, Figure8Motion):
            self.phases = m.phase + np.arange(n_envs) * m.env_phase
        elif isinstance(m, KeyframesMotion):
            self.k_times = np.array(m.times, float)
            self.k_pos = None if m.poses[0].pos is None else np.array([p.pos for p in m.poses], float)
            quats = [p.orientation() for p in m.poses]
            self.k_quat = None if quats[0] is None else np.array(quats)
            self.delays = np.arange(n_envs) * m.stagger

    def at(self, t: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        n, m = self.n, self.motion
        pos = None if self.pos is None else np.tile(self.pos, (n, 1))
        quat = None if self.quat is None else np.tile(self.quat, (n, 1))
        if isinstance(m, CircleMotion):
            pos = patterns.circle(t, self.pos + np.array(m.center), m.radius, self.omega, m.phase, m.plane)
        elif isinstance(m, OffsetMotion):
            pos = pos + self.offsets
        elif isinstance(m, Figure8Motion):
            pos = patterns.figure8(t, self.pos + np.array(m.center), m.radius, m.period, self.phases, m.plane)
        elif isinstance(m, KeyframesMotion):
            kpos, kquat = patterns.keyframes(t - self.delays, self.k_times, self.k_pos, self.k_quat, m.loop)
            pos = kpos if kpos is not None else pos
            quat = kquat if kquat is not None else quat
        return pos, quat


class Runner:
    """Plays a :class:`SceneSpec` on a built scene: ``targets_at(t)``, ``step()``, ``record()``.

    ``dt`` (s) defaults to ``1 / spec.fps``. ``debug_frames``: draw each target as a frame in the
    scene's visualizer and move it every step, once the scene has a visualizer (the app's view,
    :meth:`record`); a headless run draws nothing and so never makes one. ``obstacles``: the
    entities of ``spec.obstacles``, in file order (:func:`build` makes them).
    """

    def __init__(self, spec: SceneSpec, scene, robot, debug_frames: bool = True, obstacles: list | None = None):
        self.spec = spec
        self.scene = scene
        self.robot = robot
        self.obstacles = list(obstacles or [])
        self.n_envs = scene.n_batch
        self.dt = 1.0 / spec.fps
        self.t = 0.0
        self.t_solved = 0.0  # the time of the targets the robot's current answer was solved for (s)
        self.clearance: np.ndarray | None = None  # (n_envs,) m: the last frame's min_distance (with avoidance)
        self._clearance_q: np.ndarray | None = None  # (n_envs, n_qs): the qpos `clearance` was measured at
        self._clearance_moved = False  # an obstacle moved since (clearance_now)
        self.frame_index = 0
        self.debug_frames = debug_frames
        self._frames: list | None = None  # debug frame handles, one per target
        self.player = planned.PathPlayer(self.n_envs, robot.n_qs)
        self.draw_paths = False  # draw each env's planned path (a recording of planned motion does)
        self._path_handles: dict = {}  # env -> its path's debug drawing
        self.retarget()

    @property
    def links(self) -> list:
        """The targets' links, in ``spec.targets`` order."""
        return list(self._links)

    def retarget(self) -> None:
        """Re-read ``spec.targets`` after an edit (poses, masks, groups, links, added or removed
        targets); the current time and robot state are kept."""
        self._links = [self.robot.get_link(target.link) for target in self.spec.targets]
        self._tracks = [_Track(target, self.n_envs) for target in self.spec.targets]
        self.groups = self.spec.groups()
        if self._frames is not None and len(self._frames) != len(self.spec.targets):
            self.clear_debug_frames()

    # -- targets ----------------------------------------------------------------------------------
    def targets_at(self, t: float) -> list[tuple[np.ndarray | None, np.ndarray | None]]:
        """Per target, ``(pos (n_envs, 3), quat (n_envs, 4))`` at time ``t`` (s); None where the target
        has no position (or orientation) constraint."""
        return [track.at(float(t)) for track in self._tracks]

    # -- running ----------------------------------------------------------------------------------
    def step(self, dt: float | None = None) -> RunnerFrame:
        """Solve the targets of the current time, apply the answer, advance time by ``dt``."""
        before = launch.kernels_prepared()
        frame = self._step(dt)
        frame.kernels_prepared = launch.kernels_prepared() != before
        return frame

    def _step(self, dt: float | None) -> RunnerFrame:
        dt = self.dt if dt is None else float(dt)
        if not np.isfinite(dt) or dt < 0:
            raise InvalidValueError(f"dt: expected a non-negative number of seconds, got {dt!r}")
        solver = self.spec.solver
        if solver.plan:
            return self._step_planned(dt)
        targets = self.targets_at(self.t)
        n, n_targets = self.n_envs, len(targets)
        success = np.ones(n, bool)
        pos_error = np.zeros((n, n_targets))
        rot_error = np.zeros((n, n_targets))
        group_ms, min_distance = [], None
        track = solver.track and self.frame_index > 0  # frame 0 places the robot: the full search
        keywords = {**solver_keywords(solver), "track": track}
        # the robot holds the answer of the last frame solved: its targets moved over the time since, so that
        # is the time its joints may use (the frames' dt vary in the app); none (an edit while paused): one dt
        elapsed = self.t - self.t_solved
        limit_dt = elapsed if elapsed > 0 else (dt if dt > 0 else self.scene.dt)
        if track:
            keywords.update(max_samples=solver.samples(), max_joint_velocity=solver.max_joint_velocity,
                            dt=limit_dt)
        q_before = self.robot.get_qpos().reshape(n, -1).copy()
        if track and solver.avoid_collisions:
            self.clearance_now()  # before the solves move the robot: the clearance of q_before
        for g, (_name, idx) in enumerate(self.groups):
            first = self.spec.targets[idx[0]]
            seed = None if solver.seed is None else (solver.seed + 7919 * self.frame_index + g) % (2**31 - 1)
            t0 = time.perf_counter()
            result = self.robot.inverse_kinematics_multilink(
                links=[self._links[i] for i in idx], poss=[targets[i][0] for i in idx],
                quats=[targets[i][1] for i in idx], pos_mask=first.pos_mask, rot_mask=first.rot_mask,
                seed=seed, return_info=True, **keywords)
            group_ms.append((time.perf_counter() - t0) * 1e3)
            self.robot.set_qpos(result.qpos)
            success &= np.asarray(result.success, bool).reshape(n)
            # the last group's solve leaves qpos as it is: its distances are the frame's
            min_distance = None if result.min_distance is None else np.asarray(result.min_distance).reshape(n)
            pos_error[:, idx] = np.asarray(result.pos_error).reshape(n, len(idx))
            rot_error[:, idx] = np.asarray(result.rot_error).reshape(n, len(idx))
        q_after = self.robot.get_qpos().reshape(n, -1)
        if track and min_distance is not None:
            q_after, min_distance = self._hold_clear(q_before, q_after, min_distance, success, solver.collision_margin)
        self._remember_clearance(min_distance)
        step, lagging = smoothness.frame_steps(self.robot.tree, q_before, q_after, success, track,
                                               solver.max_joint_velocity, limit_dt)
        frame = RunnerFrame(self.frame_index, self.t, q_after, success, pos_error, rot_error, float(sum(group_ms)),
                            group_ms, targets, min_distance, step, lagging)
        self._advance(frame, dt)
        return frame

    def _hold_clear(self, q_before, q_after, min_distance, success, margin: float):
        """A velocity-limited solve cannot leave for another branch, so near an obstacle it may follow
        its target into it. An env whose tracked answer is closer to collision than both the margin
        and its last clearance holds its configuration instead (short of its target, not a success):
        smooth tracking never moves an env into collision. Its clearance is then that of the held
        configuration in the world as it stands (:meth:`clearance_now`: measured again after an
        obstacle moved). Returns ``(qpos, min_distance)``."""
        last = self.clearance if self.clearance is not None else np.full(len(min_distance), np.inf)
        worse = min_distance < np.minimum(last, margin) - CLEARANCE_SLACK_M
        if not worse.any():
            return q_after, min_distance
        q_after, min_distance = q_after.copy(), min_distance.copy()
        q_after[worse], min_distance[worse] = q_before[worse], last[worse]
        success[worse] = False
        self.robot.set_qpos(q_after if self.scene.is_batched else q_after[0])
        return q_after, min_distance

    def _step_planned(self, dt: float) -> RunnerFrame:
        """One frame of planned motion (``solver.plan``): envs that are due plan (:meth:`_plan_envs`),
        every env takes its path's configuration at the player's clock."""
        targets = self.targets_at(self.t)
        n, player, robot = self.n_envs, self.player, self.robot
        keys = np.concatenate([planned.target_keys(targets, n), np.tile(self._spec_key(), (n, 1))], axis=1)
        q_before = np.asarray(robot.get_qpos(), float).reshape(n, -1)
        t0 = time.perf_counter()
        due = np.flatnonzero(player.due(keys, timeless=dt == 0))
        # an env not placed yet (frame 0, after a reset) goes to its answer at once, as tracking's frame 0 does
        placed = player.placed()[due]
        unplaced, rest = due[~placed], due[placed]
        paths = planned.plan_envs(self, unplaced, targets, keys, q_before, place=True) if len(unplaced) else {}
        paths.update(planned.plan_envs(self, rest, targets, keys, q_before) if len(rest) else {})
        q_after = player.qpos_at(q_before)
        robot.set_qpos(q_after if self.scene.is_batched else q_after[0])
        masks = [self.spec.targets[idx[0]] for _name, idx in self.groups for _ in idx]
        order = [i for _name, idx in self.groups for i in idx]
        pos_error, rot_error = np.zeros((n, len(targets))), np.zeros((n, len(targets)))
        pos_error[:, order], rot_error[:, order] = planned.pose_errors(
            robot, [self._links[i] for i in order], [targets[i] for i in order],
            [m.pos_mask for m in masks], [m.rot_mask for m in masks])
        moving, failed = player.playing() | player.unplanned(keys), player.failed()
        solver = self.spec.solver
        success = ~moving & ~failed & (pos_error <= 2 * solver.pos_tol).all(axis=1) & \
            (rot_error <= 2 * solver.rot_tol).all(axis=1)
        min_distance = np.asarray(robot.collision_distance(), float).reshape(n)
        min_distance[~np.isfinite(min_distance)] = np.nan  # nothing to check
        self._remember_clearance(min_distance)
        step, _ = smoothness.frame_steps(robot.tree, q_before, q_after, success, False)
        frame = RunnerFrame(self.frame_index, self.t, q_after, success, pos_error, rot_error,
                            (time.perf_counter() - t0) * 1e3, [], targets, min_distance, step, moving,
                            list(player.reason), paths)
        player.advance(dt if dt > 0 else self.dt)
        self._advance(frame, dt)
        return frame

    def _spec_key(self) -> np.ndarray:
        """The targets' links and masks, as numbers: a path is planned for these too."""
        return np.array([x for t, link in zip(self.spec.targets, self._links, strict=True)
                         for x in (link.idx_local, *t.pos_mask, *t.rot_mask)], float)

    def path_of(self, env: int) -> np.ndarray | None:
        """The path env ``env`` moves along or last moved along under ``solver.plan``: ``(T, n_qs)``
        samples, or None."""
        return self.player.path_of(env)

    def apply(self, frame: RunnerFrame, dt: float | None = None) -> None:
        """Take a frame another runner of the same spec solved (the app's solver process): set its
        ``qpos`` (n_envs, n_qs), move the target frames and advance time by ``dt`` (s), as
        :meth:`step` does after its IK calls; keep the paths it began (:meth:`path_of`)."""
        dt = self.dt if dt is None else float(dt)
        for env, (samples, step) in frame.paths.items():
            self.player.begin(env, samples, step, np.zeros(0))
        qpos = np.asarray(frame.qpos).reshape(self.n_envs, -1)
        self.robot.set_qpos(qpos if self.scene.is_batched else qpos[0])
        self._advance(frame, dt)

    def _advance(self, frame: RunnerFrame, dt: float) -> None:
        self.scene.step()
        self._draw_targets(frame.targets)
        self._draw_paths(frame.paths)
        self.t_solved = frame.t
        self.t = frame.t + dt
        self.frame_index = frame.index + 1

    def place_obstacles(self) -> None:
        """Put every obstacle, in every env, at the pose ``spec.obstacles`` gives it (after an edit)."""
        for entity, obstacle in zip(self.obstacles, self.spec.obstacles):
            entity.set_pos(obstacle.pos)
            entity.set_quat(obstacle.orientation())
        self.player.obstacles_changed()
        self._clearance_moved = self.clearance is not None  # measured again when next needed, not here:
        # the app's own runner (its solves in a child process) never runs a collision kernel

    def clearance_now(self) -> np.ndarray | None:
        """Each env's clearance (n_envs,) m at the configuration the robot holds: the last frame's
        ``min_distance``, measured again (``collision_distance``) when an obstacle moved since or the
        robot holds another configuration (set between frames: the app's joint sliders, its solver
        child given the window's qpos). None before a frame with avoidance."""
        if self.clearance is None:
            return None
        q = np.asarray(self.robot.get_qpos(), float).reshape(self.n_envs, -1)
        if self._clearance_moved or not np.array_equal(q, self._clearance_q):
            self._remember_clearance(np.asarray(self.robot.collision_distance(), float).reshape(self.n_envs))
        return self.clearance

    def _remember_clearance(self, min_distance: np.ndarray | None) -> None:
        """``min_distance`` (n_envs,) m is the clearance of the configuration the robot now holds."""
        self.clearance, self._clearance_moved = min_distance, False
        self._clearance_q = None if min_distance is None else \
            np.asarray(self.robot.get_qpos(), float).reshape(self.n_envs, -1).copy()

    def run(self, n_frames: int) -> list[RunnerFrame]:
        """``n_frames`` steps; their frames."""
        return [self.step() for _ in range(int(n_frames))]

    def reset(self) -> None:
        """Back to time 0 and the robot's default configuration."""
        self.t = self.t_solved = 0.0
        self._remember_clearance(None)
        self.frame_index = 0
        self.player.reset()
        self.robot.set_qpos(np.tile(self.robot.tree.default_qpos, (self.n_envs, 1)))

    # -- visualizer -------------------------------------------------------------------------------
    def _target_poses(self, targets) -> np.ndarray:
        """Per target, world transforms (n_envs, 4, 4); the link's current pose fills in what is free."""
        links_pos = self.robot.get_links_pos().reshape(self.n_envs, -1, 3)
        links_quat = self.robot.get_links_quat().reshape(self.n_envs, -1, 4)
        out = []
        for link, (pos, quat) in zip(self._links, targets):
            pos = links_pos[:, link.idx_local] if pos is None else pos
            quat = links_quat[:, link.idx_local] if quat is None else quat
            T = np.tile(np.eye(4), (self.n_envs, 1, 1))
            T[:, :3, :3] = quat_to_matrix(patterns.normalize(quat))
            T[:, :3, 3] = pos
            out.append(T)
        return out

    def _draw_targets(self, targets) -> None:
        if not self.debug_frames or not targets or not self.scene.has_visualizer:
            return
        poses = self._target_poses(targets)
        if self._frames is None:
            # the scene files' target markers: 10 cm frames (Genesis' default frame is 1 m)
            self._frames = [self.scene.draw_debug_frame(T, axis_length=0.1, axis_radius=0.005) for T in poses]
        else:
            for handle, T in zip(self._frames, poses):
                handle.set_pose(T)
        self.scene.update_debug_objects()

    def _draw_paths(self, paths: dict) -> None:
        """With :attr:`draw_paths`, each path begun (``{env: (samples, dt)}``) drawn in its env's cell
        in place of the env's last one: the first target's link along it."""
        if not self.draw_paths or not paths or not self.scene.has_visualizer:
            return
        link = self._links[0].idx_local if self._links else -1
        for env, (samples, _) in paths.items():
            old = self._path_handles.pop(env, None)
            if old is not None:
                self.scene.clear_debug_object(old)
            if len(samples) > 1:
                self._path_handles[env] = self.scene.draw_debug_path(
                    samples, self.robot, link_idx=link, density=0.1, frame_scaling=0.5,
                    env_idx=env if self.scene.is_batched else 0)
        self.scene.update_debug_objects()

    def clear_debug_frames(self) -> None:
        """Remove the target frames this runner drew."""
        if self._frames:
            for handle in self._frames:
                self.scene.clear_debug_object(handle)
        self._frames = None

    def apply_camera(self, res: tuple[int, int] | None = None) -> None:
        """Point the visualizer's camera as the file says (``camera``), at ``res`` or ``record.resolution``
        (the scene's visualizer is made if it has none yet)."""
        vis = self.scene.visualizer
        camera = vis.camera
        record = self.spec.record
        size = res if res is not None else (record.resolution if record is not None else None)
        if size is not None:
            camera.res = tuple(size)
        if self.spec.camera is not None:
            camera.fov = self.spec.camera.fov
            camera.look_at(self.spec.camera.pos, self.spec.camera.lookat)
        else:
            vis.frame_all()  # no camera in the file: fit every env cell, at the final aspect ratio

    def record(self, path, n_frames: int | None = None, fps: float | None = None,
               res: tuple[int, int] | None = None, progress: bool = True, before_frame=None) -> dict:
        """Render ``n_frames`` (default: the file's) to the video ``path`` headless, stepping once per frame
        (under ``solver.plan`` each env's path is drawn as it begins).

        Time runs on from the runner's current ``t``; ``dt`` becomes ``1 / fps`` so that the video
        plays the motion in real time. ``before_frame(i)``, when given, runs before frame ``i`` is
        stepped: an exception it raises ends the recording, with the video finished on the frames
        drawn so far. Returns ``{"path", "frames", "seconds", "fps"}``: frames written,
        wall-clock seconds, and the recording speed in frames per second.
        """
        from ..vis import record_frames  # here, not at the top: a headless run never loads the renderer

        record = self.spec.record
        n_frames = int(n_frames if n_frames is not None else (record.n_frames if record is not None else 120))
        fps = float(fps if fps is not None else self.spec.fps)
        self.draw_paths = True  # a planned motion's paths are drawn as the envs take them
        self.dt = 1.0 / fps
        self.apply_camera(res)
        t0 = time.perf_counter()
        def step(i):
            if before_frame is not None:
                before_frame(i)
            self.step()

        record_frames(self.scene, str(path), n_frames, step, fps=fps, progress=progress)
        seconds = time.perf_counter() - t0
        return {"path": Path(path), "frames": n_frames, "seconds": seconds, "fps": n_frames / max(seconds, 1e-9)}


def make_morph(spec: SceneSpec):
    """The engine morph of the spec's robot (catalog name or file resolved)."""
    path, fmt = resolve_robot(spec.robot.file, spec.base_dir)
    r = spec.robot
    if fmt == "urdf":  # a scene file's robot is fixed unless it says otherwise (URDF's own default: free)
        return morphs.URDF(file=path, pos=r.pos, quat=r.quat, scale=r.scale,
                           fixed=True if r.fixed is None else r.fixed)
    return morphs.MJCF(file=path, pos=r.pos, quat=r.quat, scale=r.scale)


def viewer_options(spec: SceneSpec) -> ViewerOptions:
    """The scene's viewer options: the file's ``camera`` (pos, lookat, fov) and ``record.resolution``;
    without a camera the visualizer frames every env."""
    res = spec.record.resolution if spec.record is not None else None
    if spec.camera is None:
        return ViewerOptions(res=res)
    return ViewerOptions(res=res, camera_pos=spec.camera.pos, camera_lookat=spec.camera.lookat,
                         camera_fov=spec.camera.fov)


def build(spec: SceneSpec, n_envs: int | None = None, debug_frames: bool = True):
    """``(scene, runner)``: an engine :class:`~engine.Scene` with the spec's robot and obstacles (fixed
    bodies, after the robot, in file order), built for ``n_envs`` envs (default: the file's), and
    the :class:`Runner` that animates and solves its targets.

    The spec is checked first (:func:`~engine.scenefile.io.check_spec`); problems raise
    :class:`SceneFileError`.
    """
    file = str(spec.source) if spec.source is not None else "<spec>"
    if n_envs is not None and (isinstance(n_envs, bool) or not isinstance(n_envs, int | np.integer) or n_envs < 1):
        raise InvalidValueError(f"n_envs: expected a positive integer, got {n_envs!r}")
    check_spec(spec, n_envs)
    try:
        morph = make_morph(spec)
        scene = Scene(sim_options=SimOptions(dt=1.0 / spec.fps), viewer_options=viewer_options(spec),
                      vis_options=studio_vis_options(), show_FPS=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the robot file's own notes (ignored mimics)
            robot = scene.add_entity(morph)
    except (ValueError, OSError, KeyError, TypeError) as err:
        raise SceneFileError(file, [Issue(("robot",), f"cannot load the robot: {err}")]) from None
    try:
        obstacles = add_obstacles(spec, scene)
    except ValueError as err:
        raise SceneFileError(file, [Issue(("obstacles",), str(err))]) from None
    scene.build(n_envs=int(n_envs if n_envs is not None else spec.envs.n_envs), env_spacing=spec.envs.env_spacing)
    return scene, Runner(spec, scene, robot, debug_frames=debug_frames, obstacles=obstacles)
