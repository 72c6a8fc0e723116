"""A mesh named by one of Genesis' asset paths (``meshes/duck.obj``) is found where Genesis keeps
its assets (an installed genesis package's assets folder, else ``$GENESIS_ASSETS``; the test
points the latter at a stand-in folder holding the project's own files). The loose mesh is driven
by IK through its first link, as in Genesis' examples, and checked by forward kinematics."""

import numpy as np

import engine as gs

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

scene = gs.Scene(show_viewer=False)
duck = scene.add_entity(gs.morphs.Mesh(file="meshes/duck.obj", scale=0.1, pos=(0.5, 0.0, 0.2)))
scene.build()

assert duck.n_qs == 7 and np.allclose(duck.get_pos(), [0.5, 0.0, 0.2])
link = duck.links[0]
answers = []  # (qpos, target pos, target quat) per step, for the test's check
for i in range(3):
    target_pos = np.array([0.3, 0.1 * i, 0.4])
    target_quat = np.array([np.cos(0.2 * i), 0.0, 0.0, np.sin(0.2 * i)])
    q = duck.inverse_kinematics(link=link, pos=target_pos, quat=target_quat)
    links_pos, links_quat = duck.forward_kinematics(q)
    assert np.linalg.norm(links_pos[0] - target_pos) < 1e-3
    assert abs(np.dot(links_quat[0], target_quat)) > 1 - 1e-5
    duck.set_qpos(q)
    answers.append((q.copy(), target_pos, target_quat))

print(f"ok: {duck.morph.file.name} from Genesis' assets reached every pose")
