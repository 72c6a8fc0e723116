"""Render rate of one robot as the app draws it: a catalog robot loaded the way the GUI loads it
(base raised to the floor), its meshes smoothed and, at the automatic level of detail, decimated
(``app.sim.shading.prepare``), drawn offscreen by ``engine.vis.Visualizer`` with joints moving every
frame so each image uploads new instance poses.

    python bench/robot_render.py                      # baxter, 4 envs, 1280x720, automatic LOD
    python bench/robot_render.py --robot talos --envs 16 --res 640x360 --lod full

Prints: seconds to the first image (meshes read, smoothed, decimated, uploaded; from the disk
cache when warm), the level of detail used, triangles drawn per env, and the median seconds per
image and images per second over ``--frames`` further images.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import engine
from engine import morphs
from engine.vis import Visualizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="baxter")
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--res", default="1280x720")
    ap.add_argument("--lod", choices=("full", "decimated"), default=None, help="default: automatic, as the app")
    ap.add_argument("--frames", type=int, default=10)
    args = ap.parse_args()
    res = tuple(int(x) for x in args.res.lower().split("x"))

    from app.control import placement
    from app.sim import shading

    engine.init(backend="cpu", precision="32")
    t0 = time.perf_counter()
    probe = engine.Scene()
    robot = probe.add_entity(morphs.from_file(args.robot))
    probe.build()
    n = robot.n_links
    lift = placement.lift_to_floor(robot.tree, robot.get_links_pos().reshape(-1, n, 3)[0],
                                   robot.get_links_quat().reshape(-1, n, 4)[0])
    scene = engine.Scene()
    robot = scene.add_entity(morphs.from_file(args.robot, pos=(0.0, 0.0, lift)))
    scene.build(n_envs=args.envs, env_spacing=(1.5, 1.5))
    vis = Visualizer(scene, res=res, lod=args.lod)
    scene.visualizer = vis
    shading.prepare(vis, robot.tree)
    vis.render()
    first = time.perf_counter() - t0
    faces = sum(s.n_faces for k, s in vis._specs.items() if k[0] == "link")
    rng = np.random.default_rng(0)
    lo, hi = robot.tree.q_limits()
    q0 = robot.get_qpos()
    times = []
    for i in range(args.frames):
        q = q0 + 0.05 * np.sin(i / 5) * np.clip(hi - lo, 0, 1)[None] * rng.uniform(0.5, 1.0, q0.shape)
        robot.set_qpos(q)
        t = time.perf_counter()
        vis.render()
        times.append(time.perf_counter() - t)
    vis.close()
    med = statistics.median(times)
    print(f"{args.robot}: {args.envs} envs at {res[0]}x{res[1]}, lod {vis.lod}, {faces} triangles per env")
    print(f"  first image {first:.2f} s (load + build + meshes); then {med * 1e3:.0f} ms per image "
          f"(median of {len(times)}), {1 / med:.1f} images/s")


if __name__ == "__main__":
    main()
