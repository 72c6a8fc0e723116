"""The IK entry points, mixed into :class:`~engine.entity.RigidEntity` (kept apart so the entity
module stays about state): ``solve_ik`` over :mod:`engine.ik.tasks`, and Genesis'
``inverse_kinematics`` / ``inverse_kinematics_multilink``, thin wrappers that make PoseTasks.

All three end in :func:`engine.ik.run` with an :class:`~engine.ik.request.IKRequest`. The Genesis
calls are what interactive loops repeat with new targets, so each keeps the request its
parameters made under a key of those parameters (their values and types; lists as tuples), and a
repeated call skips the validation; a parameter that cannot be a key (an array) is validated
again each call, and finds its plan by the request's value.
"""

from __future__ import annotations

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError
from ..runtime.locking import serialised
from . import first_call
from .limits import VelocityLimit, as_limits
from .options import BY_NAME, SolverOptions
from .request import make_request
from .result import IKResult
from .run import run
from .tasks import CollisionTask, PoseTask, PostureTask, Task


class _Default(int):
    """``max_samples``' default: 50, Genesis' (it compares equal to 50), told apart from a 50 the
    caller gave, because a tracking call (``track=True``) runs one sample unless asked for more."""

    def __repr__(self) -> str:
        return f"{int(self)}"


SAMPLES = _Default(BY_NAME["max_samples"].default)


