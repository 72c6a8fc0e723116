"""The kernel tables of an :class:`~engine.ik.request.IKRequest`, packed once and kept.

An interactive caller (the app, a control loop) solves again and again with new targets and the
same everything else. Packing the request's tables costs more in Python than a 16-env solve
itself, so :func:`get_plan` packs them once per distinct request and keeps the :class:`IKPlan` in
the entity's :class:`PlanCache`; later calls only copy their targets and start configurations into
the plan's buffers, which are the very arrays the kernel was last launched with (see
:class:`engine.runtime.launch.FastKernel`). The columns are named in :mod:`engine.kernels.tables`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..collision.checks import AvoidTables
from ..kernels import kinds
from ..kernels.tables import (
    COLLIDE,
    COM,
    DOF_I,
    QPOS_REST_F,
    SOLVE_F,
    SOLVE_I,
    START_BLOCKS,
    TARGET,
    TASK_F,
    TASK_F_WIDTH,
    TASK_I,
    TASK_I_WIDTH,
    dof_row,
    rest_row,
    task_row,
)
from ..runtime import dispatch
from .request import IKRequest, solver_spec

MAX_PLANS = 16  # per entity; the least recently used is dropped beyond this
# continuity (engine.kernels.solver): when the warm start fails, the success nearest the start among
# samples 1 .. CONTINUITY_WINDOW - 1 wins. A wider window finds nearer branches and runs more samples
# where the warm start fails (bench/ik_cpu.py: random far targets)
CONTINUITY_WINDOW = 8


@dataclass(eq=False)
class IKPlan:
    """A request's kernel tables and per-call buffers.

    ``task_i`` / ``task_f``: the request tables (``SOLVE_I.seed`` is set per call); ``targets``
    (n_sel, Lt, 7), ``q0`` (n_sel, n_qs_k; with a box, :data:`~engine.kernels.tables.START_BLOCKS`
    blocks of n_qs_k: the start, the box's lower and upper bounds), ``done`` (n_sel,): refilled by
    every call; ``envs``: the env indices solved; ``K``: restart slots per env; ``spec``: the
    robot's spec when the per-robot solver runs, else None; ``fixed``: the generic solver's
    compile-time sizes (zeros: run time); ``fields``: the targets each call fills, ``(task, 0 pos /
    1 quat, first column, width, label)``; ``budget``: the generic solver's iterations per launch (0: one launch,
    :func:`engine.runtime.dispatch.solver_budget` of ``budget_sizes``, and of the avoidance search's loops
    once :meth:`update_avoidance` ran); ``kernel``: the per-robot solver, once it was asked for;
    ``avoid``: the collision tables (:class:`~engine.collision.checks.AvoidTables`; placeholders unless the
    request avoids collisions); ``scalar_qs``: the qpos entries of hinges and slides (what
    ``IKResult.step`` measures)."""

    request: IKRequest
    envs: np.ndarray
    K: int
    spec: object
    fixed: tuple[int, int, int]
    task_i: np.ndarray
    task_f: np.ndarray
    targets: np.ndarray
    q0: np.ndarray
    done: np.ndarray
    fields: tuple = ()
    budget: int = 0
    budget_sizes: tuple | None = None
    kernel: object = None
    avoid: AvoidTables | None = None
    scalar_qs: tuple = ()

    def update_avoidance(self, entity) -> None:
        """Before a solve that avoids collisions: the tables for the current pairs and obstacles
        (:meth:`AvoidTables.update`), and the launch budget for their search."""
        self.avoid.update(entity, self.envs)
        if self.budget_sizes is not None:
            self.budget = dispatch.solver_budget(*self.budget_sizes, self.avoid.solver_loops)

    def share_avoidance(self, base: IKPlan) -> None:
        """Before a solve that avoids collisions, for a plan of some of ``base``'s restarts (same
        request, :func:`pack`'s ``samples``): ``base``'s tables, just updated, and the launch
        budget for their search."""
        self.avoid = base.avoid
        if self.budget_sizes is not None:
            self.budget = dispatch.solver_budget(*self.budget_sizes, self.avoid.solver_loops)

    @property
    def n_sel(self) -> int:
        return len(self.envs)

    @property
    def n_tasks(self) -> int:
        return self.request.n_tasks

    @property
    def all_envs(self) -> bool:
        return self.request.envs is None

    @property
    def exhaustive(self) -> int:
        """1 when every sample runs, for the choice nearest the rest posture."""
        return int(self.request.rest_weight > 0)

    @property
    def continuity(self) -> int:
        """1 when a failed warm start is followed by the successful sample nearest the start (within
        the window, :data:`CONTINUITY_WINDOW`)."""
        return int(self.request.rest_weight == 0)


class PlanCache:
    """An entity's plans by request, least recently used dropped beyond :data:`MAX_PLANS`. Used
    under the entity's lock (every IK entry point holds it: :mod:`engine.runtime.locking`), so it takes
    none of its own."""

    def __init__(self):
        self._plans: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self._plans)

    def clear(self) -> None:
        self._plans.clear()

    def values(self) -> list[IKPlan]:
        """The kept plans, least recently used first."""
        return list(self._plans.values())

    def get(self, entity, request: IKRequest, samples: tuple[int, int | None] | None = None) -> IKPlan:
        """``request``'s plan; ``samples``: a plan that runs some restarts only (:func:`pack`)."""
        key = request if samples is None else (request, samples)
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        plan = pack(entity, request, samples)
        self._plans[key] = plan
        while len(self._plans) > MAX_PLANS:
            self._plans.popitem(last=False)
        return plan


