"""Every choice of which compiled kernel runs, and how, in one place.

The engine has several forms of the same computation, all giving the same answers (the tests hold
them to it); which one runs is a speed decision made here, from the batch size, the robot and the
backend. Measured figures are from this project's 2-vCPU VM (``bench/fk.py``, ``bench/ik.py``).

IK solver (:func:`ik_solver`), by the ``kernel`` argument of the IK calls (:data:`KERNELS`):

- ``"generic"``: :mod:`engine.kernels.generic`, compiled once for every robot and task structure, with
  sizes read at run time. Nothing compiles per robot: what the app uses, switching robots and
  targets interactively.
- ``"per_robot"``: :mod:`engine.kernels.per_robot`, compiled for the robot and the task structure
  (2-3x the generic solver's throughput on a CPU; ~10 s to compile the first time a structure is
  solved, then ~2 s per process from taichi's disk cache). Robots of hinges, slides and fixed
  joints (mimic allowed) up to :data:`engine.kernels.spec.MAX_DOFS` dofs qualify; a ValueError
  otherwise.
- ``"auto"`` (the default): the per-robot solver where the robot qualifies and some joint moves a
  task's link, else the generic one, which then gets compile-time sizes (:func:`fixed_sizes`) for
  large batches of small problems.

Restart slots per env (:func:`restart_slots`); serial or pooled CPU launches (:func:`serial`,
and :mod:`engine.runtime.threads` for FK, which times both); FK form (:func:`fk_form`).
"""

from __future__ import annotations

import os

from ..errors import InvalidValueError
from .state import STATE

KERNELS = ("auto", "per_robot", "generic")

SERIAL_MAX_ROWS = 256  # FK / Jacobian rows (and IK choice rows) up to which a CPU launch runs in the calling thread
# per-robot IK solves of up to this many envs run in the calling thread on a CPU (by envs, not threads:
# the serial and pooled kernels are separate compiles whose float rounding may differ in the last bits,
# and the restart slots, which multiply the threads, must not change an answer)
SERIAL_MAX_ENVS = 64
MAX_THREADS = 1 << 16  # (env x restart) threads per IK call on a GPU; bounds the scratch memory
MAX_FIXED_DOFS = 16  # the generic solver under "auto" gets compile-time sizes for robots up to this many dofs ...
MAX_FIXED_TASKS = 2  # ... and tasks ...
MIN_FIXED_ENVS = 256  # ... when the batch is large enough to repay a compile (~10 s cold, then cached on disk)
STATIC_FK_MIN_ROWS = 1024  # forward_kinematics batches from here use the FK compiled for the robot
_CPU_COUNT = os.cpu_count() or 1


def serial(rows: int, max_rows: int = SERIAL_MAX_ROWS) -> bool:
    """Whether a CPU kernel over ``rows`` items should run serially in the calling thread: handing
    a small batch to taichi's thread pool costs more than the work (~0.15 ms per launch on an idle
    2-core VM against ~0.03 ms serial; FK is ~0.3 us per row). Never on a GPU."""
    return STATE.arch == "cpu" and rows <= max_rows


