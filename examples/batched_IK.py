"""IK across parallel environments: 16 Pandas, each hand circling at its own angular speed.

The seed's ``batched_IK.py`` on this engine (``import engine as ik`` instead of genesis). One
``inverse_kinematics`` call solves every environment. Each step prints the
worst position and z-axis error over the envs, measured by forward kinematics of the solved
configurations, and the run ends with a summary line::

    python examples/batched_IK.py --steps 200

With ``--record out.mp4`` the run is rendered headless to a video (``--frames N`` frames),
with each env's target drawn as a debug frame.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os

os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")  # no taichi version banner (not even on --help)

import numpy as np  # noqa: E402

import engine as ik  # noqa: E402
from engine.transforms import pose_to_matrix, quat_to_matrix  # noqa: E402

POS_TOL = 5e-4  # the solver's default tolerances, used to judge each solve
ROT_TOL = 5e-3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000, help="iterations of the target loop (default 1000)")
    parser.add_argument("--n-envs", type=int, default=16, help="parallel environments (default 16)")
    parser.add_argument("--backend", default="gpu", choices=["gpu", "cuda", "vulkan", "cpu"],
                        help="'gpu' falls back to the CPU with a warning (default gpu)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the speeds and of the solver's restarts")
    parser.add_argument("--quiet", action="store_true", help="print the summary line only")
    parser.add_argument("--record", metavar="OUT.mp4", help="render the run headless to this video")
    parser.add_argument("--frames", type=int, help="with --record: frames to render (sets --steps)")
    args = parser.parse_args(argv)
    if args.frames is not None:
        args.steps = args.frames
    if args.steps < 1:
        parser.error("--steps: expected a positive number of steps")
    if args.n_envs < 1:
        parser.error("--n-envs: expected a positive number of environments")

    ########################## init ##########################
    # taichi prints "Starting on arch=..." for every backend init tries: one line of ours instead
    with contextlib.redirect_stdout(io.StringIO()):
        arch = ik.init(backend=args.backend, precision="32", seed=args.seed)
    if not args.quiet:
        print(f"running on {arch.describe()}")
    np.random.seed(args.seed)  # the angular speeds, and the solver's restart seed when none is given

    ########################## create a scene ##########################
    scene = ik.Scene()

    ########################## entities ##########################
    robot = scene.add_entity(ik.morphs.MJCF(file="panda"))

    ########################## build ##########################
    n_envs = args.n_envs
    scene.build(n_envs=n_envs, env_spacing=(1.0, 1.0))

    target_quat = np.tile(np.array([0, 1, 0, 0]), [n_envs, 1])  # (n_envs, 4), pointing downwards
    center = np.tile(np.array([0.4, -0.2, 0.25]), [n_envs, 1])
    angular_speed = np.random.uniform(-10, 10, n_envs)
    r = 0.1

    ee_link = robot.get_link("hand")
    target_z = quat_to_matrix(target_quat)[:, :, 2]

    if args.record:
        scene.visualizer.start_recording(args.record, fps=60)
    frames = None
    n_ok = 0
    worst_pos = worst_rot = 0.0
    for i in range(args.steps):
        target_pos = np.zeros([n_envs, 3])
        target_pos[:, 0] = center[:, 0] + np.cos(i / 360 * np.pi * angular_speed) * r
        target_pos[:, 1] = center[:, 1] + np.sin(i / 360 * np.pi * angular_speed) * r
        target_pos[:, 2] = center[:, 2]
        # one target frame per env, drawn in the visualizer only (not part of the simulation)
        if frames is None:
            frames = scene.draw_debug_frame(pose_to_matrix(target_pos, target_quat), axis_length=0.1,
                                            axis_radius=0.005)
        else:
            frames.set_pose(pose_to_matrix(target_pos, target_quat))
            scene.update_debug_objects()

        q = robot.inverse_kinematics(
            link=ee_link,
            pos=target_pos,  # shape (n_envs, 3)
            quat=target_quat,  # shape (n_envs, 4)
            rot_mask=[False, False, True],  # for demo purpose: only restrict direction of z-axis
        )

        robot.set_qpos(q)
        scene.step()
        if args.record:
            scene.visualizer.update()  # renders the frame and appends it to the video

        # how well each env's hand meets its target, measured by forward kinematics of q
        links_pos, links_quat = robot.forward_kinematics(q, links_idx_local=[ee_link.idx_local])
        pos_err = np.linalg.norm(links_pos[:, 0] - target_pos, axis=-1)
        z_axes = quat_to_matrix(links_quat[:, 0])[:, :, 2]
        rot_err = np.arccos(np.clip(np.sum(z_axes * target_z, axis=-1), -1.0, 1.0))
        ok = (pos_err <= POS_TOL) & (rot_err <= ROT_TOL)
        n_ok += int(ok.sum())
        worst_pos = max(worst_pos, float(pos_err.max()))
        worst_rot = max(worst_rot, float(rot_err.max()))
        if not args.quiet:
            print(f"step {i:5d}: {int(ok.sum())}/{n_envs} envs solved, max pos error {pos_err.max():.2e} m, "
                  f"max z-axis error {rot_err.max():.2e} rad")

    if args.record:
        scene.visualizer.stop_recording()
        print(f"wrote {args.record}: {args.steps} frames")
    total = args.steps * n_envs
    print(f"IK success: {n_ok}/{total} solves ({100.0 * n_ok / total:.1f}%) over {args.steps} steps x {n_envs} "
          f"envs, max pos error {worst_pos:.2e} m, max z-axis error {worst_rot:.2e} rad")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