class IKMethods:
    """``solve_ik``, ``inverse_kinematics`` and ``inverse_kinematics_multilink``."""

    @serialised
    def solve_ik(self, tasks, *, init_qpos=None, envs_idx=None, dofs_idx_local=None, respect_joint_limit=True,
                 max_samples=SAMPLES, max_solver_iters=20, damping=0.01, pos_tol=5e-4, rot_tol=5e-3, max_step_size=0.5,
                 seed=None, kernel="auto", avoid_collisions=False, collision_margin=0.0, limits=None,
                 track=False) -> IKResult:
        """One configuration per env meeting every task of ``tasks`` together.

        Args:
            tasks: :class:`~engine.ik.tasks.PoseTask`, ``RelativePoseTask``, ``ComTask``,
                ``CollisionTask`` (at least one of these) and at most one ``PostureTask``; targets
                ``(3,)`` / ``(4,)`` shared or ``(n_envs, 3)`` / ``(n_envs, 4)`` per env solved.
            init_qpos: start configuration ``([n_envs,] n_qs)``; None: the current state.
            envs_idx: envs to solve (None: all); dofs_idx_local: the dofs that may move (None: all).
            pos_tol, rot_tol: success tolerances (m, rad) of tasks that set none themselves.
            max_samples, max_solver_iters, damping, max_step_size, seed, kernel, avoid_collisions,
                collision_margin: as in ``inverse_kinematics`` (``avoid_collisions`` adds a
                ``CollisionTask(collision_margin)``).
            limits: :mod:`engine.ik.limits` objects bounding the answer besides the joint limits
                ``respect_joint_limit`` asks for, e.g. ``[VelocityLimit(2.0, dt=0.01)]``: no dof
                moves more than 2 rad/s x 10 ms from its start.
            track: velocity-limited tracking (:func:`tracking`): a VelocityLimit of the robot
                file's velocities and the scene's ``dt`` unless ``limits`` holds one, and one
                sample (no restart: it would be a jump) unless ``max_samples`` is given.
            max_samples: restarts per env: 50, or 1 with ``track`` unless given.

        Returns:
            An :class:`~engine.ik.IKResult`: qpos ``([n_envs,] n_qs)``, error ``([n_envs,] n_tasks, 6)``
            (PostureTask and CollisionTask excluded), success, iterations, sample, and with
            avoidance min_distance and min_pair. The state is not changed.
        """
        self.require_built()  # before build() or after destroy(): one StateError, whatever the arguments
        tasks = list(tasks) if isinstance(tasks, list | tuple) else [tasks]
        posture = [t for t in tasks if isinstance(t, PostureTask)]
        if len(posture) > 1:
            raise InvalidValueError(f"tasks: expected at most one PostureTask, got {len(posture)}")
        rows, labels, targets = [], [], []
        for i, task in enumerate(tasks):
            if isinstance(task, PostureTask):
                continue
            if not isinstance(task, Task):
                raise InvalidTypeError(f"tasks[{i}]: expected a task of engine.ik.tasks, got {type(task).__name__}")
            rows.append(task.row(self, f"tasks[{i}]"))
            labels.append(task.labels(f"tasks[{i}]"))
            targets.append((task.pos, task.quat))
        rest, weight = (posture[0].qpos, posture[0].weight) if posture else (None, 0.0)
        limits, settings = tracking(track, limits, _settings(locals()))
        options = SolverOptions.from_keywords(rest_weight=weight, **settings)
        if options.avoid_collisions:
            rows.append(CollisionTask(options.collision_margin).row(self, "avoid_collisions"))
            labels.append(("avoid_collisions", "avoid_collisions"))
        request = make_request(self, rows, labels, lambda i: "tasks" if i is None else f"tasks[{i}]",
                               envs_idx=envs_idx, options=options, dofs_idx_local=dofs_idx_local, rest_qpos=rest,
                               limits=limits, step=self.scene.dt)
        return run(self, request, targets, init_qpos, seed)

    @serialised
    def inverse_kinematics(self, link, pos=None, quat=None, local_point=None, init_qpos=None,
                           respect_joint_limit=True, max_samples=SAMPLES, max_solver_iters=20, damping=0.01,
                           pos_tol=5e-4, rot_tol=5e-3, pos_mask=(True, True, True), rot_mask=(True, True, True),
                           max_step_size=0.5, seed=None, dofs_idx_local=None, return_error=False, envs_idx=None,
                           return_info=False, rest_qpos=None, rest_weight=0.0, kernel="auto", avoid_collisions=False,
                           collision_margin=0.0, max_joint_velocity=None, dt=None, track=False):
        """Joint configuration placing ``link`` at ``pos`` ([n_envs,] 3) / ``quat`` ([n_envs,] 4, wxyz).

        Returns qpos ``([n_envs,] n_qs)``; with ``return_error`` also the masked error
        ``([n_envs,] 6)``; with ``return_info`` an :class:`~engine.ik.IKResult` instead. The scene's
        state is not changed: apply the answer with ``set_qpos`` or ``control_dofs_position``.
        ``rest_qpos`` (n_qs,) and ``rest_weight`` > 0 pick, among solutions meeting the tolerances,
        the one nearest ``rest_qpos`` (default: the robot's default qpos), and pull toward it.
        ``kernel``: "auto" (the solver compiled for this robot where it qualifies: fastest, ~10 s to
        compile the first time), "per_robot" or "generic" (compiled once for every robot); see
        :mod:`engine.runtime.dispatch`. ``avoid_collisions``: the answer keeps the robot's counted link
        pairs and its spheres and the scene's fixed obstacles at least ``collision_margin`` (m)
        apart, and success requires it (:class:`~engine.ik.tasks.CollisionTask`; off by default, as
        in Genesis); ``return_info`` then also gives each answer's ``min_distance``.
        ``max_joint_velocity`` (rad/s or m/s: a number, per dof ``(n_dofs,)``, or "file" for the
        robot file's velocity limits) with ``dt`` (s; None: the scene's ``dt``): no hinge or slide
        dof moves more than ``max_joint_velocity * dt`` from the start, enforced inside the solve
        (:class:`~engine.ik.limits.VelocityLimit`); None: no such bound (with ``track``: the robot
        file's). ``track``: velocity-limited tracking: the answer is the best configuration within
        that bound (the solve is constrained, not clipped), success means the tolerances were met
        within it, ``pos_error`` / ``rot_error`` of the info say how far the target still is, and
        no restart runs unless ``max_samples`` is given (50 restarts by default, 1 with ``track``).
        """
        self.require_built()  # before build() or after destroy(): one StateError, whatever the arguments
        return_error, return_info = _flags(return_error, return_info)
        settings = _settings(locals())
        params = (link, pos is None, quat is None, local_point, pos_mask, rot_mask, dofs_idx_local, envs_idx,
                  rest_qpos, max_joint_velocity, dt, track, *settings.values())
        request = self._genesis_request("single", params, lambda: self._pose_request(
            [link], [pos], [quat], [local_point], True, pos_mask, rot_mask, dofs_idx_local, envs_idx, rest_qpos,
            max_joint_velocity, dt, settings, track))
        result = run(self, request, [(pos, quat)], init_qpos, seed, distances=return_info)
        first_call.check(self, [link], [pos], result.success)
        if return_info:
            return result
        if return_error:
            return result.qpos, result.error[..., 0, :]
        return result.qpos

    @serialised
    def inverse_kinematics_multilink(self, links, poss=None, quats=None, local_points=None, init_qpos=None,
                                     respect_joint_limit=True, max_samples=SAMPLES, max_solver_iters=20, damping=0.01,
                                     pos_tol=5e-4, rot_tol=5e-3, pos_mask=(True, True, True),
                                     rot_mask=(True, True, True), max_step_size=0.5, seed=None,
                                     dofs_idx_local=None, return_error=False, envs_idx=None, return_info=False,
                                     rest_qpos=None, rest_weight=0.0, kernel="auto", avoid_collisions=False,
                                     collision_margin=0.0, max_joint_velocity=None, dt=None, track=False):
        """One configuration meeting every link's target together.

        ``links``: list of links; ``poss`` / ``quats`` / ``local_points``: lists of the same length
        whose entries may be None (no position / no orientation target for that link; not both).
        Returns qpos ``([n_envs,] n_qs)``, plus the error ``([n_envs,] n_links, 6)`` with
        ``return_error``, or an :class:`~engine.ik.IKResult` with ``return_info``.
        ``avoid_collisions`` / ``collision_margin``, ``max_joint_velocity`` / ``dt``, ``track``,
        ``max_samples``: as in ``inverse_kinematics``.
        """
        self.require_built()  # before build() or after destroy(): one StateError, whatever the arguments
        return_error, return_info = _flags(return_error, return_info)
        links = list(links) if isinstance(links, list | tuple) else [links]
        n = len(links)
        poss, quats, local_points = (_per_link(name, value, n) for name, value in
                                     (("poss", poss), ("quats", quats), ("local_points", local_points)))
        settings = _settings(locals())
        params = (tuple(links), tuple(p is None for p in poss), tuple(q is None for q in quats), tuple(local_points),
                  pos_mask, rot_mask, dofs_idx_local, envs_idx, rest_qpos, max_joint_velocity, dt, track,
                  *settings.values())
        request = self._genesis_request("multi", params, lambda: self._pose_request(
            links, poss, quats, local_points, False, pos_mask, rot_mask, dofs_idx_local, envs_idx, rest_qpos,
            max_joint_velocity, dt, settings, track))
        result = run(self, request, list(zip(poss, quats, strict=True)), init_qpos, seed, distances=return_info)
        first_call.check(self, links, poss, result.success)
        if return_info:
            return result
        if return_error:
            return result.qpos, result.error
        return result.qpos

    def _genesis_request(self, kind: str, params: tuple, make):
        """The request kept for these parameters, or ``make()`` (validating them) and kept."""
        # every value keyed with its type, inside sequences too: 1 == True == 1.0 hash alike, and a
        # request validated for dofs_idx_local=(1, 0) must not serve (True, False), which is refused
        key = (kind, _keyed(params))
        try:
            hash(key)
        except TypeError:  # an array: validated every call (its request then finds its plan by value)
            return make()
        return self.ik_state.kept_request(key, make)

    def _pose_request(self, links, poss, quats, local_points, single, pos_mask, rot_mask, dofs_idx_local, envs_idx,
                      rest_qpos, max_joint_velocity, dt, settings: dict, track=False):
        """The request of a Genesis call: one world :class:`~engine.ik.tasks.PoseTask` per link (and a
        CollisionTask with ``avoid_collisions``; a VelocityLimit with ``max_joint_velocity``, or
        the robot file's with ``track``); ``settings``: the call's solver keywords
        (:data:`engine.ik.options.SETTINGS`)."""
        def label(plural: str, singular: str):
            return lambda i: (plural if single is False else singular) if i is None else \
                (singular if single else f"{plural}[{i}]")

        link_label, point_label = label("links", "link"), label("local_points", "local_point")
        pos_label, quat_label = label("poss", "pos"), label("quats", "quat")
        n = len(links)
        if n == 0:
            raise InvalidValueError("links: expected at least one link")
        resolved = [self.own_link(link, link_label(i)) for i, link in enumerate(links)]
        for name, seq in (("poss", poss), ("quats", quats), ("local_points", local_points)):
            if len(seq) != n:
                raise InvalidValueError(f"{name}: expected {n} entries (one per link), got {len(seq)}")
        for i in range(n):
            if poss[i] is None and quats[i] is None:
                raise InvalidValueError(f"{pos_label(i)}, {quat_label(i)}: link '{resolved[i].name}' has neither a "
                                        "position nor an orientation target")
        points = [None if p is None else inputs.as_point(point_label(i), p) for i, p in enumerate(local_points)]
        if inputs.as_flag("track", track) and max_joint_velocity is None:
            max_joint_velocity = "file"
        limits, settings = tracking(track, _velocity(max_joint_velocity, dt), settings)
        options = SolverOptions.from_keywords(**settings)
        tasks = [PoseTask(link, poss[i], quats[i], pos_mask=pos_mask, rot_mask=rot_mask, local_point=points[i])
                 for i, link in enumerate(resolved)]
        rows = [task.row(self, link_label(i)) for i, task in enumerate(tasks)]
        labels = [(pos_label(i), quat_label(i)) for i in range(n)]
        if options.avoid_collisions:
            rows.append(CollisionTask(options.collision_margin).row(self, "avoid_collisions"))
            labels.append(("avoid_collisions", "avoid_collisions"))
        return make_request(self, rows, labels, link_label, envs_idx=envs_idx, options=options,
                            dofs_idx_local=dofs_idx_local, rest_qpos=rest_qpos, limits=limits, step=self.scene.dt,
                            limit_label=lambda i: "max_joint_velocity")


