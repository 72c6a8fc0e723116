"""The look-at task (engine.ik.tasks.LookAtTask): a link's axis pointed at a world point.

Judged by Pinocchio's FK of the answer on the same URDF: the angle between the link's axis and the
direction from its point to the target is within the tolerance, and it is the error the solve
reports. The task's Jacobian rows are checked against central finite differences of that angle's
rotation vector (Pinocchio FK, float64) through one damped Gauss-Newton step: with one sample and
one iteration the solver's answer is ``q0 + J^T (J J^T + lambda I)^-1 e``, which is recomputed here
from the finite-difference rows. Both solvers (per-robot, generic); CPU and Vulkan.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from _robots import built_panda
from pinref import PinReference

from engine.errors import InvalidValueError
from engine.ik.tasks import LookAtTask, PoseTask

N = 8
HAND = "panda_hand"
ROT_TOL = 5e-3


@pytest.fixture(scope="module")
def panda(backend):
    init_engine(precision="32")
    yield from built_panda(N)


@pytest.fixture(scope="module")
def ref(panda):
    return PinReference(panda.tree)


def _look_error(ref: PinReference, q: np.ndarray, axis, point, target) -> np.ndarray:
    """Rotation vector (world) taking the hand's ``axis`` onto the direction from its ``point`` to
    ``target``, by Pinocchio's FK at qpos ``q``."""
    pin.framesForwardKinematics(ref.model, ref.data, ref.pin_q(q))
    frame = ref.data.oMf[ref.model.getFrameId(HAND, pin.BODY)]
    a = frame.rotation @ np.asarray(axis, float)
    a /= np.linalg.norm(a)
    u = np.asarray(target, float) - (frame.translation + frame.rotation @ np.asarray(point, float))
    u /= np.linalg.norm(u)
    c = np.cross(a, u)
    s = np.linalg.norm(c)
    return c * (np.arctan2(s, a @ u) / s) if s > 1e-12 else np.zeros(3)


def _targets(seed: int) -> np.ndarray:
    """Points around the Panda, 0.4-0.9 m from its base, above the floor."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(N, 3))
    d[:, 2] = np.abs(d[:, 2])
    return d / np.linalg.norm(d, axis=1, keepdims=True) * rng.uniform(0.4, 0.9, (N, 1)) + [0.0, 0.0, 0.3]


@pytest.mark.parametrize("kernel", ["per_robot", "generic"])
def test_the_axis_points_at_the_target(panda, ref, kernel):
    target = _targets(0)
    axis, point = (0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    res = panda.solve_ik([LookAtTask(HAND, axis, target)], seed=0, kernel=kernel)
    assert res.success.all(), res.rot_error
    for e in range(N):
        err = _look_error(ref, res.qpos[e].astype(float), axis, point, target[e])
        assert np.linalg.norm(err) <= ROT_TOL + 1e-5
        np.testing.assert_allclose(res.error[e, 0, 3:], err, atol=2e-5)  # the error reported is the answer's
        np.testing.assert_array_equal(res.error[e, 0, :3], 0.0)

    # another axis, seen from a point off the link's origin, one target for every env, with a pose
    # task holding the hand's height: both met
    axis, point, shared = (1.0, 0.0, 0.0), (0.0, 0.0, 0.1), np.array([0.5, 0.5, 0.8])
    height = PoseTask(HAND, pos=np.tile([0.0, 0.0, 0.5], (N, 1)), pos_mask=(False, False, True))
    res = panda.solve_ik([LookAtTask(HAND, axis, shared, local_point=point), height], seed=1, kernel=kernel)
    assert res.success.all()
    for e in range(N):
        assert np.linalg.norm(_look_error(ref, res.qpos[e].astype(float), axis, point, shared)) <= ROT_TOL + 1e-5
        pin.framesForwardKinematics(ref.model, ref.data, ref.pin_q(res.qpos[e].astype(float)))
        assert abs(ref.data.oMf[ref.model.getFrameId(HAND, pin.BODY)].translation[2] - 0.5) <= 5e-4 + 1e-6


@pytest.mark.parametrize("kernel", ["per_robot", "generic"])
def test_rows_match_finite_differences_through_one_step(panda, ref, kernel):
    rng = np.random.default_rng(4)
    lo, hi = panda.q_limits
    q0 = rng.uniform(lo + 0.2 * (hi - lo), hi - 0.2 * (hi - lo), (N, panda.n_qs))
    axis, point = np.array([0.0, 0.6, 0.8]), np.array([0.02, 0.0, 0.05])
    target = np.zeros((N, 3))
    for e in range(N):  # a target ~0.3 rad off the axis
        pin.framesForwardKinematics(ref.model, ref.data, ref.pin_q(q0[e]))
        frame = ref.data.oMf[ref.model.getFrameId(HAND, pin.BODY)]
        a = frame.rotation @ axis
        side = np.cross(a, rng.normal(size=3))
        target[e] = frame.translation + frame.rotation @ point + 0.5 * a + 0.15 * side / np.linalg.norm(side)
    damping = 0.01
    res = panda.solve_ik([LookAtTask(HAND, axis, target, local_point=point)], init_qpos=q0, max_samples=1,
                         max_solver_iters=1, respect_joint_limit=False, max_step_size=10.0, damping=damping,
                         seed=0, kernel=kernel)
    assert np.all(res.iterations == 1)  # the step improved: the answer is q0 + dq
    arm = [j.q_start for j in panda.tree.joints if j.type == "revolute"]
    h = 1e-6
    for e in range(N):
        err = _look_error(ref, q0[e], axis, point, target[e])
        rows = np.zeros((3, len(arm)))
        for c, q in enumerate(arm):
            up, down = q0[e].copy(), q0[e].copy()
            up[q] += h
            down[q] -= h
            rows[:, c] = -(_look_error(ref, up, axis, point, target[e]) -
                           _look_error(ref, down, axis, point, target[e])) / (2 * h)
        lam = damping * min(err @ err, 1.0) + 1e-6
        dq = rows.T @ np.linalg.solve(rows @ rows.T + lam * np.eye(3), err)
        got = res.qpos[e, arm].astype(float) - q0[e, arm]
        np.testing.assert_allclose(got, dq, atol=2e-4 * np.abs(dq).max() + 1e-6)


def test_bad_look_at_tasks_are_refused_by_name(panda):
    with pytest.raises(InvalidValueError, match="axis"):
        LookAtTask(HAND, (0, 0, 0), [1.0, 0.0, 0.0])
    with pytest.raises(InvalidValueError, match="target"):
        LookAtTask(HAND, (0, 0, 1))
    with pytest.raises(InvalidValueError, match=r"tasks\[0\]\.target"):
        panda.solve_ik([LookAtTask(HAND, (0, 0, 1), np.zeros((3, 3)))])
    with pytest.raises(KeyError, match=r"tasks\[0\]\.link: no link 'nose'"):
        panda.solve_ik([LookAtTask("nose", (0, 0, 1), np.zeros(3))])
    task = LookAtTask(HAND, (0, 0, 2), [0.5, 0.0, 0.5])
    assert task.axis == (0.0, 0.0, 1.0)
    with pytest.raises(AttributeError):
        task.axis = (1.0, 0.0, 0.0)
    task.set_target([0.4, 0.1, 0.3])
    np.testing.assert_array_equal(task.target, [0.4, 0.1, 0.3])
