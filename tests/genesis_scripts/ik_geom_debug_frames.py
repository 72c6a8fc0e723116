"""Targets built with ``engine.utils.geom`` (Genesis' ``genesis.utils.geom``, imported the same
way as ``gu``), shown as debug frames moved with Genesis 1.4.5's
``scene.update_debug_objects(objs, poses)``; a Panda's hand reaches each pose, checked by forward
kinematics against the transform the frame was drawn with."""

import numpy as np

import engine as gs
import engine.utils.geom as gu

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

scene = gs.Scene(show_viewer=False)
scene.add_entity(gs.morphs.Plane())
robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
scene.build()

hand = robot.get_link("hand")
T0 = gu.trans_quat_to_T(np.array([0.4, 0.0, 0.3]), gu.xyz_to_quat(np.array([180.0, 0.0, 0.0]), degrees=True))
frame = scene.draw_debug_frame(T0, axis_length=0.1)
answers = []  # (qpos, the frame's pose) per step, for the test's MuJoCo check
for i in range(4):
    yaw = np.deg2rad(30.0 * i)
    quat = gu.transform_quat_by_quat(gu.xyz_to_quat(np.array([0.0, 0.0, yaw]), rpy=True),
                                     gu.xyz_to_quat(np.array([np.pi, 0.0, 0.0]), rpy=True))
    pos = np.array([0.45, -0.1 + 0.07 * i, 0.25])
    T = gu.trans_quat_to_T(pos, quat)
    scene.update_debug_objects([frame], [T])
    assert np.allclose(frame.T, T)

    q = robot.inverse_kinematics(link=hand, pos=pos, quat=quat)
    links_pos, links_quat = robot.forward_kinematics(q)
    got = gu.trans_quat_to_T(links_pos[hand.idx_local].astype(float), links_quat[hand.idx_local].astype(float))
    trans, _ = gu.T_to_trans_quat(got)
    assert np.linalg.norm(trans - frame.T[:3, 3]) < 1e-3, (i, trans, frame.T[:3, 3])
    turn = gu.R_to_rotvec(gu.inv_T(frame.T)[:3, :3] @ got[:3, :3])
    assert np.linalg.norm(turn) < 1e-2, (i, turn)
    robot.set_qpos(q)
    answers.append((q.copy(), frame.T))

print("ok: the hand reached every debug frame built with engine.utils.geom")
