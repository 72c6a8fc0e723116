"""Offscreen render cost per frame: n_envs x robot x resolution x level of detail.

    python bench/render.py            # full table (a few minutes on 2 cores)
    python bench/render.py --quick    # 16 envs at 1280x720, decimated, both robots

Robots: ``panda`` (our MJCF, primitive visuals) and ``panda_urdf`` (example-robot-data's URDF,
real meshes, ~135k triangles per robot) for full vs decimated meshes. Each frame runs what a live
batched-IK demo runs: one batched ``inverse_kinematics`` call for the hand (targets on circles,
warm-started from the current qpos), ``set_qpos``, then ``scene.visualizer.render()``, which waits
for the render thread. Columns: median ms per frame (wall) and its split into IK, scene update
(link poses -> per-env instance matrices in the caller, plus the instance-buffer upload in the
render thread) and rasterising (draw + colour read-back, render thread); "other" is the thread
hand-off. Target: 16 envs at 1280x720 decimated <= 60 ms per frame (an empty 720p frame costs
~9 ms here; the GL software rasteriser shares the machine's cores with everything else).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import engine
from engine import morphs
from engine.vis import Visualizer

ROBOTS = {"panda": "hand", "panda_urdf": "panda_hand"}
N_ENVS = (1, 16, 64)
RESOLUTIONS = ((1280, 720), (640, 360))
LODS = ("full", "decimated")


def make_scene(robot_name: str, n_envs: int):
    scene = engine.Scene()
    robot = scene.add_entity(morphs.from_file(robot_name, fixed=True))
    scene.build(n_envs=n_envs, env_spacing=(1.0, 1.0))
    return scene, robot


def run_config(scene, robot, ee: str, res, lod: str, budget_s: float) -> dict:
    n = scene.n_envs
    vis = Visualizer(scene, res=res, lod=lod)
    scene.visualizer = vis
    hand = robot.get_link(ee)
    rng = np.random.default_rng(0)
    start = robot.get_links_pos()[:, hand.idx_local]
    speed = rng.uniform(-10, 10, n)
    quat = np.tile([0.0, 1.0, 0.0, 0.0], (n, 1))
    faces = sum(s.n_faces for k, s in vis._specs.items() if k[0] == "link") if vis._link_specs else 0

    def frame(i: int) -> dict:
        t0 = time.perf_counter()
        target = start.copy()
        target[:, 0] += np.cos(i / 36 * np.pi * speed) * 0.1 - 0.1
        target[:, 1] += np.sin(i / 36 * np.pi * speed) * 0.1
        q = robot.inverse_kinematics(link=hand, pos=target, quat=quat, rot_mask=[False, False, True],
                                     init_qpos=robot.get_qpos(), max_samples=4)
        robot.set_qpos(q)
        t1 = time.perf_counter()
        vis.render()  # renders the frame and waits (update() renders only for a window or a recording)
        t2 = time.perf_counter()
        timing = vis.last_timing
        return {"frame": (t2 - t0) * 1e3, "ik": (t1 - t0) * 1e3,
                "update": timing["scene_ms"] + timing["upload_ms"], "raster": timing["raster_ms"]}

    for i in range(2):  # warm-up: meshes, GL context, shaders, IK kernels
        frame(i)
    faces = sum(s.n_faces for k, s in vis._specs.items() if k[0] == "link")
    rows, t_end, i = [], time.perf_counter() + budget_s, 2
    while (time.perf_counter() < t_end or len(rows) < 3) and len(rows) < 40:
        rows.append(frame(i))
        i += 1
    vis.close()
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    med["faces_per_env"] = faces
    med["frames"] = len(rows)
    return med


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 envs, 1280x720, decimated only")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of frames per configuration")
    args = parser.parse_args()
    engine.init(backend="cpu", precision="32")
    n_envs = (16,) if args.quick else N_ENVS
    resolutions = RESOLUTIONS[:1] if args.quick else RESOLUTIONS
    lods = ("decimated",) if args.quick else LODS
    print(f"{'robot':<11}{'envs':>5} {'res':>10} {'lod':>10}{'tris/env':>9}{'ms/frame':>10}"
          f"{'IK':>7}{'update':>8}{'raster':>8}{'other':>7}")
    for robot_name, ee in ROBOTS.items():
        for n in n_envs:
            scene, robot = make_scene(robot_name, n)
            for res in resolutions:
                for lod in lods:
                    m = run_config(scene, robot, ee, res, lod, args.budget)
                    f = m["frame"]
                    other = max(f - m["ik"] - m["update"] - m["raster"], 0.0)
                    print(f"{robot_name:<11}{n:>5} {res[0]:>5}x{res[1]:<4} {lod:>10}{m['faces_per_env']:>9}"
                          f"{f:>10.1f}{100 * m['ik'] / f:>6.0f}%{100 * m['update'] / f:>7.0f}%"
                          f"{100 * m['raster'] / f:>7.0f}%{100 * other / f:>6.0f}%", flush=True)
            scene.destroy()


if __name__ == "__main__":
    main()
