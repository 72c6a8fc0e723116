"""A Panda plans its way to a cube and picks it, in the style of Genesis' IK + motion planning tutorial.

Gains and force ranges set, a pre-grasp pose by IK, a planned path (plan_path) drawn with
draw_debug_path and played with control_dofs_position + scene.step(), then reach, close the
fingers by force and lift. Every answer is checked: IK by forward kinematics, the path by its ends
and by the sphere model between waypoints, the played motion by the robot's qpos. Run as a script:
`python ik_plan_grasp.py [waypoints]`.
"""

import sys

import numpy as np

import engine as gs

WAYPOINTS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
DOWN = np.array([0, 1, 0, 0])  # the hand's z axis pointing down

gs.init(backend=gs.cpu, precision="32", seed=0, logging_level="warning")

scene = gs.Scene(
    sim_options=gs.options.SimOptions(dt=0.01),
    viewer_options=gs.options.ViewerOptions(camera_pos=(3, -1, 1.5), camera_lookat=(0.0, 0.0, 0.5), camera_fov=30),
    show_viewer=False,
)
plane = scene.add_entity(gs.morphs.Plane())
cube = scene.add_entity(gs.morphs.Box(size=(0.04, 0.04, 0.04), pos=(0.65, 0.0, 0.02)))
franka = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
scene.build()

arm = np.arange(7)
fingers = np.arange(7, 9)
kp = np.array([4000, 4000, 3000, 3000, 1800, 1800, 1800, 120, 120])
kv = kp / 10
franka.set_dofs_kp(kp)
franka.set_dofs_kv(kv)
franka.set_dofs_force_range(-np.array([80, 80, 80, 80, 10, 10, 10, 90, 90]),
                            np.array([80, 80, 80, 80, 10, 10, 10, 90, 90]))
assert np.allclose(franka.get_dofs_kp(), kp) and np.allclose(franka.get_dofs_kv(), kv)
assert np.allclose(franka.get_dofs_force_range()[1][fingers], 90)

hand = franka.get_link("hand")


def hand_at(q):
    pos, quat = franka.forward_kinematics(q)
    return pos[hand.idx_local], quat[hand.idx_local]


def solve(pos):
    q = franka.inverse_kinematics(link=hand, pos=pos, quat=DOWN)
    reached, quat = hand_at(q)
    assert np.linalg.norm(reached - pos) < 1e-3, (pos, reached)
    assert abs(abs(float(np.dot(quat, DOWN))) - 1) < 1e-4, quat
    return q


# pre-grasp: above the cube, fingers open
start = franka.get_qpos()
goal = solve(np.array([0.65, 0.0, 0.25]))
goal[-2:] = 0.04
path, valid = franka.plan_path(qpos_goal=goal, num_waypoints=WAYPOINTS, return_valid_mask=True)
assert valid and path.shape == (WAYPOINTS, franka.n_qs)
assert np.allclose(path[0], start, atol=1e-5) and np.allclose(path[-1], goal, atol=1e-5)
between = path[:-1] + 0.5 * (path[1:] - path[:-1])  # half-way points of every segment
assert not any(franka.in_collision(q) for q in np.concatenate([path, between]))

path_debug = scene.draw_debug_path(path, franka)
assert path_debug.is_drawn
for waypoint in path:
    franka.control_dofs_position(waypoint)
    scene.step()
scene.clear_debug_object(path_debug)
assert not path_debug.is_drawn
for _ in range(100):  # let it reach the last waypoint
    scene.step()
assert np.allclose(franka.get_qpos(), goal, atol=1e-4), franka.get_qpos() - goal

# reach down to the cube
q_reach = solve(np.array([0.65, 0.0, 0.13]))
franka.control_dofs_position(q_reach[:-2], arm)
for _ in range(100):
    scene.step()
assert np.linalg.norm(hand_at(franka.get_qpos())[0] - [0.65, 0.0, 0.13]) < 2e-3

# grasp: the fingers are driven by force (kinematic engine: they hold still, one warning)
fingers_before = franka.get_qpos()[fingers]
franka.control_dofs_position(q_reach[:-2], arm)
franka.control_dofs_force(np.array([-0.5, -0.5]), fingers)
for _ in range(50):
    scene.step()
assert np.allclose(franka.get_qpos()[fingers], fingers_before)

# lift
q_lift = solve(np.array([0.65, 0.0, 0.28]))
franka.control_dofs_position(q_lift[:-2], arm)
for _ in range(200):
    scene.step()
lifted = hand_at(franka.get_qpos())[0]
assert np.linalg.norm(lifted - [0.65, 0.0, 0.28]) < 2e-3, lifted
print(f"ok: planned {WAYPOINTS} waypoints, reached, grasped and lifted to z = {lifted[2]:.3f} m")
