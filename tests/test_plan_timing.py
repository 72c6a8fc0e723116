"""``plan_path(..., return_trajectory=True)``: a timed path within the velocity and acceleration
limits at every sample and between samples, from the start at rest to the goal at rest, its
samples collision-free; checked from the samples themselves (finite differences, integration)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as gs
from engine.errors import IKStudioError

CRATE = dict(pos=(0.45, 0.0, 0.45), size=(0.1, 0.5, 0.3))
LEFT = np.array([1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
RIGHT = np.array([-1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
VMAX = np.array([1.0, 1.0, 1.2, 1.2, 2.0, 2.0, 2.0, 0.1, 0.1])
AMAX = np.array([3.0, 3.0, 4.0, 4.0, 6.0, 6.0, 6.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def panda():
    gs.init(backend="cpu", precision="32", seed=0)
    scene = gs.Scene(sim_options=gs.options.SimOptions(dt=0.02))
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    scene.build(n_envs=3)
    return robot


def test_limits_hold_at_and_between_samples(panda):
    goals = np.stack([RIGHT, RIGHT, LEFT])  # env 2: goal == start, no motion
    traj = panda.plan_path(goals, qpos_start=LEFT, seed=1, return_trajectory=True, max_velocity=VMAX,
                           max_acceleration=AMAX, dt=0.01)
    assert traj.valid.all(), traj.reason
    T = len(traj.qpos)
    assert traj.qpos.shape == traj.dofs_vel.shape == traj.dofs_acc.shape == (T, 3, 9) and traj.dt == 0.01
    q, v, a = (x.astype(float) for x in (traj.qpos, traj.dofs_vel, traj.dofs_acc))
    tol = 1e-5
    assert (np.abs(v) <= VMAX + tol).all() and (np.abs(a) <= AMAX + tol).all()
    assert (np.abs(np.diff(q, axis=0)) / 0.01 <= VMAX + 1e-3).all()  # mean velocity over each step
    assert (np.abs(np.diff(v, axis=0)) / 0.01 <= AMAX + 1e-3).all()
    # the samples integrate: q advances by the trapezoid of v, up to the change of acceleration in a step
    step = np.diff(q, axis=0) - 0.01 * 0.5 * (v[1:] + v[:-1])
    assert (np.abs(step) <= AMAX * 0.01 ** 2 + 1e-5).all()
    np.testing.assert_allclose(q[0], np.tile(LEFT, (3, 1)), atol=1e-6)
    np.testing.assert_allclose(q[-1], goals, atol=1e-6)
    assert np.abs(v[[0, -1]]).max() == 0  # from rest, to rest
    assert traj.duration[2] == 0 and np.abs(q[:, 2] - LEFT).max() < 1e-6
    for e in range(2):
        times = traj.waypoint_times[e]
        assert times[0] == 0 and times[-1] == pytest.approx(traj.duration[e])
        k = np.round(times / 0.01)
        np.testing.assert_allclose(times / 0.01, k, atol=1e-6)  # every vertex on a sample, at rest there
        assert np.abs(v[k.astype(int), e]).max() < 1e-9
        # a limiting dof sets the pace: somewhere a dof runs near its limit (edges stretch to whole steps)
        assert (np.abs(v[:, e]) / VMAX).max() > 0.95 and (np.abs(a[:, e]) / AMAX).max() > 0.95
    mids = 0.5 * (q[1:] + q[:-1])  # between samples, and the samples, collision-free (spheres)
    for e in range(2):
        rows = mids[:len(mids) // 3 * 3, e].reshape(-1, 3, 9)
        assert not any(panda.in_collision(m).any() for m in rows)


def test_defaults_take_the_robot_files_limits_and_the_scene_dt(panda):
    traj = panda.plan_path(RIGHT, qpos_start=LEFT, seed=2, return_trajectory=True)
    assert traj.dt == pytest.approx(0.02)
    vmax = panda.tree.velocity_limits()
    assert (np.abs(traj.dofs_vel) <= vmax + 1e-5).all()
    assert (np.abs(traj.dofs_acc) <= vmax / 0.5 + 1e-5).all()
    assert len(traj.qpos) * 0.02 == pytest.approx(traj.duration.max() + 0.02)


def test_bad_limits_name_themselves(panda):
    for kwargs, name in ((dict(max_velocity=-1.0), "max_velocity"), (dict(max_acceleration=np.ones(3)),
                                                                      "max_acceleration"), (dict(dt=0), "dt")):
        with pytest.raises(IKStudioError, match=name):
            panda.plan_path(RIGHT, qpos_start=LEFT, return_trajectory=True, **kwargs)
