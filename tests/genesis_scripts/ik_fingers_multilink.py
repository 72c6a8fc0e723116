"""Both Panda fingertips follow two axis markers at once, in the style of Genesis' multi-link IK
tutorial: two Mesh targets with their own surfaces, inverse_kinematics_multilink with
return_error, set_dofs_position, no env axis. Every answer is checked by forward kinematics."""

import sys

import numpy as np

import engine as gs

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 8

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

scene = gs.Scene(
    viewer_options=gs.options.ViewerOptions(camera_pos=(2.0, -2, 1.5), camera_lookat=(0.0, 0.0, 0.0), camera_fov=40),
    rigid_options=gs.options.RigidOptions(enable_joint_limit=False, enable_collision=False),
    vis_options=gs.options.VisOptions(show_world_frame=False),
)
scene.add_entity(gs.morphs.Plane())
robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
target_left = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=0.1),
                               surface=gs.surfaces.Default(color=(1, 0.5, 0.5, 1)))
target_right = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=0.1),
                                surface=gs.surfaces.Default(color=(0.5, 1.0, 0.5, 1)))
scene.build()

target_quat = np.array([0, 1, 0, 0])
center = np.array([0.4, -0.2, 0.25])
r = 0.1
left_finger = robot.get_link("left_finger")
right_finger = robot.get_link("right_finger")

for i in range(STEPS):
    target_pos_left = center + np.array([np.cos(i / 4 * np.pi), np.sin(i / 4 * np.pi), 0]) * r
    target_pos_right = target_pos_left + np.array([0.0, 0.03, 0])
    target_left.set_qpos(np.concatenate([target_pos_left, target_quat]))
    target_right.set_qpos(np.concatenate([target_pos_right, target_quat]))

    q, err = robot.inverse_kinematics_multilink(
        links=[left_finger, right_finger],
        poss=[target_pos_left, target_pos_right],
        quats=[target_quat, target_quat],
        rot_mask=[False, False, True],  # only the direction of z
        return_error=True,
    )
    assert q.shape == (robot.n_qs,) and err.shape == (2, 6)

    links_pos, _ = robot.forward_kinematics(q)
    for link, marker in ((left_finger, target_left), (right_finger, target_right)):
        miss = np.linalg.norm(links_pos[link.idx_local] - marker.get_pos())
        assert miss < 1e-3, (i, link.name, miss)

    robot.set_dofs_position(q)
    assert np.allclose(left_finger.get_pos(), links_pos[left_finger.idx_local], atol=1e-5)

print(f"ok: {STEPS} finger pairs reached")
