"""IK with multiple end-effector links: both Panda fingertips follow targets moving on a circle.

The seed's ``advanced_IK_multilink.py`` on this engine (``import engine as ik`` instead of genesis).
Each step prints the fingertips' position and z-axis errors, measured by forward
kinematics of the solved configuration, and the run ends with a summary line::

    python examples/advanced_IK_multilink.py --steps 200

With ``--record out.mp4`` the run is rendered headless to a video (``--frames N`` frames), with
the fingertip targets drawn as debug frames, as in the seed.
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

POS_TOL = 5e-4  # the solver's default tolerances, used to judge each step
ROT_TOL = 5e-3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="iterations of the target loop (default 2000)")
    parser.add_argument("--backend", default="gpu", choices=["gpu", "cuda", "vulkan", "cpu"],
                        help="'gpu' falls back to the CPU with a warning (default gpu)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the solver's random restarts")
    parser.add_argument("--quiet", action="store_true", help="print the summary line only")
    parser.add_argument("--record", metavar="OUT.mp4", help="render the run headless to this video")
    parser.add_argument("--frames", type=int, help="with --record: frames to render (sets --steps)")
    args = parser.parse_args(argv)
    if args.frames is not None:
        args.steps = args.frames
    if args.steps < 1:
        parser.error("--steps: expected a positive number of steps")

    ########################## init ##########################
    # taichi prints "Starting on arch=..." for every backend init tries: one line of ours instead
    with contextlib.redirect_stdout(io.StringIO()):
        arch = ik.init(backend=args.backend, precision="32", seed=args.seed)
    if not args.quiet:
        print(f"running on {arch.describe()}")
    np.random.seed(args.seed)  # the solver draws its restart seed from numpy when none is given

    ########################## create a scene ##########################
    scene = ik.Scene()

    ########################## entities ##########################
    robot = scene.add_entity(ik.morphs.MJCF(file="panda"))

    ########################## build ##########################
    scene.build()

    target_quat = np.array([0, 1, 0, 0])  # (w, x, y, z): the fingertips' z-axis points straight down
    center = np.array([0.5, 0.0, 0.5])
    r = 0.1

    left_finger = robot.get_link("left_finger")
    right_finger = robot.get_link("right_finger")
    fingers = [left_finger.idx_local, right_finger.idx_local]
    target_z = quat_to_matrix(target_quat)[:, 2]

    target_left = scene.draw_debug_frame(pose_to_matrix(center, target_quat), axis_length=0.05)
    target_right = scene.draw_debug_frame(pose_to_matrix(center, target_quat), axis_length=0.05)
    if args.record:
        scene.visualizer.start_recording(args.record, fps=60)
    n_ok = 0
    worst_pos = worst_rot = 0.0
    for i in range(args.steps):
        target_pos_left = center + np.array([np.cos(i / 360 * np.pi), np.sin(i / 360 * np.pi), 0]) * r
        target_pos_right = target_pos_left + np.array([0.0, 0.03, 0])
        target_left.set_pose(pose_to_matrix(target_pos_left, target_quat))
        target_right.set_pose(pose_to_matrix(target_pos_right, target_quat))
        scene.update_debug_objects()

        q = robot.inverse_kinematics_multilink(
            links=[left_finger, right_finger],
            poss=[target_pos_left, target_pos_right],
            quats=[target_quat, target_quat],
            rot_mask=[False, False, True],  # only restrict direction of z-axis
        )

        # Note that this IK is for visualization purposes, so here we do not call scene.step(), but only
        # update the state and the visualizer.
        # In actual control applications, you should instead use robot.control_dofs_position() and scene.step()
        robot.set_dofs_position(q)
        if args.record:
            scene.visualizer.update()  # renders the frame and appends it to the video

        # how well the fingertips meet their targets, measured by forward kinematics of q
        links_pos, links_quat = robot.forward_kinematics(q)
        pos_err = max(np.linalg.norm(links_pos[fingers[0]] - target_pos_left),
                      np.linalg.norm(links_pos[fingers[1]] - target_pos_right))
        z_axes = quat_to_matrix(links_quat[fingers])[:, :, 2]
        rot_err = float(np.max(np.arccos(np.clip(z_axes @ target_z, -1.0, 1.0))))
        ok = pos_err <= POS_TOL and rot_err <= ROT_TOL
        n_ok += ok
        worst_pos = max(worst_pos, pos_err)
        worst_rot = max(worst_rot, rot_err)
        if not args.quiet:
            print(f"step {i:5d}: fingertip pos error {pos_err:.2e} m, z-axis error {rot_err:.2e} rad"
                  f"{'' if ok else '  (missed)'}")

    if args.record:
        scene.visualizer.stop_recording()
        print(f"wrote {args.record}: {args.steps} frames")
    print(f"IK success: {n_ok}/{args.steps} steps ({100.0 * n_ok / args.steps:.1f}%), "
          f"max pos error {worst_pos:.2e} m, max z-axis error {worst_rot:.2e} rad")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
