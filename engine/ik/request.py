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
from ..kernels.tables import COLLIDE, COM
from ..runtime import dispatch
from .tasks import TaskRow


@dataclass(frozen=True)
class IKRequest:
    """One kind of solve on one entity.

    ``rows``: the tasks' structures; ``labels``: per task, how errors name its position and
    orientation targets; ``envs``: env indices solved (None: all); ``dofs``: the dofs the solver
    may move (None: all); ``rest``: the posture (n_qs,) the pull aims at, ``rest_weight`` its
    weight (0: no pull, first success wins); tolerances in m / rad, ``max_step`` in rad or m per
    iteration; ``kernel``: see :data:`engine.runtime.dispatch.KERNELS`."""

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
                 respect_joint_limit, max_samples, max_solver_iters, damping, pos_tol, rot_tol, max_step_size,
                 dofs_idx_local, rest_qpos, rest_weight, kernel) -> IKRequest:
    """Validate the parameters of a solve of ``rows`` on ``entity`` (built). ``link_label(i)``
    names task i's link in errors."""
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
            name = f"link '{entity.links[row.link].name}'" if row.link >= 0 else "the centre of mass"
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
    request = IKRequest(
        rows=tuple(rows), labels=tuple(labels), envs=None if envs_idx is None else tuple(int(e) for e in envs),
        respect_limits=inputs.as_flag("respect_joint_limit", respect_joint_limit),
        max_samples=inputs.as_positive("max_samples", max_samples, integer=True),
        max_iters=inputs.as_positive("max_solver_iters", max_solver_iters, integer=True, allow_zero=True),
        damping=inputs.as_positive("damping", damping), pos_tol=inputs.as_positive("pos_tol", pos_tol),
        rot_tol=inputs.as_positive("rot_tol", rot_tol), max_step=inputs.as_positive("max_step_size", max_step_size),
        dofs=dofs, rest=tuple(float(v) for v in rest),
        rest_weight=inputs.as_positive("rest_weight", rest_weight, allow_zero=True), kernel=kernel)
    solver_spec(entity, request)  # a kernel the robot cannot have is refused now, by name
    return request


def solver_spec(entity, request: IKRequest):
    """The robot's spec when the per-robot solver runs this request, else None (the generic one)."""
    spec = entity.configuration.spec
    used = per_robot.used_links(spec, request.structure) if spec is not None else ()
    moving = spec.moving_dofs(used) if spec is not None else ()
    what = ", ".join(repr(entity.links[row.link].name) if row.link >= 0 else
                     "the centre of mass" if row.kind == COM else "collision avoidance" for row in request.rows)
    return dispatch.ik_solver(request.kernel, spec, moving, entity.tree.name, what,
                              avoiding=request.collide_index is not None)


def as_seed(seed) -> int:
    """The call's hash seed: ``seed`` (an int), or a fresh random one for None."""
    if seed is None:
        return int(np.random.randint(0, 2**31 - 1))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise InvalidTypeError(f"seed: expected an int or None, got {seed!r}")
    return int(seed) % (2**31)
