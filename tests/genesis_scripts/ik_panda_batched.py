"""64 Pandas, each hand circling at its own speed, each env's target an axis marker moved by
set_qpos: the style of Genesis' batched IK examples (Plane, Kinematic material, batched Mesh
target, return_error). Every env's answer is checked by forward kinematics."""

import sys

import numpy as np

import engine as gs

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
N_ENVS = 64

gs.init(backend=gs.cpu, precision="32", logging_level="warning")
np.random.seed(0)

scene = gs.Scene(
    viewer_options=gs.options.ViewerOptions(camera_pos=(0.0, -2, 1.5), camera_lookat=(0.0, 0.0, 0.5), camera_fov=40),
    rigid_options=gs.options.RigidOptions(enable_joint_limit=False),
    show_viewer=False,
)
plane = scene.add_entity(gs.morphs.Plane(), material=gs.materials.Kinematic())
robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"), material=gs.materials.Kinematic())
marker = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=0.15), material=gs.materials.Kinematic(),
                          surface=gs.surfaces.Default(color=(1, 0.5, 0.5, 1)))
scene.build(n_envs=N_ENVS, env_spacing=(1.0, 1.0))

target_quat = np.tile(np.array([0, 1, 0, 0]), [N_ENVS, 1])  # pointing down
center = np.tile(np.array([0.4, -0.2, 0.25]), [N_ENVS, 1])
angular_speed = np.random.uniform(-10, 10, N_ENVS)
r = 0.1
hand = robot.get_link("hand")

for i in range(STEPS):
    target_pos = np.zeros([N_ENVS, 3])
    target_pos[:, 0] = center[:, 0] + np.cos(i / 360 * np.pi * angular_speed) * r
    target_pos[:, 1] = center[:, 1] + np.sin(i / 360 * np.pi * angular_speed) * r
    target_pos[:, 2] = center[:, 2]
    marker.set_qpos(np.hstack([target_pos, target_quat]))
    assert marker.get_qpos().shape == (N_ENVS, 7) and np.allclose(marker.get_pos(), target_pos, atol=1e-6)

    q, err = robot.inverse_kinematics(link=hand, pos=target_pos, quat=target_quat, return_error=True,
                                      rot_mask=[False, False, True])
    assert q.shape == (N_ENVS, robot.n_qs) and err.shape == (N_ENVS, 6)

    links_pos, links_quat = robot.forward_kinematics(q)
    miss = np.linalg.norm(links_pos[:, hand.idx_local] - target_pos, axis=1)
    assert miss.max() < 1e-3, (i, miss.max())
    w, x, y = links_quat[:, hand.idx_local, 0], links_quat[:, hand.idx_local, 1], links_quat[:, hand.idx_local, 2]
    z_down = 1 - 2 * (x * x + y * y)  # z component of the hand's z axis
    assert z_down.max() < -0.999, (i, z_down.max())

    robot.set_qpos(q)
    scene.step()
    assert np.allclose(hand.get_pos(), links_pos[:, hand.idx_local], atol=1e-5)
    assert hand.get_pos(envs_idx=[3, 5]).shape == (2, 3) and hand.get_quat().shape == (N_ENVS, 4)

print(f"ok: {STEPS} x {N_ENVS} targets reached")
