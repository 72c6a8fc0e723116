"""Batched FK and Jacobians agree with Pinocchio on every catalog URDF that both load.

For each robot and each precision (f64: 1e-9, f32: 1e-4) one scene is built with n_envs=3 and
two batches of random configurations (within limits; unlimited joints in [-pi, pi]) are set.
Compared per env: every link's pose (``get_links_pos/quat`` and ``forward_kinematics``), and the
Jacobian of several links (the last one included) at the link origin and at a local offset point.
Pinocchio's frame Jacobian gives the origin's velocity (LOCAL_WORLD_ALIGNED); the velocity of a
point r away (world axes) is v + w x r.

Large ``forward_kinematics`` batches run the FK compiled per robot (``engine.kernels.lane_fk`` on
a CPU): it is checked against Pinocchio too, for a set of robots (chains, branching hands and
legs, mimic fingers), with a partial last block of SIMD lanes.
"""

from __future__ import annotations

import functools
import warnings
import zlib

import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from pinref import PinReference

import engine
from engine import assets, model, morphs
from engine.runtime import dispatch, span
from engine.transforms import quat_to_matrix

N_ENVS = 3
N_BATCHES = 2  # configurations per robot: N_ENVS * N_BATCHES
N_JAC_LINKS = 4  # links whose Jacobian is checked (the last one always among them)
TOL = {"64": 1e-9, "32": 1e-4}
MIN_ROBOTS = 65
# robots whose per-robot FK kernel is compared (one compile each per precision, ~1 s)
PER_ROBOT_FK = ("panda_urdf", "ur5", "xarm7", "so101", "allegro_right_hand", "anymal")
PER_ROBOT_ROWS = 11  # one full block of 8 lanes (4 in f64) and a partial one
MAX_ANGLE = 4 * np.pi  # rad (or m) a sampled joint value stays within; see random_qpos


@functools.cache
def _comparable() -> tuple[dict[str, object], dict[str, str]]:
    """({name: catalog entry} both loaders accept, {name: why excluded})."""
    ok, excluded = {}, {}
    for entry in assets.list_robots():
        if entry.format != "urdf":
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.load(morphs.URDF(file=entry.path, fixed=True))
        except Exception as err:
            excluded[entry.name] = f"ours: {type(err).__name__}"
            continue
        try:
            pin.buildModelFromUrdf(str(entry.path))
        except Exception as err:
            excluded[entry.name] = f"pinocchio: {type(err).__name__}"
            continue
        ok[entry.name] = entry
    return ok, excluded


ROBOTS = sorted(_comparable()[0])


@functools.cache
def _reference(name: str) -> PinReference:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = model.load(morphs.URDF(file=_comparable()[0][name].path, fixed=True))
    return PinReference(tree)


@pytest.fixture(scope="module", params=["64", "32"], ids=["f64", "f32"])
def precision(request, backend):
    init_engine(precision=request.param)
    return request.param


