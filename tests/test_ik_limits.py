"""IK limits (engine.ik.limits): the velocity limit, judged by Pinocchio and by SciPy's bounded least squares.

Every answer is judged by Pinocchio's FK of the returned qpos on the same URDF, never by the
solver's own error: no dof moves more than ``max_joint_velocity * dt`` from its start in any env,
the task error reported is the error of the answer, it is smaller than at the start, and it is as
small as the box allows (SciPy's trust-region reflective least squares within the same box, from
the same start, is the reference optimum). Both solvers (per-robot, generic); CPU and Vulkan.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from _robots import built_panda
from pinref import PinReference
from scipy.optimize import least_squares

from engine.errors import InvalidTypeError, InvalidValueError
from engine.ik.limits import JointPositionLimit, VelocityLimit
from engine.ik.tasks import PoseTask

N = 8
HAND = "panda_hand"
V, DT = 1.0, 0.05  # rad/s, s: each arm joint moves at most 0.05 rad
SLACK = 2e-6  # float32 rounding of q0 +- v dt (rad)


@pytest.fixture(scope="module")
def panda(backend):
    init_engine(precision="32")
    yield from built_panda(N)


@pytest.fixture(scope="module")
def ref(panda):
    return PinReference(panda.tree)


def _hand(ref: PinReference, q: np.ndarray) -> np.ndarray:
    """Pinocchio's world position of the hand at qpos ``q`` (n_qs,)."""
    pin.framesForwardKinematics(ref.model, ref.data, ref.pin_q(q))
    return ref.data.oMf[ref.model.getFrameId(HAND, pin.BODY)].translation.copy()


def _problem(panda, seed: int):
    """Starts ``(N, n_qs)`` well inside the joint limits and hand targets 0.1-0.2 m away from them
    (reachable without a velocity limit, not within 0.05 rad per joint)."""
    rng = np.random.default_rng(seed)
    lo, hi = panda.q_limits
    q0 = rng.uniform(lo + 0.3 * (hi - lo), hi - 0.3 * (hi - lo), (N, panda.n_qs))
    pos, _ = panda.forward_kinematics(q0)
    step = rng.normal(size=(N, 3))
    step *= rng.uniform(0.1, 0.2, (N, 1)) / np.linalg.norm(step, axis=1, keepdims=True)
    return q0, pos[:, panda.get_link(HAND).idx_local].astype(float) + step


def _arm(panda) -> list[int]:
    return [j.q_start for j in panda.tree.joints if j.type == "revolute"]


@pytest.mark.parametrize("kernel", ["per_robot", "generic"])
def test_velocity_limit_bounds_every_dof_and_reaches_the_constrained_optimum(panda, ref, kernel):
    q0, target = _problem(panda, 0)
    res = panda.inverse_kinematics(panda.get_link(HAND), pos=target, init_qpos=q0, max_joint_velocity=V, dt=DT,
                                   kernel=kernel, seed=0, return_info=True)
    moved = np.abs(res.qpos.astype(float) - q0)
    assert moved.max() <= V * DT + SLACK, moved.max()
    assert np.mean(moved.max(axis=1) >= V * DT - SLACK) >= 0.5  # the box stops the solve, not the iterations
    arm = _arm(panda)
    lo, hi = panda.q_limits
    for e in range(N):
        got = _hand(ref, res.qpos[e].astype(float))
        np.testing.assert_allclose(res.error[e, 0, :3], target[e] - got, atol=2e-5)  # the answer's error
        start_err = np.linalg.norm(target[e] - _hand(ref, q0[e]))
        err = np.linalg.norm(target[e] - got)
        assert err < start_err - 0.01, (e, err, start_err)

        def residual(x, e=e):
            q = q0[e].copy()
            q[arm] = x
            return _hand(ref, q) - target[e]

        box_lo = np.maximum(q0[e, arm] - V * DT, lo[arm])
        box_hi = np.minimum(q0[e, arm] + V * DT, hi[arm])
        best = least_squares(residual, q0[e, arm], bounds=(box_lo, box_hi), method="trf", xtol=1e-12, ftol=1e-12,
                             gtol=1e-12)
        assert err <= np.linalg.norm(best.fun) + 5e-4, (e, err, np.linalg.norm(best.fun))
        assert res.success[e] == (err <= 5e-4 + 1e-6)  # met only where the box allows it


def _file_velocities(panda) -> dict[str, float]:
    """``<limit velocity>`` of each revolute joint of the URDF, read with ElementTree."""
    root = ET.parse(panda.tree.source).getroot()
    return {j.get("name"): float(j.find("limit").get("velocity")) for j in root.iter("joint")
            if j.get("type") == "revolute"}


