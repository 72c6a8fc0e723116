"""IK on a free-floating body, in the style of Genesis' IK example that drives a loose mesh: an axis
marker Mesh (not fixed) is the 'robot', its first link the target, next to other bodies (a free
Sphere, a fixed Cylinder) that take no part in its IK. Batched and unbatched, checked by forward
kinematics."""

import numpy as np

import engine as gs

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

for n_envs in (None, 4):
    scene = gs.Scene(rigid_options=gs.options.RigidOptions(enable_joint_limit=False, enable_collision=False,
                                                           gravity=(0, 0, 0)))
    body = scene.add_entity(gs.morphs.Mesh(file="meshes/axis.obj", scale=0.06, pos=(3.5, -1.5, 0.7)))
    ball = scene.add_entity(gs.morphs.Sphere(radius=0.05, pos=(0.0, 0.5, 0.3)))
    post = scene.add_entity(gs.morphs.Cylinder(radius=0.03, height=0.4, pos=(0.2, 0.3, 0.2), fixed=True))
    scene.build(n_envs=n_envs)
    batch = (n_envs,) if n_envs else ()

    assert body.n_dofs == 6 and body.n_qs == 7 and post.n_qs == 0 and len(body.links) == 1
    assert np.allclose(body.get_pos(), [3.5, -1.5, 0.7])
    link = body.links[0]
    target_quat = np.array([0, 1, 0, 0])
    center = np.array([0.4, -0.2, 0.25])
    for i in range(4):
        target_pos = center + np.array([np.cos(i / 2 * np.pi), np.sin(i / 2 * np.pi), 0]) * 0.1
        q, err = body.inverse_kinematics(link=link, pos=target_pos, quat=target_quat, return_error=True)
        assert q.shape == batch + (7,) and err.shape == batch + (6,)
        links_pos, links_quat = body.forward_kinematics(q)
        assert np.max(np.linalg.norm(links_pos[..., 0, :] - target_pos, axis=-1)) < 1e-3
        assert np.min(np.abs(np.sum(links_quat[..., 0, :] * target_quat, axis=-1))) > 1 - 1e-5  # same rotation
        body.set_qpos(q)
        assert np.allclose(body.get_pos(), links_pos[..., 0, :], atol=1e-6)

    # the other bodies did not move, and the free sphere moves only when told
    assert np.allclose(ball.get_pos(), [0.0, 0.5, 0.3]) and np.allclose(post.get_pos(), [0.2, 0.3, 0.2])
    ball.set_qpos(np.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.0, 1.0]))
    assert np.allclose(ball.get_quat(), [0, 0, 0, 1]) and np.allclose(ball.get_pos(), [0.1, 0.2, 0.3])
    scene.reset()
    assert np.allclose(ball.get_pos(), [0.0, 0.5, 0.3]) and np.allclose(body.get_pos(), [3.5, -1.5, 0.7])
    scene.destroy()

print("ok: the free body reached every pose")
