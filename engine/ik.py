"""Inverse kinematics front end: validates a request, runs :func:`engine.kernels.ik.solve`, and
picks each env's answer among its restarts.

Genesis' parameters and defaults. ``rot_mask`` semantics: all True = full orientation; exactly
one True = that axis of the link is aligned with the same axis of the target, rotation about it
free (for any target orientation); all False = orientation free; two True is an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from . import backend, inputs
from .kernels import fk as fk_kernels
from .kernels import ik as ik_kernels
from .kernels import spec as spec_mod
from .kernels import static_ik

MAX_THREADS = 1 << 16  # (env x restart) threads per call; bounds scratch memory
SERIAL_MAX_THREADS = 64  # per-robot solves of up to this many threads run in the calling thread on a CPU
_CPU_COUNT = os.cpu_count() or 1


@dataclass
class IKResult:
    """What one IK call found, per env (leading axis dropped for an unbatched scene).

    ``qpos`` ([n_envs,] n_qs); ``error`` ([n_envs,] n_links, 6): masked position (m) and rotation
    (rad, rotation vector) error of each target, world axes, at ``qpos``; ``success`` ([n_envs,])
    bool: every target within pos_tol / rot_tol; ``iterations`` ([n_envs,]): solver iterations of
    the returned sample; ``sample`` ([n_envs,]): which restart it came from (0 = init_qpos).
    """

    qpos: np.ndarray
    error: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    sample: np.ndarray

    @property
    def pos_error(self) -> np.ndarray:
        """Norm of each target's masked position error ([n_envs,] n_links), m."""
        return np.linalg.norm(self.error[..., :3], axis=-1)

    @property
    def rot_error(self) -> np.ndarray:
        """Angle of each target's masked rotation error ([n_envs,] n_links), rad."""
        return np.linalg.norm(self.error[..., 3:], axis=-1)


# ``kernel`` argument of the IK calls:
# - "auto": the solver compiled for the robot (engine.kernels.static_ik: 2-3x the generic solver's
#   throughput on a CPU) when the robot qualifies (hinges and slides, mimic allowed, up to 16 dofs),
#   else the generic one. Compiling it takes ~10 s on a 2-core CPU the first time a (robot, number
#   of task links, precision) is solved, then ~2 s per process from taichi's disk cache.
# - "per_robot": that solver, or a ValueError when the robot does not qualify.
# - "generic": the solver compiled once for every robot (what the app uses, switching robots and
#   target counts interactively).
KERNELS = ("auto", "per_robot", "generic")

MAX_FIXED_DOFS = 16  # robots up to this many dofs get a solver compiled for their exact sizes ...
MAX_FIXED_TASKS = 2
MIN_FIXED_ENVS = 256  # ... when the batch is large enough to repay a compile (~10 s cold, then cached on disk)


def fixed_sizes(n_tasks: int, n_dofs: int, n_envs: int) -> tuple[int, int, int]:
    """Compile-time (rows, dofs, tasks) for the solver, or zeros to read the sizes at run time.

    Exact sizes make the small dense loops ~25 % faster, but each robot structure then compiles its
    own solver; the generic one (zeros) serves every robot. Large batches of small robots get the
    exact sizes; interactive use (the app's 16 envs, robot after robot) keeps the generic solver.
    """
    if n_envs >= MIN_FIXED_ENVS and n_dofs <= MAX_FIXED_DOFS and n_tasks <= MAX_FIXED_TASKS:
        return 6 * n_tasks, n_dofs, n_tasks
    return 0, 0, 0


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


class _Scratch:
    """Per-entity scratch arrays for the IK kernel, reused while shapes stay the same."""

    def __init__(self):
        self.key = None
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, T: int, n_tasks: int, n_qs: int, pose_rows: int, n_dofs: int, dtype, generic: bool = True):
        key = (T, n_tasks, n_qs, pose_rows, n_dofs, dtype, generic)
        if key != self.key:
            m = 6 * n_tasks
            shapes = dict(best_q=(T, n_qs + 2), best_err=(T, n_tasks, 6))
            if generic:  # the per-robot kernel keeps its working set in registers
                shapes.update(q=(T, n_qs), pose=(T, pose_rows, 7), J=(T, m, n_dofs), A=(T, m, m),
                              vec=(T, 2 * m + 2 * n_dofs))
            self.arrays = {k: np.zeros(v, dtype) for k, v in shapes.items()}
            self.arrays["best_i"] = np.zeros((T, 3), np.int32)
            self.key = key
        return self.arrays


