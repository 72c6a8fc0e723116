"""Debug objects live in the visualizer only: a thousand of them (drawn, moved, rendered, cleared)
change no IK or FK result, link count, entity list or state array. Plus their handle semantics
and input validation (errors name the argument).
"""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import morphs
from engine.transforms import pose_to_matrix
from engine.vis import DebugObject

N_ENVS = 4


@pytest.fixture(scope="module", autouse=True)
def f32():
    engine.init(backend="cpu", precision="32")


def make_scene(n_envs=N_ENVS):
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs, env_spacing=(1.0, 1.0))
    return scene, robot


def snapshot(scene, robot) -> dict:
    hand = robot.get_link("hand")
    target_pos = np.array([[0.45, -0.1 + 0.05 * i, 0.3] for i in range(N_ENVS)])
    target_quat = np.tile([0.0, 1.0, 0.0, 0.0], (N_ENVS, 1))
    q = robot.inverse_kinematics(link=hand, pos=target_pos, quat=target_quat, rot_mask=[False, False, True], seed=7)
    q_multi = robot.inverse_kinematics_multilink(
        links=[robot.get_link("left_finger"), robot.get_link("right_finger")],
        poss=[target_pos + [0, 0.04, 0], target_pos - [0, 0.04, 0]], quats=[target_quat, target_quat],
        rot_mask=[False, False, True], seed=11)
    fk_pos, fk_quat = robot.forward_kinematics(q)
    robot.control_dofs_position(robot.get_dofs_position() * 0.5)
    scene.step()
    out = {"q": q, "q_multi": q_multi, "fk_pos": fk_pos, "fk_quat": fk_quat,
           "jac": robot.get_jacobian(hand), "n_links": robot.n_links, "n_dofs": robot.n_dofs,
           "entities": [(type(e).__name__, e.tree.name, e.n_links) for e in scene.entities],
           "links": [link.name for link in robot.links], "t": scene.t}
    out.update(state_arrays(scene, robot))
    return out


def state_arrays(scene, robot) -> dict:
    """Every numpy array the scene and entity hold (whatever the engine names its state)."""
    arrays = {f"entity.{k}": v.copy() for k, v in vars(robot).items() if isinstance(v, np.ndarray)}
    arrays.update({f"scene.{k}": v.copy() for k, v in vars(scene).items() if isinstance(v, np.ndarray)})
    # the entity's kinematic state lives in its Configuration (engine/configuration.py)
    arrays.update({f"configuration.{k}": v.copy() for k, v in vars(robot.configuration).items()
                   if isinstance(v, np.ndarray)})
    assert any("qpos" in k for k in arrays), sorted(arrays)
    return arrays


def draw_thousand(scene, rng) -> list[DebugObject]:
    handles = []
    for i in range(1000):
        p = rng.uniform(-0.5, 0.5, 3) + [0.3, 0.0, 0.5]
        kind = i % 5
        if kind == 0:
            handles.append(scene.draw_debug_frame(pose_to_matrix(p, [1.0, 0.0, 0.0, 0.0]), env_idx=i % N_ENVS))
        elif kind == 1:
            handles.append(scene.draw_debug_sphere(p, radius=0.01, env_idx=i % N_ENVS))
        elif kind == 2:
            handles.append(scene.draw_debug_spheres(rng.uniform(-0.5, 0.5, (3, 3)), radius=0.005))
        elif kind == 3:
            handles.append(scene.draw_debug_line(p, p + 0.1, color=(0, 1, 0, 1)))
        else:
            handles.append(scene.draw_debug_arrow(p, (0, 0, 0.1), color=(0, 0, 1, 1)))
    return handles


def test_thousand_debug_objects_change_no_solver_result_or_state():
    plain_scene, plain_robot = make_scene()
    reference = snapshot(plain_scene, plain_robot)

    scene, robot = make_scene()
    rng = np.random.default_rng(0)
    handles = draw_thousand(scene, rng)
    assert len(scene.visualizer.debug) == 1000
    for h in handles[::7]:  # move some, as the GUI does with its targets
        T = h.T
        T[..., :3, 3] += 0.05
        h.set_pose(T)
    scene.update_debug_objects()
    poses = scene.visualizer.debug.instance_poses(scene.envs_offset())
    assert sum(len(p) for p in poses.values()) == sum(h.n_instances for h in handles)
    assert len(poses) <= 8  # grouped per (shape, colour): a few instanced meshes, not 1000
    with_debug = snapshot(scene, robot)
    for key, value in reference.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(with_debug[key], value, err_msg=key)
        else:
            assert with_debug[key] == value, key
    assert len(scene.entities) == 1 and robot.n_links == plain_robot.n_links
    scene.clear_debug_objects()
    assert len(scene.visualizer.debug) == 0 and not handles[0].is_drawn
    after_clear, reference_2 = snapshot(scene, robot), snapshot(plain_scene, plain_robot)  # one more step each
    for key, value in reference_2.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after_clear[key], value, err_msg=key)


def test_rendering_debug_objects_changes_no_state():
    from _support import skip_or_fail

    scene, robot = make_scene()
    before, t = state_arrays(scene, robot), scene.t
    draw_thousand(scene, np.random.default_rng(1))
    try:
        img = scene.visualizer.render()
    except RuntimeError as err:
        skip_or_fail(f"no offscreen GL here: {err}")
    assert img.ndim == 3
    assert scene.t == t  # update() draws the current state; it does not step
    after = state_arrays(scene, robot)
    assert after.keys() == before.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)
    scene.visualizer.close()


