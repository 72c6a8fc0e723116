"""A validated IK request: everything about a solve but its targets, start configurations and seed.

:class:`IKRequest` is frozen and made only of plain values (tuples, numbers, strings), so two equal
requests are equal and hash alike: it is the key under which :mod:`engine.ik.plan` keeps the
kernel tables it packs. :func:`make_request` validates every argument once, and its errors name
the argument (as the caller spelt it: ``link`` for ``inverse_kinematics``, ``links[1]`` for the
multilink call, ``tasks[1].link`` for ``solve_ik``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError
from ..kernels import per_robot
from ..kernels.kinds import kind_of
from ..kernels.tables import COLLIDE
from ..runtime import dispatch
from ..runtime.randomness import draw_seed
from .limits import JointPositionLimit, LimitRow, as_limits
from .options import SolverOptions
from .tasks import TaskRow


@dataclass(frozen=True)
class IKRequest:
    """One kind of solve on one entity.

    ``rows``: the tasks' structures; ``labels``: per task, how errors name its position and
    orientation targets; ``envs``: env indices solved (None: all); ``dofs``: the dofs the solver
    may move (None: all); ``rest``: the posture (n_qs,) the pull aims at, ``rest_weight`` its
    weight (0: no pull, first success wins); tolerances in m / rad, ``max_step`` in rad or m per
    iteration; ``kernel``: see :data:`engine.runtime.dispatch.KERNELS`. ``respect_limits``: the joint
    limits bound the solve (:class:`~engine.ik.limits.JointPositionLimit`); ``limits``: the rows of
    any other limits (:mod:`engine.ik.limits`), with the joint limits' first when they are respected;
    empty without such limits (then the solver reads the joint limits from the robot's tables)."""

    rows: tuple[TaskRow, ...]
    labels: tuple[tuple[str, str], ...]
    envs: tuple[int, ...] | None
    respect_limits: bool
    max_samples: int
    max_iters: int
    damping: float
    pos_tol: float
    rot_tol: float
    max_step: float
    dofs: tuple[int, ...] | None
    rest: tuple[float, ...]
    rest_weight: float
    kernel: str
    limits: tuple[LimitRow, ...] = ()

    @property
    def boxed(self) -> bool:
        """Whether the solve's bounds depend on the call (a limit other than the joint limits): the
        kernels then read a box per env beside the start configurations."""
        return bool(self.limits)

    @property
    def n_tasks(self) -> int:
        return len(self.rows)

    @property
    def structure(self) -> tuple[tuple[int, int, int], ...]:
        return tuple(row.structure for row in self.rows)

    @property
    def collide_index(self) -> int | None:
        """The index of the COLLIDE task (collision avoidance) among the rows, or None."""
        return next((i for i, row in enumerate(self.rows) if row.kind == COLLIDE), None)


def make_request(entity, rows: list[TaskRow], labels: list[tuple[str, str]], link_label, *, envs_idx,
                 options: SolverOptions, dofs_idx_local, rest_qpos, limits=None, step: float = 0.01,
                 limit_label=lambda i: f"limits[{i}]") -> IKRequest:
    """Validate the parameters of a solve of ``rows`` on ``entity`` (built). ``options``: the solver
    settings, checked when they were made; ``link_label(i)`` names task i's link in errors.
    ``limits``: :class:`~engine.ik.limits.Limit` objects besides the joint limits that
    ``options.respect_joint_limit`` asks for (a JointPositionLimit among them asks too);
    ``step``: the scene's time step (s), the ``dt`` of limits that give none; ``limit_label(i)``
    names limit i in errors."""
    tree = entity.tree
    if tree.n_dofs == 0:
        raise InvalidValueError(f"inverse kinematics: entity '{tree.name}' has no degrees of freedom (a fixed "
                                "body or robot): there is nothing to solve for")
    if not rows:
        raise InvalidValueError(f"{link_label(None)}: expected at least one")
    avoiding = [i for i, row in enumerate(rows) if row.kind == COLLIDE]
    if len(avoiding) > 1:
        raise InvalidValueError(f"{link_label(avoiding[1])}: a second collision avoidance task; give at most one "
                                "(avoid_collisions=True adds one)")
    seen: dict = {}
    for i, row in enumerate(rows):  # the same point of a link twice: two targets for one thing
        key = (row.kind, row.link, row.ref, row.point)
        if key in seen:
            name = f"link '{entity.links[row.link].name}'" if row.link >= 0 else kind_of(row.kind).name
            raise InvalidValueError(f"{link_label(i)}: {name} (local point {list(row.point)}) is also "
                                    f"{link_label(seen[key])}; give each point one target (the same link at another "
                                    "local_point is fine)")
        seen[key] = i
    envs = entity.configuration.envs(envs_idx)
    rest = tree.default_qpos.copy() if rest_qpos is None else inputs.as_float_array("rest_qpos", rest_qpos)
    if rest.shape != (tree.n_qs,):
        raise InvalidValueError(f"rest_qpos: expected shape ({tree.n_qs},), got {rest.shape}")
    tree.check_joint_values("rest_qpos", rest)
    dofs = None
    if dofs_idx_local is not None:
        dofs = tuple(int(d) for d in inputs.as_index_list("dofs_idx_local", dofs_idx_local, tree.n_dofs, "dof"))
    limits = as_limits(limits)
    respect = options.respect_joint_limit or any(
        isinstance(limit, JointPositionLimit) for limit in limits)
    extra = [limit.row(tree, limit_label(i), step) for i, limit in enumerate(limits)
             if not isinstance(limit, JointPositionLimit)]
    if extra and respect:
        extra.insert(0, JointPositionLimit().row(tree, "respect_joint_limit", step))
    request = IKRequest(
        rows=tuple(rows), labels=tuple(labels), envs=None if envs_idx is None else tuple(int(e) for e in envs),
        respect_limits=respect, limits=tuple(extra),
        max_samples=options.max_samples, max_iters=options.max_solver_iters, damping=options.damping,
        pos_tol=options.pos_tol, rot_tol=options.rot_tol, max_step=options.max_step_size, dofs=dofs,
        rest=tuple(float(v) for v in rest), rest_weight=options.rest_weight, kernel=options.kernel)
    solver_spec(entity, request)  # a kernel the robot cannot have is refused now, by name
    return request


def solver_spec(entity, request: IKRequest):
    """The robot's spec when the per-robot solver runs this request, else None (the generic one)."""
    spec = entity.configuration.spec
    used = per_robot.used_links(spec, request.structure) if spec is not None else ()
    moving = spec.moving_dofs(used) if spec is not None else ()
    what = ", ".join(repr(entity.links[row.link].name) if row.link >= 0 else kind_of(row.kind).name
                     for row in request.rows)
    n_sel = len(entity.configuration.envs(None if request.envs is None else list(request.envs)))
    per_thread = -(-request.max_samples // dispatch.restart_slots(n_sel, request.max_samples))
    return dispatch.ik_solver(request.kernel, spec, moving, entity.tree.name, what,
                              avoiding=request.collide_index is not None, samples_per_thread=per_thread,
                              max_iters=request.max_iters)


def as_seed(seed) -> int:
    """The call's hash seed: ``seed`` (an int), or a fresh random one for None."""
    if seed is None:  # from the process's generator, which init(seed=...) seeds (engine.runtime.randomness)
        return draw_seed()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise InvalidTypeError(f"seed: expected an int or None, got {seed!r}")
    return int(seed) % (2**31)