def used_links(tree, rows) -> tuple[int, ...]:
    """The links whose dofs the solver moves (local indices, sorted): each task kind's
    (:func:`engine.kernels.kinds.used_links`)."""
    return kinds.used_links([row.structure for row in rows], np.flatnonzero(tree.link_masses > 0), tree.n_links)


def continuity_weights(tree, active: np.ndarray) -> np.ndarray:
    """Per qpos entry ``(n_qs,)``, its weight in the distance from the start by which continuity
    chooses among successful restarts (:mod:`engine.kernels.solver`): ``1 / range^2`` for a hinge
    or slide the solver moves (range: its joint limits; an unbounded hinge 2 pi rad, an unbounded
    slide 1 m), so that every dof's full travel counts alike; 0 for every other entry."""
    lo, hi = tree.q_limits()
    out = np.zeros(tree.n_qs)
    for j in tree.joints:
        if j.n_qs == 1 and j.mimic is None and active[j.dof_start]:
            span = hi[j.q_start] - lo[j.q_start]
            if not np.isfinite(span) or span <= 0:
                span = 1.0 if j.type == "prismatic" else 2 * np.pi
            out[j.q_start] = 1.0 / span**2
    return out


def pack(entity, request: IKRequest, samples: tuple[int, int | None] | None = None) -> IKPlan:
    """The kernel tables of ``request`` on ``entity`` (validated already).

    ``samples`` (the later solves of an avoiding request, :mod:`engine.ik.avoiding`; a request
    without a posture pull): ``(first, count)``: the restarts ``first .. first + count - 1`` alone
    (within ``request.max_samples``), one thread each (``K = count``), so that each thread's kept
    answer is its restart's; the continuity window spans them all, so that no success skips
    another. ``(first, None)``: the restarts from ``first`` on, as a whole solve runs them
    (``first`` at least the continuity window: the lowest success wins).

    The solver moves only the dofs that move a link the tasks use (within ``request.dofs``): a
    restart draws them alone, and every other dof, the posture pull included, keeps its start
    value bit for bit (a target on one hand never moves the legs; with joint limits respected a
    start outside them is first clamped, as every dof's is)."""
    tree = entity.tree
    dtype = entity.configuration.dtype
    envs = entity.configuration.envs(None if request.envs is None else list(request.envs))
    n_sel, Lt = len(envs), request.n_tasks
    n_qs_k, n_dofs_k = max(tree.n_qs, 1), max(tree.n_dofs, 1)
    first, count = samples or (0, None)
    K = dispatch.restart_slots(n_sel, request.max_samples - first) if count is None else count
    moving = tree.moving_dofs(used_links(tree, request.rows))
    active = np.zeros(n_dofs_k, np.int32)  # the dofs the solver moves: those that move a task ...
    active[list(moving)] = 1
    if request.dofs is not None:  # ... among the ones the caller allows
        allowed = np.zeros_like(active)
        allowed[list(request.dofs)] = 1
        active &= allowed
    # plain rows need no masking: every dof that moves a task is active (the others' Jacobian
    # columns are zero anyway)
    # (a COLLIDE task's rows are masked on their own)
    plain = all(row.plain for row in request.rows if row.kind != COLLIDE) and bool(active[list(moving)].all())

    task_i = np.zeros((1 + Lt + n_dofs_k, TASK_I_WIDTH), np.int32)
    head = task_i[0]
    head[SOLVE_I.max_iters], head[SOLVE_I.n_samples], head[SOLVE_I.slots] = (request.max_iters, request.max_samples,
                                                                             K)
    head[SOLVE_I.respect_limits] = int(request.respect_limits or request.boxed)  # a box is enforced as limits are
    head[SOLVE_I.exhaustive] = int(request.rest_weight > 0)
    head[SOLVE_I.continuity] = CONTINUITY_WINDOW if request.rest_weight == 0 else 0
    head[SOLVE_I.first], head[SOLVE_I.end] = first, request.max_samples
    if count is not None:
        head[SOLVE_I.continuity] = head[SOLVE_I.end] = first + count
    head[SOLVE_I.plain] = int(plain)
    task_f = np.zeros((1 + Lt + n_qs_k, TASK_F_WIDTH), dtype)
    task_f[0, SOLVE_F.damping], task_f[0, SOLVE_F.max_step] = request.damping, request.max_step
    task_f[0, SOLVE_F.rest_weight] = request.rest_weight
    for i, row in enumerate(request.rows):
        ri, rf = task_i[task_row(i)], task_f[task_row(i)]
        ri[TASK_I.kind], ri[TASK_I.link], ri[TASK_I.ref] = row.kind, row.link, row.ref
        ri[TASK_I.has_pos], ri[TASK_I.rot_mode] = int(row.has_pos), row.rot_mode
        rf[TASK_F.point:TASK_F.point + 3] = row.point
        rf[TASK_F.pos_mask:TASK_F.pos_mask + 3] = row.pos_mask
        rf[TASK_F.weight] = row.weight
        rf[TASK_F.pos_tol] = request.pos_tol if row.pos_tol is None else row.pos_tol
        rf[TASK_F.rot_tol] = request.rot_tol if row.rot_tol is None else row.rot_tol
        rf[TASK_F.margin] = row.margin
        rf[TASK_F.axis:TASK_F.axis + 3] = row.axis
    task_i[dof_row(Lt, 0):, DOF_I.active] = active
    task_f[rest_row(Lt, 0):rest_row(Lt, tree.n_qs), QPOS_REST_F.rest] = request.rest
    task_f[rest_row(Lt, 0):rest_row(Lt, tree.n_qs), QPOS_REST_F.span] = continuity_weights(tree, active)
    targets = np.zeros((n_sel, Lt, TARGET.width), dtype)
    targets[..., TARGET.quat] = 1.0  # tasks without an orientation target hold (1, 0, 0, 0)
    spec = solver_spec(entity, request)
    fixed = (0, 0, 0) if spec is not None else dispatch.fixed_sizes(request.kernel, Lt, n_dofs_k, n_sel)
    sizes = (tree.n_links, tree.n_joints, Lt, tree.n_dofs, any(row.kind == COM for row in request.rows))
    budget = 0 if spec is not None else dispatch.solver_budget(*sizes)
    return IKPlan(request=request, envs=envs, K=K, spec=spec, fixed=fixed, task_i=task_i, task_f=task_f,
                  targets=targets, q0=np.zeros((n_sel, n_qs_k * (START_BLOCKS if request.boxed else 1)), dtype),
                  done=np.zeros(n_sel, np.int32),
                  fields=tuple((i, which, col, width, request.labels[i][which])
                               for i, row in enumerate(request.rows)
                               for which, col, width, wanted in ((0, TARGET.pos, 3, row.has_pos),
                                                                 (1, TARGET.quat, 4, row.has_quat)) if wanted),
                  budget=budget, budget_sizes=None if spec is not None else sizes, avoid=AvoidTables(n_sel, dtype),
                  scalar_qs=tuple(j.q_start for j in tree.joints if j.n_qs == 1))