def random_qpos(tree, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, n_qs)`` configurations within the limits; unlimited 1-dof joints in [-pi, pi]. Limits
    are clipped to +-MAX_ANGLE: some URDFs write "unlimited" as +-1e16 (iris' rotors), and the
    kernels' sine and cosine reduce an angle by pi in the engine's precision, accurate to a few
    ulp of the angle (see docs/backends.md), not to libm's exact reduction of 1e16 rad."""
    q = np.tile(tree.neutral_qpos(), (n, 1))
    for joint in tree.joints:
        if joint.n_qs != 1:
            continue
        lo, hi = joint.lower, joint.upper
        if not (np.isfinite(lo) and np.isfinite(hi)):
            lo, hi = -np.pi, np.pi
        lo, hi = max(lo, -MAX_ANGLE), min(hi, MAX_ANGLE)
        q[:, joint.q_start] = rng.uniform(lo, hi, n)
    return q


def test_enough_robots_are_compared():
    ok, excluded = _comparable()
    assert len(ok) >= MIN_ROBOTS, f"only {len(ok)} robots load in both; excluded: {excluded}"


@pytest.mark.parametrize("name", ROBOTS)
def test_fk_and_jacobian_match_pinocchio(name, precision):
    ref = _reference(name)
    tree = ref.tree
    assert all(j.n_qs <= 1 for j in tree.joints), "a fixed-base URDF has 1-dof joints only"
    tol = TOL[precision]
    scene = engine.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = scene.add_entity(morphs.URDF(file=tree.source, fixed=True))
    scene.build(n_envs=N_ENVS)
    expected = np.float64 if precision == "64" else np.float32  # outputs come in the engine's precision
    assert robot.get_qpos().dtype == expected and robot.forward_kinematics(robot.get_qpos())[0].dtype == expected
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = robot.n_links
    jac_links = sorted({n - 1, *rng.choice(n, size=min(N_JAC_LINKS - 1, n), replace=False).tolist()})

    for _ in range(N_BATCHES):
        robot.set_qpos(random_qpos(tree, rng, N_ENVS))
        qpos = robot.get_qpos()  # mimic followers already derived from their leaders
        pos, quat = robot.get_links_pos(), robot.get_links_quat()
        fk_pos, fk_quat = robot.forward_kinematics(qpos)
        assert pos.shape == (N_ENVS, n, 3) and quat.shape == (N_ENVS, n, 4)
        points = rng.uniform(-0.3, 0.3, (len(jac_links), 3))
        jac_origin = [robot.get_jacobian(robot.links[l]) for l in jac_links]
        jac_point = [robot.get_jacobian(robot.links[l], local_point=p) for l, p in zip(jac_links, points)]
        for e in range(N_ENVS):
            rots, poss = ref.link_poses(qpos[e])
            for ours_pos, ours_quat in ((pos[e], quat[e]), (fk_pos[e], fk_quat[e])):
                np.testing.assert_allclose(ours_pos, poss, atol=tol, rtol=0, err_msg=f"{name}: link positions")
                np.testing.assert_allclose(quat_to_matrix(ours_quat), rots, atol=tol, rtol=0,
                                           err_msg=f"{name}: link rotations")
            for k, l in enumerate(jac_links):
                link = tree.links[l]
                J_origin = ref.jacobian(qpos[e], link.name)
                r = rots[l] @ points[k]
                J_point = J_origin.copy()
                J_point[:3] += np.cross(J_origin[3:].T, r).T  # v_point = v_origin + w x r
                np.testing.assert_allclose(jac_origin[k][e], J_origin, atol=tol, rtol=0,
                                           err_msg=f"{name}: Jacobian of link '{link.name}' origin")
                np.testing.assert_allclose(jac_point[k][e], J_point, atol=tol, rtol=0,
                                           err_msg=f"{name}: Jacobian of link '{link.name}' at {points[k]}")
    scene.destroy()


@pytest.mark.parametrize("name", PER_ROBOT_FK)
def test_per_robot_fk_matches_pinocchio(name, precision, monkeypatch):
    monkeypatch.setattr(dispatch, "STATIC_FK_MIN_ROWS", 1)
    ref = _reference(name)
    scene = engine.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = scene.add_entity(morphs.URDF(file=ref.tree.source, fixed=True))
    scene.build(n_envs=PER_ROBOT_ROWS)
    assert robot.configuration.spec is not None, f"{name} should qualify for the per-robot kernels"
    qpos = ref.tree.apply_mimic(random_qpos(ref.tree, np.random.default_rng(zlib.crc32(name.encode())),
                                            PER_ROBOT_ROWS))
    pos, quat = robot.forward_kinematics(qpos)
    for e in range(PER_ROBOT_ROWS):
        rots, poss = ref.link_poses(qpos[e])
        np.testing.assert_allclose(pos[e], poss, atol=TOL[precision], rtol=0, err_msg=f"{name}: env {e}")
        np.testing.assert_allclose(quat_to_matrix(quat[e]), rots, atol=TOL[precision], rtol=0,
                                   err_msg=f"{name}: env {e}")
    scene.destroy()


# batch sizes around every switch between kernels: serial / thread pool (256 rows), generic / per-robot
# FK (dispatch.STATIC_FK_MIN_ROWS = 1024 rows), SIMD blocks of 8 (4 in float64) on the CPU
FK_SIZES = (1, 255, 256, 257, 1023, 1024, 1031, 4096)


def test_fk_at_every_batch_size_matches_pinocchio(precision):
    ref = _reference("panda_urdf")
    scene = engine.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = scene.add_entity(morphs.URDF(file=ref.tree.source, fixed=True))
    scene.build(n_envs=max(FK_SIZES))
    rng = np.random.default_rng(7)
    rows = {}
    for n in FK_SIZES:
        qpos = ref.tree.apply_mimic(random_qpos(ref.tree, rng, n))
        pos, quat = robot.forward_kinematics(qpos, envs_idx=np.arange(n))
        assert pos.shape == (n, robot.n_links, 3) and np.isfinite(pos).all() and np.isfinite(quat).all()
        rows[n] = (qpos, pos, quat)
    for n, (qpos, pos, quat) in rows.items():  # every row of the small batches, a spread of the large
        for e in sorted({0, n // 2, n - 1, *range(0, n, max(1, n // 16))}):
            rots, poss = ref.link_poses(qpos[e])
            np.testing.assert_allclose(pos[e], poss, atol=TOL[precision], rtol=0, err_msg=f"{n} rows: row {e}")
            np.testing.assert_allclose(quat_to_matrix(quat[e]), rots, atol=TOL[precision], rtol=0,
                                       err_msg=f"{n} rows: row {e}")
    scene.destroy()


def test_jacobians_of_a_batch_past_one_launch_match_pinocchio(precision):
    """A software Vulkan device runs FK and Jacobian rows span by span (engine.runtime.span: 1024
    rows per launch); the rows on either side of a span's end are right as well as the first."""
    ref = _reference("panda_urdf")
    n = span.SOFTWARE_SPAN + 7
    scene = engine.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = scene.add_entity(morphs.URDF(file=ref.tree.source, fixed=True))
    scene.build(n_envs=n)
    robot.set_qpos(random_qpos(ref.tree, np.random.default_rng(3), n))
    qpos = robot.get_qpos()
    link = ref.tree.links[-1]
    J = robot.get_jacobian(robot.get_link(link.name))
    pos = robot.get_links_pos()
    for e in (0, n // 2, span.SOFTWARE_SPAN - 1, span.SOFTWARE_SPAN, n - 1):
        np.testing.assert_allclose(J[e], ref.jacobian(qpos[e], link.name), atol=TOL[precision], rtol=0,
                                   err_msg=f"row {e}")
        np.testing.assert_allclose(pos[e], ref.link_poses(qpos[e])[1], atol=TOL[precision], rtol=0,
                                   err_msg=f"row {e}")
    scene.destroy()
