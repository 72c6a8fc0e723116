"""One Panda follows an axis marker around a circle, in the style of Genesis' single-robot IK example.

Options, a Plane, a Mesh target moved by set_qpos, return_error=True, no env axis; every answer
is checked by forward kinematics. Run as a script: `python ik_panda_target.py [steps]`.
"""

import sys

import numpy as np

import engine as gs

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 12


def rotate(q, v):
    """Vector v turned by the unit quaternion q (w, x, y, z)."""
    w, u = q[0], np.asarray(q[1:])
    return v + 2 * np.cross(u, np.cross(u, v) + w * np.asarray(v))


gs.init(backend=gs.cpu, precision="32", logging_level="warning")

scene = gs.Scene(
    sim_options=gs.options.SimOptions(dt=0.02),
    viewer_options=gs.options.ViewerOptions(camera_pos=(0.0, -2.0, 1.5), camera_lookat=(0.0, 0.0, 0.5),
                                            camera_fov=40, max_FPS=200),
    rigid_options=gs.options.RigidOptions(enable_joint_limit=False, enable_collision=False, gravity=(0, 0, 0)),
    show_viewer=False,
)
plane = scene.add_entity(gs.morphs.Plane())
robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
marker = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=0.15),
                          surface=gs.surfaces.Default(color=(1.0, 0.5, 0.5, 1.0)))
scene.build()

assert scene.dt == 0.02 and robot.n_dofs == 9 and robot.n_links == len(robot.links) == 11
assert [j.name for j in robot.joints][:2] == ["joint1", "joint2"] and plane.n_dofs == 0 and marker.n_dofs == 6

hand = robot.get_link("hand")
target_quat = np.array([0, 1, 0, 0])  # the hand's z axis pointing down
center = np.array([0.4, -0.2, 0.25])
radius = 0.1
for i in range(STEPS):
    target_pos = center + radius * np.array([np.cos(i / 6 * np.pi), np.sin(i / 6 * np.pi), 0.0])
    marker.set_qpos(np.concatenate([target_pos, target_quat]))
    assert np.allclose(marker.get_pos(), target_pos, atol=1e-6) and np.allclose(marker.get_quat(), target_quat)

    q, err = robot.inverse_kinematics(link=hand, pos=target_pos, quat=target_quat, return_error=True,
                                      rot_mask=[False, False, True])  # only the direction of z matters
    assert q.shape == (robot.n_qs,) and err.shape == (6,)

    links_pos, links_quat = robot.forward_kinematics(q)  # the answer reaches the target
    reached = links_pos[hand.idx_local]
    z_axis = rotate(links_quat[hand.idx_local], [0.0, 0.0, 1.0])
    assert np.linalg.norm(reached - target_pos) < 1e-3, (i, reached, target_pos)
    assert z_axis[2] < -0.999, (i, z_axis)
    assert abs(np.linalg.norm(err[:3]) - np.linalg.norm(reached - target_pos)) < 1e-4, (err, reached - target_pos)

    robot.set_qpos(q)
    assert np.allclose(hand.get_pos(), reached, atol=1e-5)

scene.step()
print(f"ok: {STEPS} targets reached")