def _targets(label, values, n_tasks: int, size: int, n_sel: int, batched: bool) -> tuple:
    """Per-task arrays (n_sel, size) or None, from a list of entries (each None, shared or per env);
    ``label(i)`` names entry i in errors."""
    out = []
    for i, value in enumerate(values):
        out.append(None if value is None else inputs.batched(label(i), value, (size,), n_sel, batched))
    return out


def solve_ik(entity, links, poss, quats, local_points, init_qpos, respect_joint_limit, max_samples,
             max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask, max_step_size, seed,
             dofs_idx_local, envs_idx, rest_qpos=None, rest_weight=0.0, single=False, kernel="auto") -> IKResult:
    """Validate every argument, run the kernel, choose each env's answer. State is not touched.

    ``single``: called by ``inverse_kinematics``, so errors name ``link`` / ``pos`` / ``quat`` /
    ``local_point`` rather than ``links[0]`` / ``poss[0]`` / ...
    """
    entity._require_built()
    tree = entity.tree
    n_tasks = len(links)
    if n_tasks == 0:
        raise ValueError("links: expected at least one link")

    def labeler(plural: str, singular: str):
        return lambda i: singular if single else f"{plural}[{i}]"

    link_label, pos_label = labeler("links", "link"), labeler("poss", "pos")
    quat_label, point_label = labeler("quats", "quat"), labeler("local_points", "local_point")
    resolved = []
    for i, link in enumerate(links):
        try:
            resolved.append(entity._own_link(link, link_label(i)))
        except KeyError as err:  # an unknown name: get_link's message names its own argument
            raise KeyError(f"{link_label(i)}: {str(err.args[0]).removeprefix('name: ')}") from None
    links = resolved
    envs = entity._envs(envs_idx)
    n_sel = len(envs)
    batched = entity._batched
    for name, seq in (("poss", poss), ("quats", quats), ("local_points", local_points)):
        if len(seq) != n_tasks:
            raise ValueError(f"{name}: expected {n_tasks} entries (one per link), got {len(seq)}")
    pos_list = _targets(pos_label, poss, n_tasks, 3, n_sel, batched)
    quat_list = _targets(quat_label, quats, n_tasks, 4, n_sel, batched)
    for i in range(n_tasks):
        if pos_list[i] is None and quat_list[i] is None:
            raise ValueError(f"{pos_label(i)}, {quat_label(i)}: link '{links[i].name}' has neither a position "
                             "nor an orientation target")
        if quat_list[i] is not None:
            norms = np.sqrt(np.einsum("ij,ij->i", quat_list[i], quat_list[i]))[:, None]
            if norms.min() < 1e-9:
                raise ValueError(f"{quat_label(i)}: expected non-zero (w, x, y, z) quaternions")
            quat_list[i] = quat_list[i] / norms
    points = np.zeros((n_tasks, 3))
    for i, p in enumerate(local_points):
        if p is not None:
            arr = inputs.as_float_array(point_label(i), p)
            if arr.shape != (3,):
                raise ValueError(f"{point_label(i)}: expected shape (3,), got {arr.shape}")
            points[i] = arr
    pos_mask = inputs.as_mask("pos_mask", pos_mask)
    mode = rot_mode(inputs.as_mask("rot_mask", rot_mask))
    max_samples = inputs.as_positive("max_samples", max_samples, integer=True)
    max_iters = inputs.as_positive("max_solver_iters", max_solver_iters, integer=True, allow_zero=True)
    damping = inputs.as_positive("damping", damping)
    pos_tol = inputs.as_positive("pos_tol", pos_tol)
    rot_tol = inputs.as_positive("rot_tol", rot_tol)
    max_step = inputs.as_positive("max_step_size", max_step_size)
    rest_weight = inputs.as_positive("rest_weight", rest_weight, allow_zero=True)
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1))
    elif isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed: expected an int or None, got {seed!r}")

    if init_qpos is None:
        q0 = entity._qpos[envs].astype(float)
    else:
        q0 = inputs.batched("init_qpos", init_qpos, (tree.n_qs,), n_sel, batched)
    lo, hi = entity._q_limits
    if respect_joint_limit:  # sample 0 starts here: an answer accepted at its first FK must be within limits
        q0 = np.minimum(np.maximum(q0, lo), hi)
    q0 = tree.apply_mimic(q0)
    rest = tree.default_qpos.copy() if rest_qpos is None else inputs.as_float_array("rest_qpos", rest_qpos)
    if rest.shape != (tree.n_qs,):
        raise ValueError(f"rest_qpos: expected shape ({tree.n_qs},), got {rest.shape}")
    active = np.ones(max(tree.n_dofs, 1), np.int32)  # which dofs the solver may move
    if dofs_idx_local is not None:
        sel = inputs.as_index_list("dofs_idx_local", dofs_idx_local, tree.n_dofs, "dof")
        active[:] = 0
        active[sel] = 1

    dtype = entity._dtype
    n_qs_k, n_dofs_k = max(tree.n_qs, 1), max(tree.n_dofs, 1)
    exhaustive = int(rest_weight > 0)
    K = restart_slots(n_sel, max_samples)
    task_i = np.zeros((1 + n_tasks + n_dofs_k, 7), np.int32)
    unmasked = int(all(pos_mask) and dofs_idx_local is None)
    task_i[0] = (max_iters, max_samples, K, seed % (2**31), int(bool(respect_joint_limit)), exhaustive, unmasked)
    for i, (link, p, q) in enumerate(zip(links, pos_list, quat_list)):
        task_i[1 + i, :3] = (link.idx_local, int(p is not None), mode if q is not None else -1)
    task_i[1 + n_tasks:, 0] = active
    task_f = np.zeros((1 + n_tasks + n_qs_k, 8), dtype)
    task_f[0] = (damping, pos_tol, rot_tol, max_step, rest_weight, *pos_mask)
    task_f[1:1 + n_tasks, :3] = points
    task_f[1 + n_tasks:1 + n_tasks + tree.n_qs, 0] = rest
    targets = np.zeros((n_sel, n_tasks, 7), dtype)
    targets[..., 3] = 1.0
    for i in range(n_tasks):
        if pos_list[i] is not None:
            targets[:, i, :3] = pos_list[i]
        if quat_list[i] is not None:
            targets[:, i, 3:] = quat_list[i]
    q0k = np.zeros((n_sel, n_qs_k), dtype)
    q0k[:, : tree.n_qs] = q0
    spec = _per_robot_spec(entity, kernel)
    s = entity.__dict__.setdefault("_ik_scratch", _Scratch()).get(
        n_sel * K, n_tasks, n_qs_k, entity._packed.pose_rows, n_dofs_k, dtype, spec is None)
    done = np.full(n_sel, ik_kernels.BIG, np.int32)
    if spec is not None:
        for i, link in enumerate(links):
            task_i[1 + i, 3] = spec.ancestor_mask(link.idx_local)
        static_ik.ik_kernel(spec, n_tasks)(q0k, task_i, task_f, targets, s["best_q"], s["best_err"], s["best_i"],
                                           done, fk_kernels.serial_for(n_sel * K, SERIAL_MAX_THREADS))
    else:
        ik_kernels.solve(q0k, task_i, task_f, targets, *entity._packed.args(), s["q"], s["pose"], s["J"], s["A"],
                         s["vec"], s["best_q"], s["best_err"], s["best_i"], done,
                         *fixed_sizes(n_tasks, n_dofs_k, n_sel))
    return _choose(entity, s, n_sel, K, exhaustive)


