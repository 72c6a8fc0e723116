"""A validated IK request, kept for the next call with the same parameters.

An interactive caller (the app, a control loop) calls IK again and again with new targets and
the same everything else. Validating ~20 arguments and rebuilding the kernel's task arrays costs
~100 us per call in Python, more than a 16-env solve itself. :func:`get_plan` does that work once
per distinct set of parameters (targets, start configurations and seed aside) and keeps an
:class:`IKPlan` on the entity; later calls only check and copy their targets into the plan's
buffers, which are the very arrays the kernel was last launched with (see
:class:`engine.kernels.launch.FastKernel`).

A request is recognised by a key made of its parameters' values and types (arrays by their
bytes), so an equal request finds the plan whatever objects carry it; a parameter that cannot be
made into a key (an unhashable object) simply skips the cache. Values that compare equal but
differ in type (1, 1.0, True) are different keys: the validation does not accept them alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import backend, inputs
from .kernels import spec as spec_mod

MAX_PLANS = 16  # per entity; the oldest is dropped beyond this
MAX_THREADS = 1 << 16  # (env x restart) threads per call; bounds scratch memory
_CPU_COUNT = os.cpu_count() or 1

# ``kernel`` argument of the IK calls:
# - "auto": the solver compiled for the robot (engine.kernels.static_ik: 2-3x the generic solver's
#   throughput on a CPU) when the robot qualifies (hinges, slides and fixed joints, mimic allowed,
#   up to 16 dofs), else the generic one. Compiling it takes ~10 s on a 2-core CPU the first time a
#   (robot, number of task links, precision) is solved, then ~2 s per process from taichi's disk cache.
# - "per_robot": that solver, or a ValueError when the robot does not qualify.
# - "generic": the solver compiled once for every robot (what the app uses, switching robots and
#   target counts interactively).
KERNELS = ("auto", "per_robot", "generic")


@dataclass(eq=False)
class IKPlan:
    """Everything about a request but its targets, start configurations and seed.

    ``task_i`` / ``task_f``: the kernel's task arrays (``task_i[0, 3]``, the seed, is set per call);
    ``targets`` (n_sel, Lt, 7), ``q0`` (n_sel, n_qs_k), ``done`` (n_sel,): per-call buffers, refilled
    by every call; ``has_pos`` / ``has_quat``: which targets each task has; ``K``: restart slots
    per env; ``spec``: the robot's spec when the per-robot solver runs, else None.
    """

    links: list
    envs: np.ndarray
    all_envs: bool
    has_pos: tuple[bool, ...]
    has_quat: tuple[bool, ...]
    respect_limits: bool
    exhaustive: int
    K: int
    spec: object
    task_i: np.ndarray
    task_f: np.ndarray
    targets: np.ndarray
    q0: np.ndarray
    done: np.ndarray

    @cached_property
    def task_links(self) -> tuple[int, ...]:
        """Local indices of the task links (the per-robot solver is compiled for them)."""
        return tuple(link.idx_local for link in self.links)

    @property
    def n_sel(self) -> int:
        return len(self.envs)

    @property
    def n_tasks(self) -> int:
        return len(self.links)


def restart_slots(n_envs: int, max_samples: int) -> int:
    """How many restarts of one env run side by side (threads = n_envs x slots).

    On a GPU every restart gets its own thread (bounded by :data:`MAX_THREADS`). On the CPU, where
    a few cores are already kept busy by the envs, extra slots only run restarts that an earlier
    success makes useless, so slots are added only until there are ~4 threads per core.
    """
    if backend.STATE.arch == "cpu":
        want = -(-4 * _CPU_COUNT // n_envs)
    else:
        want = MAX_THREADS // n_envs
    return max(1, min(max_samples, want))


def rot_mode(rot_mask: np.ndarray) -> int:
    """Kernel code of a rot_mask: 3 full, -1 free, k to align axis k."""
    n = int(rot_mask.sum())
    if n == 3:
        return 3
    if n == 0:
        return -1
    if n == 1:
        return int(np.argmax(rot_mask))
    raise ValueError(f"rot_mask: got {rot_mask.tolist()}; two aligned axes fix the third, so use all three "
                     "(full orientation), one (align that axis) or none")


def per_robot_spec(entity, kernel, links):
    """The robot's spec when the per-robot solver is to run for task ``links`` (RigidLinks), else
    None. That solver is compiled over the dofs that move the task links, so it needs one."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    spec = None if kernel == "generic" else entity._spec
    if kernel == "per_robot" and spec is None:
        raise ValueError(f"kernel: '{entity.tree.name}' has no per-robot solver (it takes robots of hinges, "
                         f"slides and fixed joints with up to {spec_mod.MAX_DOFS} dofs); use kernel='auto' or "
                         "'generic'")
    if spec is not None and not spec.moving_dofs([link.idx_local for link in links]):
        if kernel == "per_robot":
            raise ValueError(f"kernel: no joint moves {', '.join(repr(link.name) for link in links)}, so there "
                             "is no per-robot solver for them; use kernel='auto' or 'generic'")
        spec = None  # auto: the generic solver reports how far the fixed links are from their targets
    return spec


