"""Cold compile times of the IK solvers: what a first call costs on a machine with an empty cache.

Taichi keeps compiled kernels on disk (its offline cache), so a solver compiles once per machine,
backend and code version; this bench measures that once. Each case runs in a fresh process with an
empty cache of its own (``TI_OFFLINE_CACHE_FILE_PATH`` in a temporary folder): build the scene
(Panda URDF and a table, 16 envs), then time the first ``inverse_kinematics`` call of the hand,
which compiles its solver (the per-robot or the generic one, with or without collision avoidance),
and a second call, which does not. Run ``python bench/compile.py [--backend cpu|vulkan|cuda]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from _common import print_table  # noqa: E402

CASES = [("per_robot", False), ("per_robot", True), ("generic", False), ("generic", True)]

PROBE = """
import json, sys, time
import numpy as np
import engine as gs
from engine.errors import InvalidValueError
gs.init(backend=sys.argv[1], precision="32")
scene = gs.Scene()
panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
scene.add_entity(gs.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
scene.build(n_envs=16)
hand = panda.get_link("panda_hand")
pos, quat = np.tile([0.45, 0.1, 0.45], (16, 1)), np.tile([0.0, 1.0, 0.0, 0.0], (16, 1))
call = dict(seed=0, return_info=True, kernel=sys.argv[2], avoid_collisions=sys.argv[3] == "1")
times = []
for _ in range(2):
    t0 = time.perf_counter()
    try:
        r = panda.inverse_kinematics(hand, pos, quat, **call)
    except InvalidValueError as err:  # a solver this device does not run (lavapipe: per-robot avoiding)
        print("REFUSED " + json.dumps(str(err)))
        sys.exit(0)
    times.append(time.perf_counter() - t0)
print("RESULT " + json.dumps({"first": times[0], "second": times[1], "ok": float(r.success.mean())}))
"""


def cold(backend: str, kernel: str, avoid: bool) -> dict:
    """One case in a fresh process with an empty taichi cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=cache, ENABLE_TAICHI_HEADER_PRINT="0",
                   PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
        proc = subprocess.run([sys.executable, "-c", PROBE, backend, kernel, str(int(avoid))], env=env,
                              capture_output=True, text=True, timeout=1800)
    refused = [line for line in proc.stdout.splitlines() if line.startswith("REFUSED ")]
    if refused:
        return {"refused": json.loads(refused[-1][len("REFUSED "):])}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{kernel} avoid={avoid} failed:\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    args = parser.parse_args(argv)
    rows = []
    for kernel, avoid in CASES:
        r = cold(args.backend, kernel, avoid)
        if "refused" in r:
            rows.append([kernel, "yes" if avoid else "no", "refused", "", ""])
            print(f"  {kernel}, avoid={avoid} refused: {r['refused']}", file=sys.stderr, flush=True)
            continue
        rows.append([kernel, "yes" if avoid else "no", f"{r['first']:.1f}", f"{1e3 * r['second']:.2f}",
                     f"{100 * r['ok']:.0f}%"])
        print(f"  {kernel}, avoid={avoid} done", file=sys.stderr, flush=True)
    print(f"cold compile, Panda + a table, 16 envs, backend {args.backend}; each case in a fresh process, empty cache")
    print_table(["solver", "avoid", "first call s", "second call ms", "solved"], rows)


if __name__ == "__main__":
    main()
