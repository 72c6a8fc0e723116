"""The seed page's batched IK loop with ``scene.visualizer.update()`` every step and no window:
per-step time when every update renders a 1280x720 frame (what ``update()`` did before) against
now, when it renders only for a window or a recording, measured in the same run.

    python bench/genesis_loop.py            # 16 envs, 40 steps each way
    python bench/genesis_loop.py --steps 10 --n-envs 16

Each step: targets on circles (one angular speed per env), one batched ``inverse_kinematics``
call for the hand (rot_mask z only), ``set_qpos``, ``scene.step()``, then the update. "before"
calls ``vis.request_frame().result()`` in place of the update: the render ``update()`` used to
wait for on every call. The IK and the step are the same in both columns; the difference is the
render nobody sees. Genesis without a viewer renders nothing in ``update()`` either.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import engine as gs


def run(n_envs: int, steps: int) -> dict:
    gs.init(backend=gs.cpu, precision="32", logging_level="warning")
    scene = gs.Scene(show_viewer=False)
    robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml"))
    scene.build(n_envs=n_envs, env_spacing=(1.0, 1.0))
    vis = scene.visualizer
    vis.camera.res = (1280, 720)
    rng = np.random.default_rng(0)
    target_quat = np.tile(np.array([0, 1, 0, 0]), [n_envs, 1])
    center = np.tile(np.array([0.4, -0.2, 0.25]), [n_envs, 1])
    angular_speed = rng.uniform(-10, 10, n_envs)
    ee_link = robot.get_link("hand")
    i = 0

    def step(show):
        nonlocal i
        target_pos = center.copy()
        target_pos[:, 0] += np.cos(i / 360 * np.pi * angular_speed) * 0.1
        target_pos[:, 1] += np.sin(i / 360 * np.pi * angular_speed) * 0.1
        q = robot.inverse_kinematics(link=ee_link, pos=target_pos, quat=target_quat, rot_mask=[False, False, True])
        robot.set_qpos(q)
        scene.step()
        t0 = time.perf_counter()
        show()
        i += 1
        return time.perf_counter() - t0

    def timed(show):
        totals, shows = [], []
        for _ in range(steps):
            t0 = time.perf_counter()
            shows.append(step(show))
            totals.append(time.perf_counter() - t0)
        return statistics.median(totals), statistics.median(shows)

    step(lambda: vis.request_frame().result())  # warm-up: IK compile, meshes, GL context
    before = timed(lambda: vis.request_frame().result())
    after = timed(vis.update)
    skipped = vis.skipped_updates
    scene.destroy()
    return {"before": before, "after": after, "skipped": skipped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    out = run(args.n_envs, args.steps)
    print(f"seed page batched loop, {args.n_envs} envs, {args.steps} steps each, CPU backend, 1280x720, no window")
    print(f"{'':32s} {'per step (ms)':>14s} {'of which update (ms)':>21s}")
    for label, key in (("before: every update renders", "before"), ("after: update renders if seen", "after")):
        total, show = out[key]
        print(f"{label:32s} {total * 1e3:14.2f} {show * 1e3:21.3f}")
    print(f"updates that rendered nothing in the 'after' run: {out['skipped']}")


if __name__ == "__main__":
    main()