_SCALARS = frozenset((type(None), bool, int, float, str))


def _hashable(value):
    """``value`` as a hashable key of its contents (TypeError when it has none)."""
    kind = type(value)
    if kind in _SCALARS:
        return kind, value
    if kind is list or kind is tuple:
        return tuple([_hashable(v) for v in value])
    if isinstance(value, np.generic):
        return kind, value.item()
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    hash(value)  # e.g. a RigidLink (frozen dataclass); raises TypeError for unhashable objects
    return kind, value


def _tuple(value):
    """Lists as tuples (hashable, and equal to the same values given as a tuple)."""
    return tuple(value) if type(value) is list else value


def get_plan(entity, links, poss, quats, local_points, init_qpos_given, respect_joint_limit, max_samples,
             max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask, max_step_size, dofs_idx_local,
             envs_idx, rest_qpos, rest_weight, single, kernel) -> IKPlan:
    """The entity's plan for these parameters, built (every argument validated) on first use."""
    params = (tuple(links), tuple(p is None for p in poss), tuple(q is None for q in quats), tuple(local_points),
              init_qpos_given, respect_joint_limit, max_samples, max_solver_iters, damping, pos_tol, rot_tol,
              _tuple(pos_mask), _tuple(rot_mask), max_step_size, _tuple(dofs_idx_local), _tuple(envs_idx),
              rest_qpos, rest_weight, single, kernel)
    # the types are part of the key: 1 == True == 1.0 hash alike, and a plan built (and validated) for
    # respect_joint_limit=True must not serve respect_joint_limit=1, which the validation refuses
    params = (params, tuple(map(type, params)))
    try:  # the usual case, every parameter a scalar, string or tuple: the values are the key
        hash(params)
        key = params
    except TypeError:  # lists, arrays: keyed by contents
        try:
            key = _hashable(params)
        except TypeError:
            key = None
    plans: dict = entity.__dict__.setdefault("_ik_plans", {})
    plan = plans.get(key) if key is not None else None
    if plan is None:
        plan = _build(entity, links, poss, quats, local_points, respect_joint_limit, max_samples, max_solver_iters,
                      damping, pos_tol, rot_tol, pos_mask, rot_mask, max_step_size, dofs_idx_local, envs_idx,
                      rest_qpos, rest_weight, single, kernel)
        if key is not None:
            if len(plans) >= MAX_PLANS:
                plans.pop(next(iter(plans)))
            plans[key] = plan
    return plan


def labeler(single: bool, plural: str, singular: str):
    """Names entry i of a per-link argument in errors: ``pos`` for inverse_kinematics, ``poss[i]``
    for the multilink call."""
    return lambda i: singular if single else f"{plural}[{i}]"


