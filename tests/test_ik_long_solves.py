"""IK solves of tens of thousands of iterations, on every backend (docs/backends.md, item 4).

Lavapipe, the software Vulkan device the tests run on, ends every loop of a shader invocation
once it has run ~65,535 loop steps in all, and the code after the loops carries on with what was
computed. The per-robot solver cannot split a solve over launches, so a request that could run
longer goes to the generic solver (``kernel="auto"``), which can, or is refused by name
(``kernel="per_robot"``). Every answer is judged by Pinocchio's FK of the returned qpos against
Pinocchio's FK of the configuration the target was made from.

The targets are 0.8 rad per arm joint away and the steps are capped at a fraction of a
milliradian, so a solve takes thousands of iterations: each iteration is one small step.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine
from _robots import built_panda
from pinref import PinReference

from engine.errors import InvalidValueError
from engine.runtime.backend import current

N = 2
HAND = "panda_hand"
ARM = 7  # the Panda's arm joints come first in its qpos
POS_TOL, ROT_TOL = 1e-3, 1e-2  # m, rad: the default tolerances (5e-4 m, 5e-3 rad per axis) over three axes
FIRST_CUT = 3_276  # iterations at which lavapipe stopped the per-robot solver while it spent 20 loop steps on one
LAUNCH_LIMIT = 32_767  # iterations at which lavapipe stops one launch of the per-robot solver now (2 steps each)


@pytest.fixture(scope="module")
def panda(backend):
    init_engine(precision="32")
    yield from built_panda(N)


@pytest.fixture(scope="module")
def ref(panda):
    return PinReference(panda.tree)


def _problem(panda):
    """Starts ``(N, n_qs)`` in the middle of the joint limits and hand targets (positions ``(N, 3)``,
    quaternions ``(N, 4)``) made from the starts with every arm joint turned 0.8 rad (-0.8 in the
    second env); the goal configurations ``(N, n_qs)``."""
    lo, hi = panda.q_limits
    q0 = np.tile(0.5 * (lo + hi), (N, 1))
    goal = q0.copy()
    goal[0, :ARM] += 0.8
    goal[1, :ARM] -= 0.8
    assert (goal >= lo).all() and (goal <= hi).all()
    pos, quat = panda.forward_kinematics(goal)
    hand = panda.get_link(HAND).idx_local
    return q0, pos[:, hand].astype(float), quat[:, hand].astype(float), goal


def _judge(ref, res, goal):
    """Assert that Pinocchio puts the hand of every env's answer where it puts the goal's."""
    link = [link.name for link in ref.tree.links].index(HAND)
    for e in range(N):
        rot, pos = (x[link] for x in ref.link_poses(res.qpos[e].astype(float)))
        rot_goal, pos_goal = (x[link] for x in ref.link_poses(goal[e]))
        angle = np.arccos(np.clip((np.trace(rot.T @ rot_goal) - 1) / 2, -1, 1))
        assert np.linalg.norm(pos - pos_goal) < POS_TOL and angle < ROT_TOL, (e, pos - pos_goal, angle)


def _solve(panda, step: float, iters: int, kernel: str):
    q0, pos, quat, goal = _problem(panda)
    res = panda.inverse_kinematics(HAND, pos, quat, init_qpos=q0, max_samples=1, max_solver_iters=iters,
                                   max_step_size=step, seed=0, return_info=True, kernel=kernel)
    return res, goal


def test_a_per_robot_solve_of_thousands_of_iterations_runs_to_its_end(panda, ref):
    """Within one launch's limit the per-robot solver runs its solve whole on every backend. It
    stopped at 3,276 iterations on lavapipe while each iteration ran 20 loop steps (taichi lowers
    ``x ** 2`` to a loop, which SPIR-V keeps), far from its target and reported as failed."""
    res, goal = _solve(panda, 2e-4, 12_000, "per_robot")
    assert res.success.all(), res.error
    assert (res.iterations > 2 * FIRST_CUT).all(), res.iterations  # it needed thousands
    _judge(ref, res, goal)


def test_a_solve_longer_than_one_launch_allows_is_answered_whole(panda, ref):
    """``kernel="auto"`` with ~40,000 iterations per thread: on a software Vulkan device the generic
    solver serves, split over launches; elsewhere the per-robot one. Either way the solve runs
    to its end."""
    res, goal = _solve(panda, 4e-5, 50_000, "auto")
    assert res.success.all(), res.error
    assert (res.iterations > LAUNCH_LIMIT).all(), res.iterations
    _judge(ref, res, goal)


def test_the_guard_s_bound_is_the_one_it_names():
    """The largest ``max_solver_iters`` the refusal names is the largest the guard lets through."""
    from engine.runtime import dispatch
    from engine.runtime.state import STATE

    software = STATE.software
    STATE.software = True
    try:
        for per_thread, most in ((1, 13_332), (2, 6_665), (7, 1_903)):
            assert dispatch.per_robot_fits(per_thread, most) and not dispatch.per_robot_fits(per_thread, most + 1)
            with pytest.raises(InvalidValueError, match=f"takes at most {most} with {per_thread} restart"):
                dispatch.ik_solver("per_robot", object(), (0,), "robot", "'hand'", samples_per_thread=per_thread,
                                   max_iters=most + 1)
    finally:
        STATE.software = software


def test_the_per_robot_solver_refuses_a_solve_one_launch_cannot_hold_on_a_software_device(panda, ref):
    """``kernel="per_robot"`` with 50,000 iterations: refused by name on a software Vulkan device,
    the robot's qpos untouched; answered whole on every other backend."""
    before = panda.get_qpos().copy()
    if current().software:
        with pytest.raises(InvalidValueError, match=r"max_solver_iters: .* takes at most 13332 with 1 restart"
                                                    r".* got 50000"):
            _solve(panda, 4e-5, 50_000, "per_robot")
        np.testing.assert_array_equal(panda.get_qpos(), before)
        return
    res, goal = _solve(panda, 4e-5, 50_000, "per_robot")
    assert res.success.all() and (res.iterations > LAUNCH_LIMIT).all(), (res.success, res.iterations)
    _judge(ref, res, goal)
