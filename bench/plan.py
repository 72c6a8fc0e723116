"""Batched motion planning (``plan_path``): time per batch and success, at 1, 16 and 256 envs.

    python bench/plan.py                      # n_envs 1, 16, 256
    python bench/plan.py --sizes 16 1024      # other batch sizes
    python bench/plan.py --backend vulkan
    python bench/plan.py --genesis-python /work/gsvenv/bin/python   # and Genesis on the same problems

The scene: the Panda (example-robot-data URDF, fixed base) among a table, a pillar, a ball, an
overhead bar and a crate (the clutter of tests/test_ik_collision.py). Each env plans from one
random collision-free configuration to another (seeded; the sphere model says both are free),
RRT-Connect with Genesis' defaults (max_nodes 2000, resolution 0.05, smoothing on) and
``num_waypoints=100``, every returned segment certified. A warm-up call at each size compiles the
kernels; the figure is one timed call (``--repeats`` more give the median). "success" is the
share of envs with a valid path; "nodes" the mean tree size (both trees); "length" the mean
joint-space length of the valid paths (rad).

Comparison: Genesis 1.4.5's ``plan_path`` on the same problems when ``genesis-world`` (an optional
benchmark dependency) is installed, in this interpreter or in the one ``--genesis-python`` (or
``$GENESIS_PYTHON``) names: bench/plan_genesis.py runs there as a child process, at
``--genesis-sizes`` (default 1 and 16: Genesis takes tens of seconds per 16-env batch on a CPU),
on the same robot file, clutter and start / goal pairs, Genesis' defaults with
``num_waypoints=100``, batched over envs as Genesis does (one scene with ``n_envs``). Genesis'
valid share is its own mask (it checks collisions only at points sampled at ``resolution``); both
planners' valid paths are then judged at mesh level along every segment (Pinocchio + coal,
tests/_plan_judge.py; ``--no-judge`` skips it) and the table shows how many are really free.
See bench/_genesis_compare.py.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

CLUTTER = (
    ("box", dict(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3))),
    ("cylinder", dict(pos=(0.45, 0.25, 0.45), radius=0.04, height=0.3)),
    ("sphere", dict(pos=(0.5, -0.25, 0.38), radius=0.07)),
    ("box", dict(pos=(0.45, 0.0, 0.85), size=(0.06, 0.9, 0.06))),
    ("box", dict(pos=(0.7, 0.0, 0.4), size=(0.14, 0.2, 0.2))),
)


def build(gs, n_envs):
    morphs = {"box": gs.morphs.Box, "cylinder": gs.morphs.Cylinder, "sphere": gs.morphs.Sphere}
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    for kind, kw in CLUTTER:
        scene.add_entity(morphs[kind](fixed=True, **kw))
    scene.build(n_envs=n_envs)
    return panda


def problems(panda, n, seed=0):
    from engine.collision.robot import sample_qpos

    kept, k, B = [], 0, panda.configuration.n_envs
    chunk = B * max(1, 256 // B)
    while len(kept) < 2 * n:
        q = sample_qpos(panda.tree, chunk, seed=seed + k)
        free = np.concatenate([~panda.in_collision(q[i:i + B] if B > 1 else q[i]).reshape(-1)
                               for i in range(0, chunk, B)])
        kept.extend(q[free])
        k += 1
    q = np.array(kept[:2 * n])
    return q[:n], q[n:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 256])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--genesis-python", help="an interpreter with genesis-world (default: $GENESIS_PYTHON, "
                                             "else this one if it has it)")
    ap.add_argument("--genesis-sizes", type=int, nargs="+", default=[1, 16],
                    help="the sizes (of --sizes) Genesis also plans (default 1 16)")
    ap.add_argument("--genesis-timeout", type=float, default=900.0, help="s for Genesis' whole run")
    ap.add_argument("--judge", action=argparse.BooleanOptionalAction, default=True,
                    help="judge both planners' valid paths at mesh level (Genesis' sizes only)")
    args = ap.parse_args()

    import engine as gs

    arch = gs.init(backend=args.backend, precision="32", seed=0)
    print(f"backend: {arch} ({arch.device}){' [software device: relative figures only]' if arch.software else ''}")
    print(f"{'n_envs':>7} {'s/batch':>9} {'first s':>8} {'paths/s':>8} {'success':>8} {'nodes':>7} {'length':>7}")
    kept = {}  # n -> this size's problems and our answers, for Genesis' sizes
    for n in args.sizes:
        panda = build(gs, n)
        start, goal = problems(panda, n, seed=100)
        t0 = time.perf_counter()
        panda.plan_path(goal, qpos_start=start, num_waypoints=100, seed=1)
        first = time.perf_counter() - t0
        times, res = [], None
        for r in range(args.repeats):
            t0 = time.perf_counter()
            res = panda.plan_path(goal, qpos_start=start, num_waypoints=100, seed=2 + r, return_info=True)
            times.append(time.perf_counter() - t0)
        t = statistics.median(times)
        valid = np.atleast_1d(res.valid)
        print(f"{n:>7} {t:>9.2f} {first:>8.2f} {n / t:>8.1f} {valid.mean():>8.1%} "
              f"{np.mean(res.nodes):>7.0f} {np.mean(np.atleast_1d(res.length)[valid]):>7.2f}")
        if n in args.genesis_sizes:
            kept[n] = dict(start=start, goal=goal, path=res.path.reshape(100, n, -1), valid=valid, seconds=t,
                           robot=panda)
    compare_genesis(args, kept)


def compare_genesis(args, kept: dict) -> None:
    """Genesis' ``plan_path`` on the problems in ``kept`` ``{n: dict(start, goal (n, n_qs) rad / m; our path
    (100, n, n_qs), valid (n,), seconds per batch, robot)}`` (bench/_genesis_compare.py), and the table."""
    import _genesis_compare as gc

    python = gc.genesis_python(args.genesis_python)
    if python is None:
        print("genesis-world is not installed (nor --genesis-python / $GENESIS_PYTHON given): "
              "no comparison with Genesis' plan_path")
        return
    if not kept:
        print(f"--genesis-sizes {args.genesis_sizes}: none of them is in --sizes {args.sizes}; no comparison")
        return
    robot = next(iter(kept.values()))["robot"]
    log = Path(tempfile.gettempdir()) / "bench_plan_genesis.log"
    print(f"\nGenesis' plan_path ({python}, CPU backend, its defaults, num_waypoints=100) "
          f"at n_envs {sorted(kept)} on the same problems; its log: {log}")
    pairs = {n: (k["start"], k["goal"]) for n, k in kept.items()}
    rows, paths = gc.run_genesis(python, robot, CLUTTER, pairs, num_waypoints=100, repeats=args.repeats,
                                 timeout_s=args.genesis_timeout, log=log)
    judged = {}
    if args.judge:
        for n, k in kept.items():
            for who, (p, v) in (("ours", (k["path"], k["valid"])), ("genesis", paths[n])):
                j = judged[(who, n)] = gc.judge_free(k["robot"], CLUTTER, p, v, k["start"], k["goal"])
                print(f"  mesh-level judge, {who}, n_envs {n}: of {j['valid']} valid paths {j['free']} free, "
                      f"{j['at_waypoint']} colliding at a waypoint, {j['between']} only between waypoints; "
                      f"{j['ends_off']} off their start / goal ({j['seconds']:.0f} s)")
    print(gc.table({n: (k["seconds"], k["valid"].mean()) for n, k in kept.items()}, rows, judged))
    print("ours / GS s: s per batch (median of --repeats warm calls); GS first: Genesis' first call "
          "(its compiles); GS build: scene.build; ratio: our paths/s over Genesis'; ok: each planner's "
          "own valid share; mesh-free: valid paths free at mesh level along every segment.")


if __name__ == "__main__":
    main()