def restart_slots(n_envs: int, max_samples: int) -> int:
    """How many restarts of one env run side by side (IK threads = n_envs x slots).

    On a GPU every restart gets its own thread (bounded by :data:`MAX_THREADS`). On the CPU, where
    a few cores are already kept busy by the envs, extra slots only run restarts that an earlier
    success makes useless, so slots are added only until there are ~4 threads per core.
    """
    if STATE.arch == "cpu":
        want = -(-4 * _CPU_COUNT // n_envs)
    else:
        want = MAX_THREADS // n_envs
    return max(1, min(max_samples, want))


def fixed_sizes(kernel: str, n_tasks: int, n_dofs: int, n_envs: int) -> tuple[int, int, int]:
    """Compile-time (rows, dofs, tasks) for the generic solver, or zeros to read the sizes at run time.

    Exact sizes make the small dense loops ~25 % faster, but each size then compiles its own
    solver. Only ``kernel="auto"`` takes them, for large batches of small problems; an explicit
    ``"generic"`` keeps its promise of one compiled solver for everything.
    """
    if kernel == "auto" and n_envs >= MIN_FIXED_ENVS and n_dofs <= MAX_FIXED_DOFS and n_tasks <= MAX_FIXED_TASKS:
        return 6 * n_tasks, n_dofs, n_tasks
    return 0, 0, 0


def ik_solver(kernel: str, spec, moving_dofs: tuple[int, ...], robot_name: str, what: str, avoiding: bool = False,
              samples_per_thread: int = 1, max_iters: int = 0):
    """The spec to compile the per-robot IK solver from, or None for the generic solver.

    ``spec``: the robot's :class:`~engine.kernels.spec.RobotSpec` (None when it does not qualify);
    ``moving_dofs``: the dofs that move the links the tasks use (the per-robot solver spans them,
    so it needs one); ``what``: those links, for the error message. ``avoiding``: the request has
    a collision avoidance task, whose search loops run at run time; on a software Vulkan device
    only the generic solver can split them over launches (:func:`solver_budget`), so it serves,
    as it does for more iterations per thread (``samples_per_thread`` x ``max_iters``) than one
    launch may run there (:func:`per_robot_fits`)."""
    if kernel not in KERNELS:
        raise InvalidValueError(f"kernel: expected one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")
    if kernel == "generic":
        return None
    if avoiding and STATE.software:
        if kernel == "per_robot":
            raise InvalidValueError("kernel: on a software Vulkan device the per-robot solver cannot avoid "
                                    "collisions (its loops would pass the device's loop limit: docs/backends.md); "
                                    "use kernel='auto' or 'generic'")
        return None
    if spec is None:
        if kernel == "per_robot":
            from ..kernels.spec import MAX_DOFS

            raise InvalidValueError(f"kernel: '{robot_name}' has no per-robot solver (it takes robots of hinges, "
                                    f"slides and fixed joints with up to {MAX_DOFS} dofs); use kernel='auto' or "
                                    "'generic'")
        return None
    if not moving_dofs:
        if kernel == "per_robot":
            raise InvalidValueError(f"kernel: no joint moves {what}, so there is no per-robot solver for them; use "
                                    "kernel='auto' or 'generic'")
        return None  # auto: the generic solver reports how far the fixed links are from their targets
    if not per_robot_fits(samples_per_thread, max_iters):
        if kernel == "per_robot":
            most = max(SOFTWARE_LOOP_LIMIT // (PER_ROBOT_LOOPS * samples_per_thread) - 1, 0)
            raise InvalidValueError(f"max_solver_iters: on a software Vulkan device one launch of the per-robot solver "
                                    f"takes at most {most} with {samples_per_thread} restart(s) per thread "
                                    f"(max_samples over the envs' restart slots; the device's loop limit: "
                                    f"docs/backends.md), got {max_iters}; use kernel='auto' or 'generic', which "
                                    "split a solve over launches")
        return None
    return spec


SOFTWARE_LOOP_LIMIT = 40_000  # loop iterations one solver launch may run per thread on a software Vulkan device
# counted loop steps per iteration of the per-robot solver (its inner loops are unrolled): the flat
# sample loop and the step's direction loop. Measured on lavapipe: a launch stops after 32,767
# iterations (2 steps each; a dof blocked at a limit repeats the direction: 3)
PER_ROBOT_LOOPS = 3


def per_robot_fits(samples_per_thread: int, max_iters: int) -> bool:
    """Whether one launch of the per-robot solver, which cannot split a solve over launches, runs
    within a software Vulkan device's loop limit (:func:`solver_budget`): ``samples_per_thread``
    restarts of up to ``max_iters`` iterations each. Always true on the CPU and GPUs."""
    return not STATE.software or samples_per_thread * (max_iters + 1) * PER_ROBOT_LOOPS <= SOFTWARE_LOOP_LIMIT


def solver_budget(n_links: int, n_joints: int, n_tasks: int, n_dofs: int, com: bool, avoid_loops: int = 0) -> int:
    """Solver iterations per launch of the generic solver, or 0 for one launch per solve.

    Mesa's lavapipe (the software Vulkan device the tests run on) stops every loop of a shader
    invocation once that invocation has run ~65535 loop iterations in all (a guard against
    endless loops; measured: a 100 x 1000 nested loop ends after 65405 inner iterations), and
    the code after the loops carries on with whatever was computed. A generic solve of a large
    robot runs far more (TALOS, 3 tasks: ~20k per iteration), so on a software device the solve
    is split over launches of a few iterations each; the answers do not depend on the split
    (docs/backends.md). Hardware GPUs and the CPU have no such limit. ``avoid_loops``: the most a
    collision avoidance task's search adds per iteration (:func:`engine.collision.checks.solver_loop_count`)."""
    if not STATE.software:
        return 0
    m, n = 6 * n_tasks, max(n_dofs, 1)
    per_iteration = (m * m * n + m ** 3 // 3 + 6 * m * n + n_tasks * (n_links + 2 * n_joints + 8 * n)
                     + (n_links * (n_links + 2 * n_joints) if com else 0) + 4 * (n_links + n_joints) + 200
                     + avoid_loops)
    return max(1, SOFTWARE_LOOP_LIMIT // per_iteration)


def fk_form(spec, rows: int) -> str:
    """Which FK kernel ``forward_kinematics`` runs over ``rows`` rows: "lane" (the FK compiled for
    the robot, :mod:`engine.kernels.lane_fk`: 3-6x the generic kernel on a CPU, ~1 s to compile
    once per robot) from :data:`STATIC_FK_MIN_ROWS` rows for a robot that has a spec, else
    "generic" (:mod:`engine.kernels.fk`)."""
    return "lane" if spec is not None and rows >= STATIC_FK_MIN_ROWS else "generic"