def test_handles_pose_and_env_axis():
    scene, _ = make_scene()
    T = np.eye(4)
    T[:3, 3] = (0.1, 0.2, 0.3)
    h = scene.draw_debug_frame(T)
    np.testing.assert_array_equal(h.T, T)
    hs = scene.draw_debug_frame(np.tile(T, (N_ENVS, 1, 1)))
    assert hs.T.shape == (N_ENVS, 4, 4) and list(hs.env_idx) == list(range(N_ENVS))
    hs.set_pose(np.eye(4))  # one pose for every env's copy
    np.testing.assert_array_equal(hs.T, np.tile(np.eye(4), (N_ENVS, 1, 1)))
    s = scene.draw_debug_sphere((0.1, 0.0, 0.2), env_idx=2)
    np.testing.assert_array_equal(s.T[:3, 3], (0.1, 0.0, 0.2))
    assert list(s.env_idx) == [2]
    offsets = scene.envs_offset()
    poses = scene.visualizer.debug.instance_poses(offsets)
    spheres = poses[("sphere", (1.0, 0.0, 0.0, 0.5))]
    np.testing.assert_allclose(spheres[0, :3, 3], np.add((0.1, 0.0, 0.2), offsets[2]), atol=1e-6)
    line = scene.draw_debug_line((0, 0, 0), (0, 0, 0.5), radius=0.01, color=(0, 0.5, 0))
    inst = scene.visualizer.debug.instance_poses(offsets)[("cylinder", (0.0, 0.5, 0.0, 1.0))]
    np.testing.assert_allclose(inst[0, :3, 3] - offsets[0], 0, atol=1e-6)  # unit cylinder z 0..1 -> 0..0.5
    np.testing.assert_allclose(inst[0, :3, 2], (0, 0, 0.5), atol=1e-6)
    scene.clear_debug_object(line)
    with pytest.raises(ValueError, match="handle"):
        scene.clear_debug_object(line)
    with pytest.raises(TypeError, match="handle"):
        scene.clear_debug_object("frame")


def test_moving_a_handle_shows_after_update_debug_objects():
    scene, _ = make_scene()
    h = scene.draw_debug_sphere((0.0, 0.0, 0.5), radius=0.02, color=(0, 1, 1, 1))
    offsets = scene.envs_offset()
    key = ("sphere", (0.0, 1.0, 1.0, 1.0))
    first = scene.visualizer.debug.instance_poses(offsets)[key].copy()
    h.T = pose_to_matrix((0.2, 0.0, 0.5), (1.0, 0.0, 0.0, 0.0))
    np.testing.assert_array_equal(scene.visualizer.debug.instance_poses(offsets)[key], first)  # not yet
    scene.update_debug_objects()
    moved = scene.visualizer.debug.instance_poses(offsets)[key]
    np.testing.assert_allclose(moved[0, :3, 3] - first[0, :3, 3], (0.2, 0.0, 0.0), atol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda s: s.draw_debug_frame(np.eye(3)), r"T: expected shape \(4, 4\) or \(4, 4, 4\)"),
    (lambda s: s.draw_debug_frame(np.diag([2.0, 1.0, 1.0, 1.0])), "T: expected a rigid transform"),
    (lambda s: s.draw_debug_frame(np.eye(4) + np.eye(4)[[3]] * 0.5), "T: expected a homogeneous"),
    (lambda s: s.draw_debug_frame(np.full((4, 4), np.nan)), "T: expected finite"),
    (lambda s: s.draw_debug_frame(np.eye(4), axis_length=-1), "axis_length"),
    (lambda s: s.draw_debug_frame(np.eye(4), env_idx=N_ENVS), "env_idx"),
    (lambda s: s.draw_debug_sphere((0, 0)), "pos: expected shape"),
    (lambda s: s.draw_debug_sphere((0, 0, 0), radius=0), "radius"),
    (lambda s: s.draw_debug_sphere((0, 0, 0), color=(1, 0)), "color"),
    (lambda s: s.draw_debug_sphere((0, 0, 0), color=(1, 0, 0, 1.5)), "color"),
    (lambda s: s.draw_debug_spheres(np.zeros((5, 2))), "poss"),
    (lambda s: s.draw_debug_line((0, 0, 0), (1, 1)), "end"),
    (lambda s: s.draw_debug_arrow((0, 0, 0), (0, 0, 0)), "vec: expected a non-zero"),
    (lambda s: s.draw_debug_arrow((0, 0, 0), "up"), "vec"),
])
def test_bad_input_is_rejected_with_the_argument_named(call, match):
    scene, _ = make_scene()
    n = len(scene.visualizer.debug)
    with pytest.raises((ValueError, TypeError, IndexError), match=match):
        call(scene)
    assert len(scene.visualizer.debug) == n  # nothing half-drawn


def test_set_pose_validates_shape():
    scene, _ = make_scene()
    h = scene.draw_debug_frame(np.eye(4))
    with pytest.raises(ValueError, match="T"):
        h.set_pose(np.tile(np.eye(4), (N_ENVS, 1, 1)))  # drawn in one env: a (4, 4) pose only
    with pytest.raises(ValueError, match="T"):
        h.T = np.zeros((4, 4))
