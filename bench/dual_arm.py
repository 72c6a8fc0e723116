"""Collision-aware IK of two arms that must avoid each other: how often it solves, per restart budget.

Scene and targets: tests/_dual_arm.py (Baxter, both grippers on targets less than 35 cm apart
from mirrored arm configurations the collision model calls collision-free). For each set of targets
(``--sets``, each from its own seed) and each ``max_samples``, ``inverse_kinematics_multilink``
solves them plain and with ``avoid_collisions=True``. Columns: the success share, the share of
answers reporting success while in collision (the collision model: spheres, and near contact
the links' hulls, which bound the meshes; for the avoiding solver this is its false-success rate
at mesh level too) and seconds per call (the
first call of each mode compiles and is not timed). Run ``python bench/dual_arm.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]  # a checkout, not installed
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

from _common import fmt_pct, print_table  # noqa: E402
from _dual_arm import GRIPPERS, baxter_scene, close_hand_targets  # noqa: E402

import engine  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--targets", type=int, default=400, help="targets per set (default 400)")
    parser.add_argument("--sets", type=int, nargs="*", default=[100, 300, 500, 900],
                        help="the target sets' seeds (default 100 300 500 900)")
    parser.add_argument("--max-samples", type=int, nargs="*", default=[50, 100], help="restart budgets")
    args = parser.parse_args(argv)
    engine.init(backend=args.backend, precision="32")
    _, baxter, removed = baxter_scene(max(args.targets, 256))
    links = [baxter.get_link(name) for name in GRIPPERS]
    n = args.targets
    print(f"Baxter, both grippers on targets < 35 cm apart; {len(removed)} pairs overlapping at rest not counted; "
          f"{n} targets a set; backend {engine.runtime.backend.current().describe()}")
    rows, warm = [], set()
    for seed in args.sets:
        poss, quats, _ = close_hand_targets(baxter, n, seed=seed)
        for max_samples in args.max_samples:
            row = [seed, max_samples]
            for avoid in (False, True):
                call = dict(poss=poss, quats=quats, seed=6, return_info=True, envs_idx=np.arange(n),
                            max_samples=max_samples, avoid_collisions=avoid)
                if (avoid, max_samples) not in warm:  # compile first: not timed
                    baxter.inverse_kinematics_multilink(links, **call)
                    warm.add((avoid, max_samples))
                t0 = time.perf_counter()
                r = baxter.inverse_kinematics_multilink(links, **call)
                seconds = time.perf_counter() - t0
                false = r.success & baxter.in_collision(r.qpos, envs_idx=np.arange(n))
                row += [fmt_pct(r.success.mean()), fmt_pct(false.mean()), f"{seconds:.3f}"]
            rows.append(row)
            print(f"  set {seed}, max_samples {max_samples} done", file=sys.stderr, flush=True)
    print_table(["set", "max_samples", "plain ok", "plain coll", "plain s", "avoid ok", "avoid coll", "avoid s"], rows,
                left=0)
    print("ok: the solver's success; coll: answers reporting success while in collision (collision model)")


if __name__ == "__main__":
    main()