def _build(entity, links, poss, quats, local_points, respect_joint_limit, max_samples, max_solver_iters, damping,
           pos_tol, rot_tol, pos_mask, rot_mask, max_step_size, dofs_idx_local, envs_idx, rest_qpos, rest_weight,
           single, kernel) -> IKPlan:
    tree = entity.tree
    n_tasks = len(links)
    if n_tasks == 0:
        raise ValueError("links: expected at least one link")
    link_label, point_label = labeler(single, "links", "link"), labeler(single, "local_points", "local_point")
    resolved = [entity._own_link(link, link_label(i)) for i, link in enumerate(links)]
    envs = entity._envs(envs_idx)
    for name, seq in (("poss", poss), ("quats", quats), ("local_points", local_points)):
        if len(seq) != n_tasks:
            raise ValueError(f"{name}: expected {n_tasks} entries (one per link), got {len(seq)}")
    for i in range(n_tasks):
        if poss[i] is None and quats[i] is None:
            raise ValueError(f"{labeler(single, 'poss', 'pos')(i)}, {labeler(single, 'quats', 'quat')(i)}: link "
                             f"'{resolved[i].name}' has neither a position nor an orientation target")
    points = np.zeros((n_tasks, 3))
    for i, p in enumerate(local_points):
        if p is not None:
            arr = inputs.as_float_array(point_label(i), p)
            if arr.shape != (3,):
                raise ValueError(f"{point_label(i)}: expected shape (3,), got {arr.shape}")
            points[i] = arr
    seen: dict = {}
    for i, link in enumerate(resolved):  # the same point of a link twice: two targets for one thing
        key = (link.idx_local, tuple(points[i]))
        if key in seen:
            raise ValueError(f"{link_label(i)}: link '{link.name}' (local point {points[i].tolist()}) is also "
                             f"{link_label(seen[key])}; give each point one target (the same link at another "
                             "local_point is fine)")
        seen[key] = i
    pos_mask = inputs.as_mask("pos_mask", pos_mask)
    mode = rot_mode(inputs.as_mask("rot_mask", rot_mask))
    max_samples = inputs.as_positive("max_samples", max_samples, integer=True)
    max_iters = inputs.as_positive("max_solver_iters", max_solver_iters, integer=True, allow_zero=True)
    damping = inputs.as_positive("damping", damping)
    pos_tol = inputs.as_positive("pos_tol", pos_tol)
    rot_tol = inputs.as_positive("rot_tol", rot_tol)
    max_step = inputs.as_positive("max_step_size", max_step_size)
    rest_weight = inputs.as_positive("rest_weight", rest_weight, allow_zero=True)
    rest = tree.default_qpos.copy() if rest_qpos is None else inputs.as_float_array("rest_qpos", rest_qpos)
    if rest.shape != (tree.n_qs,):
        raise ValueError(f"rest_qpos: expected shape ({tree.n_qs},), got {rest.shape}")
    tree.check_joint_values("rest_qpos", rest)
    active = np.ones(max(tree.n_dofs, 1), np.int32)  # which dofs the solver may move
    if dofs_idx_local is not None:
        sel = inputs.as_index_list("dofs_idx_local", dofs_idx_local, tree.n_dofs, "dof")
        active[:] = 0
        active[sel] = 1
    spec = per_robot_spec(entity, kernel, resolved)

    dtype = entity._dtype
    n_sel = len(envs)
    n_qs_k, n_dofs_k = max(tree.n_qs, 1), max(tree.n_dofs, 1)
    exhaustive = int(rest_weight > 0)
    K = restart_slots(n_sel, max_samples)
    task_i = np.zeros((1 + n_tasks + n_dofs_k, 7), np.int32)
    unmasked = int(all(pos_mask) and dofs_idx_local is None)
    respect_limits = inputs.as_flag("respect_joint_limit", respect_joint_limit)
    task_i[0] = (max_iters, max_samples, K, 0, int(respect_limits), exhaustive, unmasked)
    for i, link in enumerate(resolved):
        task_i[1 + i, :3] = (link.idx_local, int(poss[i] is not None), mode if quats[i] is not None else -1)
    task_i[1 + n_tasks:, 0] = active
    task_f = np.zeros((1 + n_tasks + n_qs_k, 8), dtype)
    task_f[0] = (damping, pos_tol, rot_tol, max_step, rest_weight, *pos_mask)
    task_f[1:1 + n_tasks, :3] = points
    task_f[1 + n_tasks:1 + n_tasks + tree.n_qs, 0] = rest
    targets = np.zeros((n_sel, n_tasks, 7), dtype)
    targets[..., 3] = 1.0
    return IKPlan(links=resolved, envs=envs,
                  all_envs=envs_idx is None, has_pos=tuple(p is not None for p in poss),
                  has_quat=tuple(q is not None for q in quats), respect_limits=respect_limits,
                  exhaustive=exhaustive, K=K, spec=spec, task_i=task_i, task_f=task_f, targets=targets,
                  q0=np.zeros((n_sel, n_qs_k), dtype), done=np.zeros(n_sel, np.int32))
