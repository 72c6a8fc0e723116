"""SHA-256 of the IK answers of a fixed set of calls, to show two commits answer bit for bit alike.

    python bench/answers_digest.py --backend cpu      # or vulkan, cuda

Solves, with fixed seeds and fixed targets: the Panda (``inverse_kinematics`` on the hand, per-robot
and generic; ``inverse_kinematics_multilink`` on the hand and the elbow, masked), the dual arm
(a closed chain of ``solve_ik``), TALOS (both feet held and the centre of mass moved, with a
posture) and the Panda avoiding a box (generic and auto). Prints one digest per call and one over
all of them: the bytes of every answer's qpos, error, success, iterations, sample and (with
avoidance) min_distance. Run it on two commits, on the same backend, and compare the lines.
Only the engine's public API is used, so the script runs unchanged on older commits.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import warnings

import numpy as np

import engine as gs
from engine.ik.tasks import ComTask, PoseTask, PostureTask, RelativePoseTask

N = 16


def _digest(result) -> str:
    h = hashlib.sha256()
    for name in ("qpos", "error", "success", "iterations", "sample", "min_distance"):
        value = getattr(result, name, None)
        if value is not None:
            arr = np.ascontiguousarray(value)
            h.update(name.encode() + str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    return h.hexdigest()


def _targets(robot, link: str, seed: int, n: int = N):
    """Reachable targets: ``link``'s pose at ``n`` seeded random configurations within the limits."""
    lo, hi = robot.q_limits
    q = np.random.default_rng(seed).uniform(lo, hi, (n, robot.n_qs))
    pos, quat = robot.forward_kinematics(robot.tree.apply_mimic(q))
    i = robot.get_link(link).idx_local
    return pos[:, i].astype(np.float64), quat[:, i].astype(np.float64)


def panda_calls(out: dict) -> None:
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build(n_envs=N)
    hand = panda.get_link("hand")
    pos, quat = _targets(panda, "hand", 1)
    for kernel in ("per_robot", "generic"):
        out[f"panda single {kernel}"] = panda.inverse_kinematics(hand, pos, quat, seed=3, kernel=kernel,
                                                                 return_info=True)
    elbow_pos, _ = _targets(panda, "link4", 1)
    out["panda multilink auto"] = panda.inverse_kinematics_multilink(
        [hand, panda.get_link("link4")], [pos, elbow_pos], [quat, None], seed=5, rot_mask=(False, False, True),
        return_info=True)
    out["panda rest pull"] = panda.inverse_kinematics(hand, pos, quat, seed=7, rest_weight=0.2, return_info=True)
    scene.destroy()


def dual_arm_calls(out: dict) -> None:
    scene = gs.Scene(show_FPS=False)
    dual = scene.add_entity(gs.morphs.MJCF(file="dual_arm"))
    scene.build(n_envs=N)
    right_pos, right_quat = _targets(dual, "right_hand", 2)
    hold = RelativePoseTask("left_hand", "right_hand", np.array([0.0, 0.0, 0.25]), np.array([0.0, 1.0, 0.0, 0.0]))
    for kernel in ("per_robot", "generic"):
        out[f"dual arm closed chain {kernel}"] = dual.solve_ik([hold, PoseTask("right_hand", right_pos, right_quat)],
                                                               seed=4, kernel=kernel)
    scene.destroy()


def talos_calls(out: dict) -> None:
    scene = gs.Scene(show_FPS=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "mimic ignored"
        talos = scene.add_entity(gs.morphs.URDF(file="talos", fixed=True))
    scene.build(n_envs=8)
    q0 = talos.get_qpos()
    pos, quat = talos.forward_kinematics(q0)
    feet = [PoseTask(name, pos[:, talos.get_link(name).idx_local].astype(np.float64),
                     quat[:, talos.get_link(name).idx_local].astype(np.float64))
            for name in ("left_sole_link", "right_sole_link")]
    masses = talos.tree.link_masses
    centres = np.einsum("l,elk->ek", masses, pos[:, :, :3].astype(np.float64)) / masses.sum()  # link origins'
    goal = centres + np.stack([np.linspace(-0.03, 0.03, 8), np.full(8, 0.02), np.zeros(8)], axis=1)
    out["talos feet + com + posture"] = talos.solve_ik(feet + [ComTask(goal), PostureTask(weight=0.05)], seed=0,
                                                       max_solver_iters=40)
    scene.destroy()


def avoidance_calls(out: dict) -> None:
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(size=(0.1, 0.1, 0.3), pos=(0.45, 0.0, 0.45), fixed=True))
    scene.build(n_envs=N)
    hand = panda.get_link("panda_hand")
    pos = np.array([0.45, 0.25, 0.35]) + np.random.default_rng(8).uniform(-0.05, 0.05, (N, 3))
    quat = np.tile([0.0, 1.0, 0.0, 0.0], (N, 1))
    for kernel in ("auto", "generic"):
        out[f"panda avoiding a box {kernel}"] = panda.inverse_kinematics(
            hand, pos, quat, avoid_collisions=True, collision_margin=0.01, seed=9, kernel=kernel, return_info=True)
    scene.destroy()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args(argv)
    arch = gs.init(backend=args.backend, precision="32")
    if arch != args.backend:
        print(f"backend {args.backend!r} did not start (got {arch!r})", file=sys.stderr)
        return 1
    out: dict = {}
    for calls in (panda_calls, dual_arm_calls, talos_calls, avoidance_calls):
        calls(out)
    total = hashlib.sha256()
    for name, result in out.items():
        d = _digest(result)
        total.update(d.encode())
        print(f"{d[:16]}  {name}  (success {np.mean(result.success):.2f})")
    print(f"{total.hexdigest()}  all ({args.backend})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