def _per_robot_spec(entity, kernel):
    """The robot's spec when the per-robot solver is to run, else None."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel: expected one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    if kernel == "per_robot" and entity._spec is None:
        raise ValueError(f"kernel: '{entity.tree.name}' has no per-robot solver (it takes robots of hinges and "
                         f"slides with up to {spec_mod.MAX_DOFS} dofs); use kernel='auto' or 'generic'")
    return None if kernel == "generic" else entity._spec


def _choose(entity, s, n_sel: int, K: int, exhaustive: int) -> IKResult:
    """Per env, the lowest successful sample (nearest rest when exhaustive), else the lowest score.
    Arrays come back in the engine's precision."""
    tree = entity.tree
    best_i, best_q = s["best_i"], s["best_q"]
    if K == 1:  # one thread per env: its own kept solution (the usual case on the CPU)
        rows = np.arange(n_sel)
        sample = best_i[:, 0].copy()
        success = sample >= 0
    else:
        success_sample = best_i[:, 0].reshape(K, n_sel)
        n_qs_k = best_q.shape[1] - 2
        score = best_q[:, n_qs_k].reshape(K, n_sel)
        rest_dist = best_q[:, n_qs_k + 1].reshape(K, n_sel)
        ok = success_sample >= 0
        key = np.where(ok, rest_dist if exhaustive else success_sample, np.inf)
        success = ok.any(axis=0)
        pick = np.where(success, np.argmin(key, axis=0), np.argmin(score, axis=0))
        rows = pick * n_sel + np.arange(n_sel)
        sample = np.where(success, success_sample[pick, np.arange(n_sel)], -1)
    out = IKResult(qpos=tree.apply_mimic(best_q[rows, : tree.n_qs]), error=s["best_err"][rows],
                   success=success, iterations=best_i[rows, 1], sample=sample)
    if not entity._batched:
        out = IKResult(out.qpos[0], out.error[0], out.success[0], out.iterations[0], out.sample[0])
    return out
