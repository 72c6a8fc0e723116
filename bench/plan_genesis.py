"""Genesis' own ``plan_path`` on bench/plan.py's problems: run by bench/plan.py in Genesis' venv.

    /path/to/genesis-venv/bin/python bench/plan_genesis.py problems.npz paths.npz

Reads ``problems.npz`` (written by bench/plan.py):

* ``urdf`` -- the robot file (str), its ``package://`` URIs already resolved to absolute paths;
* ``clutter`` -- JSON of bench/plan.py's CLUTTER (kind, keyword arguments; metres);
* ``joint_names`` -- the names of ``start`` / ``goal``'s columns, in bench/plan.py's q order;
* ``sizes`` -- the batch sizes; for each size ``n``: ``start_<n>``, ``goal_<n>`` ``(n, n_qs)`` (rad, m);
* ``num_waypoints``, ``repeats``, ``seed``.

For each size it builds a Genesis scene (CPU backend, Genesis' defaults) with ``n_envs=n`` and calls
``plan_path(goal, qpos_start=start, num_waypoints=..., return_valid_mask=True)`` once (the first
call: the kernels compile) and ``repeats`` more times (timed, warm). Writes each size's last
paths to ``paths.npz`` as ``path_<n>`` ``(num_waypoints, n, n_qs)`` in bench/plan.py's q order and
``valid_<n>`` ``(n,)``; prints one JSON line per size: ``n``, ``build_s`` (s, scene build),
``first_s`` (s, first call including compiles), ``times_s`` (s per warm call), ``valid`` (share of
Genesis' valid mask, last call). Genesis' own imports only: this file never imports the engine.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np


def build(gs, urdf, clutter, n_envs):
    """A Genesis scene: the fixed-base robot from ``urdf`` and the fixed obstacles of ``clutter``."""
    morphs = {"box": gs.morphs.Box, "cylinder": gs.morphs.Cylinder, "sphere": gs.morphs.Sphere}
    scene = gs.Scene(show_viewer=False)
    robot = scene.add_entity(gs.morphs.URDF(file=urdf, fixed=True))
    for kind, kw in clutter:
        scene.add_entity(morphs[kind](fixed=True, **kw))
    scene.build(n_envs=n_envs)
    return robot


def q_order(robot, joint_names):
    """Indices into Genesis' q vector of each of ``joint_names`` (which must all be 1-dof joints)."""
    by_name = {j.name: j for j in robot.joints}
    missing = [n for n in joint_names if n not in by_name]
    if missing:
        raise SystemExit(f"plan_genesis: Genesis' robot has no joints {missing}")
    order = [by_name[n].qs_idx_local for n in joint_names]
    if any(len(idx) != 1 for idx in order):
        raise SystemExit("plan_genesis: a joint of bench/plan.py's q order has more than one q")
    order = [int(idx[0]) for idx in order]
    if sorted(order) != list(range(robot.n_qs)):
        raise SystemExit(f"plan_genesis: joints {joint_names} do not cover Genesis' {robot.n_qs} qs")
    return np.array(order)


def plan(robot, start, goal, num_waypoints):
    """One timed ``plan_path`` call with Genesis' defaults: (seconds, path, valid mask)."""
    t = time.perf_counter()
    path, valid = robot.plan_path(goal, qpos_start=start, num_waypoints=num_waypoints, return_valid_mask=True)
    return time.perf_counter() - t, path, valid


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    data = np.load(src)
    import genesis as gs
    import torch

    gs.init(backend=gs.cpu, seed=int(data["seed"]), logging_level="warning")
    clutter = json.loads(str(data["clutter"]))
    names = [str(n) for n in data["joint_names"]]
    out = {}
    for n in [int(s) for s in data["sizes"]]:
        t0 = time.perf_counter()
        robot = build(gs, str(data["urdf"]), clutter, n)
        build_s = time.perf_counter() - t0
        order = q_order(robot, names)
        start = np.empty((n, robot.n_qs))
        goal = np.empty((n, robot.n_qs))
        start[:, order], goal[:, order] = data[f"start_{n}"], data[f"goal_{n}"]
        start, goal = (torch.tensor(a, dtype=gs.tc_float, device=gs.device) for a in (start, goal))

        waypoints = int(data["num_waypoints"])
        first_s, path, valid = plan(robot, start, goal, waypoints)
        times = []
        for _ in range(int(data["repeats"])):
            t, path, valid = plan(robot, start, goal, waypoints)
            times.append(t)
        path = path.cpu().numpy().reshape(path.shape[0], n, robot.n_qs)[:, :, order]
        valid = valid.cpu().numpy().reshape(n).astype(bool)
        out[f"path_{n}"], out[f"valid_{n}"] = path, valid
        print(json.dumps(dict(n=n, build_s=build_s, first_s=first_s, times_s=times,
                              valid=float(valid.mean()))), flush=True)
    np.savez(dst, **out)


if __name__ == "__main__":
    main()
