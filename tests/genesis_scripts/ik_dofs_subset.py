"""IK that may move only some dofs (dofs_idx_local), with a Box target moved by set_qpos, batched
and unbatched: the answer reaches the target by forward kinematics, and every other dof keeps
its current value exactly."""

import sys

import numpy as np

import engine as gs

N_ENVS = 8

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

for n_envs in (None, N_ENVS):
    scene = gs.Scene(rigid_options=gs.options.RigidOptions(enable_collision=False))
    scene.add_entity(gs.morphs.Plane())
    robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
    cube = scene.add_entity(gs.morphs.Box(size=(0.04, 0.04, 0.04), pos=(0.65, 0.0, 0.02)))
    scene.build(n_envs=n_envs)
    batch = (n_envs,) if n_envs else ()

    assert cube.get_qpos().shape == batch + (7,) and np.allclose(cube.get_pos(), [0.65, 0.0, 0.02])
    goal = np.array([0.5, 0.1, 0.3])
    cube.set_qpos(np.concatenate([goal, [1, 0, 0, 0]]))  # the cube moves: the target is read back from it
    target = cube.get_pos()
    assert np.allclose(target, goal, atol=1e-6)

    # a start that is not the default, with the fingers and the last joint away from their default values
    start = np.array([0.1, -0.6, 0.1, -2.2, 0.1, 1.7, 0.3, 0.02, 0.03])
    robot.set_qpos(np.tile(start, batch + (1,)))
    before = robot.get_qpos().copy()
    arm = [0, 1, 2, 3, 4, 5]  # joint7 and the fingers must not move
    hand = robot.get_link("hand")
    q, err = robot.inverse_kinematics(link=hand, pos=target, quat=np.array([0, 1, 0, 0]), dofs_idx_local=arm,
                                      rot_mask=[False, False, True], return_error=True)
    assert q.shape == batch + (robot.n_qs,) and err.shape == batch + (6,)
    kept = np.array_equal(q[..., 6:], before[..., 6:])
    assert kept, ("dofs outside dofs_idx_local changed", q[..., 6:], before[..., 6:])
    links_pos, _ = robot.forward_kinematics(q)
    miss = np.linalg.norm(links_pos[..., hand.idx_local, :] - target, axis=-1)
    assert np.max(miss) < 1e-3, miss

    # the same call again from the answer: still only those dofs
    robot.set_qpos(q)
    q2 = robot.inverse_kinematics(link=hand, pos=target + [0.0, 0.05, 0.0], quat=np.array([0, 1, 0, 0]),
                                  dofs_idx_local=arm, rot_mask=[False, False, True])
    assert np.array_equal(q2[..., 6:], before[..., 6:])
    scene.destroy()

print("ok: only the chosen dofs moved" + (" (batched and unbatched)" if "-v" in sys.argv else ""))
