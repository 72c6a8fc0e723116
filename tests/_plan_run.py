"""Plan one fixed batch of problems on the backend named in argv[1], save the paths to argv[2] (npz).

Run in a fresh process by tests/test_plan_backends.py: the same seed must give the same paths in any
process and on every backend."""

import sys

import numpy as np

import engine as gs

CRATE = dict(pos=(0.45, 0.0, 0.45), size=(0.1, 0.5, 0.3))


def plan(panda):
    """The batch: 4 envs from one side of the crate to the other, seed 11."""
    start = np.tile([1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04], (4, 1))
    goal = np.tile([-1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04], (4, 1))
    return panda.plan_path(goal, qpos_start=start, num_waypoints=50, seed=11, return_info=True)


if __name__ == "__main__":
    gs.init(backend=sys.argv[1], precision="32")
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    scene.build(n_envs=4)
    res = plan(panda)
    np.savez(sys.argv[2], path=res.path, valid=res.valid, nodes=res.nodes)