_SEQUENCES = (list, tuple)


def _keyed(params: tuple) -> tuple:
    """``params`` with every value's type beside it, one level into lists and tuples (the
    sequence parameters are flat: masks, index lists, points); a deeper list stays unhashable,
    so its call is validated every time."""
    return tuple([(type(p), tuple(p), tuple(map(type, p))) if type(p) in _SEQUENCES else (type(p), p)
                  for p in params])


def _settings(arguments: dict) -> dict:
    """The solver settings among a call's ``arguments`` (its ``locals()`` on entry), by name
    (:data:`engine.ik.options.SETTINGS`), so each call spells its settings once: in its
    signature. Checked later, by :meth:`SolverOptions.from_keywords` (a margin is checked even
    when avoidance is off, so a typo is never silent)."""
    return {name: arguments[name] for name in BY_NAME if name in arguments}


def _velocity(max_joint_velocity, dt) -> list:
    """The Genesis calls' velocity keywords as limits (``dt`` checked even without a velocity)."""
    if dt is not None:
        inputs.as_positive("dt", dt)
    return [] if max_joint_velocity is None else [VelocityLimit(max_joint_velocity, dt)]




def tracking(track, limits, settings: dict) -> tuple[list, dict]:
    """``(limits, settings)`` of a call with ``track`` (velocity-limited tracking): ``limits`` (a list
    of :mod:`engine.ik.limits` objects or None) with a ``VelocityLimit("file")`` added when tracking
    and it holds none; ``settings`` (the call's solver keywords) with ``max_samples`` 1 when
    tracking and the caller left it at its default (a restart would be a jump)."""
    track = inputs.as_flag("track", track)
    limits = as_limits(limits)
    if track and not any(isinstance(limit, VelocityLimit) for limit in limits):
        limits = [*limits, VelocityLimit("file")]
    if track and settings.get("max_samples") is SAMPLES:
        settings = {**settings, "max_samples": 1}
    return limits, settings


def _flags(return_error, return_info) -> tuple[bool, bool]:
    """The two return-shape flags, checked (a string such as 'no' is not False)."""
    return inputs.as_flag("return_error", return_error), inputs.as_flag("return_info", return_info)


def _per_link(name: str, value, n: int) -> list:
    """A per-link argument of the multilink call as a list (None: n Nones); a scalar or a string is
    a TypeError naming ``name``."""
    if value is None:
        return [None] * n
    if isinstance(value, list | tuple) or (hasattr(value, "__len__") and hasattr(value, "__getitem__")
                                           and not isinstance(value, str | bytes)):
        return list(value)
    raise InvalidTypeError(f"{name}: expected a list with one entry per link ({n}), got {type(value).__name__}")
