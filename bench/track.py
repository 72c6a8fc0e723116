"""Smooth tracking: per-frame joint steps, success and lag, tracking against plain IK.

    python bench/track.py scenes                   # every shipped scene, 600 frames, as shipped and untracked
    python bench/track.py scenes --frames 120 --scenes batched_panda talos_hands
    python bench/track.py paths                    # Panda, UR5, dual arm, TALOS' hands on smooth paths
    python bench/track.py paths --envs 16 256 1024 --frames 90

``scenes``: each scene of ``scenes/`` built with its file's envs, ``--frames`` steps of
``runner.step()``, once as shipped (``solver.track: true``) and once with tracking off (restarts;
the continuity rule still picks the successful restart nearest the start). Per run: the worst and
99th-percentile per-frame joint step ``max_dof |q_t - q_{t-1}|`` over every env and frame after
frame 0 (which places the robot), how many env-frames exceed the robot's velocity limit x dt in
some dof (``over``; 1e-6 rad of slack), the success share, and ms per frame.

``paths``: the robots and targets of four shipped scenes (Panda ``batched_panda``, UR5
``ur5_figure8``, the dual arm ``dual_arm_multilink``, TALOS ``talos_hands``), their targets moved
instead along a circle, a figure eight or a random smooth path (a sum of three sinusoids per axis
with random phases per env), at ``--envs`` envs, ``--frames`` frames of 1/30 s after a placing
frame 0. Two modes from the same start in the same run: ``plain`` (``inverse_kinematics_multilink``
with its 50 restarts) and ``track`` (``track=True``: the robot file's velocity limits, one sample).
Columns: success share, worst and p99 per-frame step (rad), the lag (mean and worst position error
of the targets, mm), and IK calls per second (the median call).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # a checkout, not installed
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

from _common import fmt_pct, print_table  # noqa: E402

import engine  # noqa: E402
from engine import scenefile  # noqa: E402

SCENES = HERE.parent / "scenes"
PATH_ROBOTS = {"panda": "batched_panda", "ur5": "ur5_figure8", "dual_arm": "dual_arm_multilink",
               "talos": "talos_hands"}
DT = 1.0 / 30


def frame_steps(qs: np.ndarray, scalar: list[int], limit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per env and frame transition, ``max_dof |q_t - q_{t-1}|`` (frames - 1, n_envs) over the hinge and
    slide entries ``scalar``, and whether some dof moved more than its ``limit`` (per entry, rad or m)."""
    dq = np.abs(np.diff(qs[:, :, scalar], axis=0))
    return dq.max(axis=2), (dq > limit[scalar] + 1e-6).any(axis=2)


def per_frame_limit(robot, dt: float) -> np.ndarray:
    """The most each qpos entry may move in ``dt`` seconds under the robot file's velocity limits."""
    tree = robot.tree
    v = tree.velocity_limits()
    out = np.full(tree.n_qs, np.inf)
    for j in tree.joints:
        if j.n_qs == 1:
            out[j.q_start] = v[j.dof_start] * dt
    return out


def scalar_qs(robot) -> list[int]:
    return [j.q_start for j in robot.tree.joints if j.n_qs == 1]


def run_scene(name: str, frames: int, track: bool) -> list:
    spec = scenefile.load(SCENES / f"{name}.yaml")
    spec.solver.track = track
    if not track:
        spec.solver.max_joint_velocity = None
    scene, runner = scenefile.build(spec, debug_frames=False)
    robot = runner.robot
    first = runner.step()
    qs, ok, times = [first.qpos.copy()], [], []
    for _ in range(frames - 1):
        t0 = time.perf_counter()
        frame = runner.step()
        times.append(time.perf_counter() - t0)
        qs.append(frame.qpos.copy())
        ok.append(frame.success)
    steps, over = frame_steps(np.array(qs), scalar_qs(robot), per_frame_limit(robot, runner.dt))
    scene.destroy()
    return [name, "track" if track else "restarts", f"{steps.max():.3f}", f"{np.percentile(steps, 99):.3f}",
            f"{int(over.sum())}/{over.size}", fmt_pct(float(np.mean(ok))), f"{1e3 * statistics.median(times):.1f}"]


def scenes_table(args) -> None:
    names = args.scenes or sorted(p.stem for p in SCENES.glob("*.yaml"))
    rows = []
    for name in names:
        for track in (False, True):
            rows.append(run_scene(name, args.frames, track))
            print("  ", *rows[-1], flush=True)
    print(f"\n{args.frames} frames of runner.step() per scene; steps after frame 0 (rad or m)")
    print_table(["scene", "mode", "worst step", "p99 step", "over limit", "success", "ms/frame"], rows)


