"""Inverse kinematics: run a validated request's plan and pick each env's answer among its restarts.

Genesis' parameters and defaults. ``rot_mask`` semantics: all True = full orientation; exactly
one True = that axis of the link is aligned with the same axis of the target, rotation about it
free (for any target orientation); all False = orientation free; two True is an error.

The pieces: :mod:`engine.ik.tasks` (what to achieve), :mod:`engine.ik.request` (a validated, hashable
request), :mod:`engine.ik.plan` (its kernel tables, kept per request), :mod:`engine.runtime.dispatch`
(which solver), :mod:`engine.kernels.solver` (the algorithm), :mod:`engine.ik.solve` (one solve),
:mod:`engine.ik.avoiding` (the stages of a request that avoids collisions), and here :func:`run`,
which every entry point ends in (``inverse_kinematics``, ``inverse_kinematics_multilink``,
``solve_ik``).
"""

from __future__ import annotations

from .avoiding import run_avoiding
from .request import IKRequest, as_seed
from .result import IKResult
from .solve import solve

__all__ = ["run"]


def run(entity, request: IKRequest, targets: list, init_qpos, seed, distances: bool = True) -> IKResult:
    """Solve ``request`` on ``entity`` for ``targets`` (one ``(pos, quat)`` per task, None where the
    task has no such target) from ``init_qpos`` (None: the current state). State is not touched.
    A request that avoids collisions is solved in stages (:func:`engine.ik.avoiding.run_avoiding`).

    ``distances``: each answer's ``min_distance`` is wanted (the caller asked for the info); False:
    the checks only decide whether each answer is clear, and stop their search at the margin
    (``min_distance`` is then exact only below it)."""
    seed = as_seed(seed)  # one seed for every solve of the call
    if request.collide_index is None:
        return _unbatched(entity, solve(entity, request, targets, init_qpos, seed))
    return _unbatched(entity, run_avoiding(entity, request, targets, init_qpos, seed, distances))


def _unbatched(entity, out: IKResult) -> IKResult:
    """``out`` as the caller gets it: one env's answers without the env axis in an unbatched scene."""
    if entity.configuration.batched:
        return out
    return IKResult(out.qpos[0], out.error[0], out.success[0], out.iterations[0], out.sample[0],
                    None if out.min_distance is None else out.min_distance[0],
                    None if out.min_pair is None else out.min_pair[0], out.step[0], out.warm_start_success[0])