def test_file_velocities_are_the_urdfs_and_limits_compose_in_solve_ik(panda):
    q0, target = _problem(panda, 1)
    velocity = _file_velocities(panda)
    assert len(velocity) == 7 and len(set(velocity.values())) > 1  # the Panda's joints differ: 2.175 / 2.61 rad/s
    dt = 0.02
    res = panda.inverse_kinematics(panda.get_link(HAND), pos=target, init_qpos=q0, max_joint_velocity="file", dt=dt,
                                   seed=0, return_info=True)
    moved = np.abs(res.qpos.astype(float) - q0)
    used = np.zeros(panda.n_qs, bool)
    for j in panda.tree.joints:
        if j.name in velocity:
            bound = velocity[j.name] * dt
            assert moved[:, j.q_start].max() <= bound + SLACK, j.name
            used[j.q_start] = moved[:, j.q_start].max() >= bound - SLACK
    assert used.any()  # at least one joint is stopped by its own file velocity, not a looser one

    # solve_ik: a per-dof limit (one joint nearly frozen) together with the joint limits, as objects
    v = np.full(panda.n_dofs, 2.0)
    v[3] = 1e-3
    v[[j.dof_start for j in panda.tree.joints if j.mimic is not None]] = np.inf  # the second finger follows the first
    task = PoseTask(HAND, target)
    res = panda.solve_ik([task], init_qpos=q0, limits=[JointPositionLimit(), VelocityLimit(v, dt=0.05)], seed=0,
                         respect_joint_limit=False)
    moved = np.abs(res.qpos.astype(float) - q0)
    assert moved[:, 3].max() <= 1e-3 * 0.05 + SLACK
    assert moved.max() <= 0.1 + SLACK
    lo, hi = panda.q_limits
    assert np.all(res.qpos >= lo - 1e-6) and np.all(res.qpos <= hi + 1e-6)


def test_a_start_outside_the_box_of_the_joint_limits_moves_toward_them(panda):
    """Joint limits off, a velocity limit on: from a start 0.3 rad beyond joint 0's upper limit the
    answer may not move further than v dt (the box is about the start, not the limits)."""
    q0, target = _problem(panda, 2)
    lo, hi = panda.q_limits
    q0[:, 0] = hi[0] + 0.3
    res = panda.inverse_kinematics(panda.get_link(HAND), pos=target, init_qpos=q0, respect_joint_limit=False,
                                   max_joint_velocity=V, dt=DT, seed=0, kernel="generic")
    assert np.abs(res - q0).max() <= V * DT + SLACK


def test_bad_velocity_limits_are_refused_by_name(panda):
    hand = panda.get_link(HAND)
    pos = np.array([0.4, 0.0, 0.4])
    before = panda.get_qpos().copy()
    cases = [
        (dict(max_joint_velocity=-1.0), InvalidValueError, "max_joint_velocity"),
        (dict(max_joint_velocity=0.0), InvalidValueError, "max_joint_velocity"),
        (dict(max_joint_velocity="fast"), InvalidValueError, "max_joint_velocity"),
        (dict(max_joint_velocity=[1.0, 2.0]), InvalidValueError, "max_joint_velocity: expected 9 velocities"),
        (dict(max_joint_velocity=[1.0] * 8 + [np.nan]), InvalidValueError, "max_joint_velocity"),
        (dict(max_joint_velocity=1.0, dt=0), InvalidValueError, "dt"),
        (dict(dt=-0.1), InvalidValueError, "dt"),
    ]
    for kwargs, kind, text in cases:
        with pytest.raises(kind, match=text):
            panda.inverse_kinematics(hand, pos=pos, **kwargs)
    with pytest.raises(InvalidTypeError, match=r"limits\[0\]"):
        panda.solve_ik([PoseTask(HAND, pos)], limits=["velocity"])
    with pytest.raises(InvalidValueError, match=r"limits\[0\]: expected 9 velocities"):
        panda.solve_ik([PoseTask(HAND, pos)], limits=[VelocityLimit(np.ones(3), dt=0.1)])
    np.testing.assert_array_equal(panda.get_qpos(), before)


_WHEEL_ARM = """<robot name="wheel_arm">
  <link name="base"/>
  <link name="l1">{inertial}</link>
  <link name="l2">{inertial}</link>
  <link name="l3">{inertial}</link>
  <link name="tip"/>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0 0 0.3"/><axis xyz="0 1 0"/>
    <limit lower="-2.5" upper="2.5" effort="10" velocity="2"/></joint>
  <joint name="j3" type="continuous"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/></joint>
  <joint name="tipj" type="fixed"><parent link="l3"/><child link="tip"/>
    <origin xyz="0.25 0 0"/></joint>
</robot>
""".replace("{inertial}", '<inertial><mass value="1"/>'
            '<inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>')


@pytest.mark.parametrize("kernel", ["per_robot", "generic"])
def test_continuous_joints_stay_in_their_box(backend, tmp_path, kernel):
    """Joints without limits (continuous) are bounded by the velocity box too, in both solver forms
    (the box is read at run time: the same compiled solver places without it)."""
    import engine

    init_engine(precision="32")
    urdf = tmp_path / "wheel_arm.urdf"
    urdf.write_text(_WHEEL_ARM)
    scene = engine.Scene()
    arm = scene.add_entity(engine.morphs.URDF(file=str(urdf), fixed=True))
    scene.build(n_envs=N)
    tip = arm.get_link("tip")
    rng = np.random.default_rng(3)
    q0 = rng.uniform(-1.0, 1.0, (N, arm.n_qs))
    far = np.tile([-0.3, 0.35, 0.2], (N, 1))  # about the base: j1 and j3 would turn far without the box
    free = arm.inverse_kinematics(tip, far, None, init_qpos=q0, kernel=kernel, seed=0)
    assert np.abs(np.asarray(free) - q0).max() > 5 * V * DT  # the unlimited answer turns the joints far
    boxed = arm.inverse_kinematics(tip, far, None, init_qpos=q0, max_joint_velocity=V, dt=DT, kernel=kernel,
                                   seed=0)
    moved = np.abs(np.asarray(boxed, float) - q0)
    assert moved.max() <= V * DT + SLACK, moved.max(axis=0)
    assert (moved[:, [0, 2]] > 0.5 * V * DT).any(), "the continuous joints should move toward the target"