def path_targets(kind: str, centers: list[np.ndarray], n_envs: int, frames: int, rng) -> list[np.ndarray]:
    """Per target (frames, n_envs, 3): the centre moved along ``kind`` (m), each env at its own phase."""
    t = np.arange(frames)[:, None] * DT
    phase = rng.uniform(0, 2 * np.pi, n_envs)[None, :]
    out = []
    for c in centers:
        off = np.zeros((frames, n_envs, 3))
        if kind == "circle":  # 8 cm, one lap in 3 s
            w = 2 * np.pi / 3.0
            off[..., 1] = 0.08 * np.cos(w * t + phase)
            off[..., 2] = 0.08 * np.sin(w * t + phase)
        elif kind == "figure8":  # 10 cm lobes, a lap in 4 s
            w = 2 * np.pi / 4.0
            off[..., 1] = 0.10 * np.sin(w * t + phase)
            off[..., 2] = 0.10 * np.sin(w * t + phase) * np.cos(w * t + phase)
        else:  # a random smooth path: three sinusoids per axis, amplitudes 3 cm, periods 1.5-6 s
            for axis in range(3):
                for _ in range(3):
                    w = 2 * np.pi / rng.uniform(1.5, 6.0)
                    off[..., axis] += 0.03 * np.sin(w * t + rng.uniform(0, 2 * np.pi, n_envs)[None, :])
        out.append(c[None, None, :] + off)
    return out


def run_path(robot_name: str, kind: str, n_envs: int, frames: int, kernel: str) -> list:
    spec = scenefile.load(SCENES / f"{PATH_ROBOTS[robot_name]}.yaml")
    scene, runner = scenefile.build(spec, n_envs=n_envs, debug_frames=False)
    robot = runner.robot
    targets = spec.targets
    links = [robot.get_link(t.link) for t in targets]
    quats = [None if t.orientation() is None else np.tile(t.orientation(), (n_envs, 1)) for t in targets]
    poss = path_targets(kind, [np.array(t.pos) for t in targets], n_envs, frames, np.random.default_rng(7))
    common = dict(pos_mask=targets[0].pos_mask, rot_mask=targets[0].rot_mask, kernel=kernel, return_info=True)
    robot.set_qpos(robot.inverse_kinematics_multilink(links, [p[0] for p in poss], quats, seed=0, **common).qpos)
    start = robot.get_qpos().copy()
    limit = per_frame_limit(robot, DT)
    rows = []
    for mode in ("plain", "track"):
        robot.set_qpos(start)
        extra = dict(track=True, dt=DT) if mode == "track" else {}
        qs, ok, lag, times = [start.copy()], [], [], []
        for f in range(1, frames):
            t0 = time.perf_counter()
            res = robot.inverse_kinematics_multilink(links, [p[f] for p in poss], quats, seed=f, **common, **extra)
            times.append(time.perf_counter() - t0)
            robot.set_qpos(res.qpos)
            qs.append(res.qpos.copy())
            ok.append(res.success)
            lag.append(res.pos_error.max(axis=1))
        times = times[1:] or times  # the first call compiles
        steps, over = frame_steps(np.array(qs), scalar_qs(robot), limit)
        lag = np.array(lag) * 1e3
        rows.append([robot_name, kind, n_envs, mode, fmt_pct(float(np.mean(ok))), f"{steps.max():.3f}",
                     f"{np.percentile(steps, 99):.3f}", f"{int(over.sum())}", f"{lag.mean():.1f}", f"{lag.max():.1f}",
                     f"{1 / statistics.median(times):.0f}"])
        print("  ", *rows[-1], flush=True)
    scene.destroy()
    return rows


def paths_table(args) -> None:
    rows = []
    for robot_name in args.robots:
        for kind in args.paths:
            for n_envs in args.envs:
                rows += run_path(robot_name, kind, n_envs, args.frames, args.kernel)
    print(f"\n{args.frames} frames of {DT * 1e3:.1f} ms; steps in rad; lag: the targets' largest position error, mm")
    print_table(["robot", "path", "envs", "mode", "success", "worst step", "p99 step", "over limit", "lag mean",
                 "lag max", "calls/s"], rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["scenes", "paths"])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--frames", type=int, default=None, help="frames per run (scenes 600, paths 90)")
    parser.add_argument("--scenes", nargs="*", help="scene names (default: every shipped scene)")
    parser.add_argument("--robots", nargs="*", default=list(PATH_ROBOTS), choices=list(PATH_ROBOTS))
    parser.add_argument("--paths", nargs="*", default=["circle", "figure8", "spline"],
                        choices=["circle", "figure8", "spline"])
    parser.add_argument("--envs", type=int, nargs="*", default=[16, 256, 1024])
    parser.add_argument("--kernel", default="auto", choices=["auto", "per_robot", "generic"])
    args = parser.parse_args(argv)
    engine.init(backend=args.backend, precision="32", logging_level="warning")
    print(f"backend {engine.backend.current().describe()}")
    if args.what == "scenes":
        args.frames = args.frames or 600
        scenes_table(args)
    else:
        args.frames = args.frames or 90
        paths_table(args)


if __name__ == "__main__":
    main()
