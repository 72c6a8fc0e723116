"""Robot load times: file -> KinematicTree, then with every visual's mesh loaded too.

    python bench/load.py [--repeat N] [robot ...]

Default robots: the Panda from each source (our MJCF ``panda``, example-robot-data's URDF
``panda_urdf``) and the largest catalog robot, ``tiago_dual``. Times are the median of
``--repeat`` runs, each a fresh load (meshes are cached per loaded tree, never across loads).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")  # engine imports taichi

from engine import assets, model, morphs  # noqa: E402

DEFAULT_ROBOTS = ("panda", "panda_urdf", "tiago_dual")


def _morph(entry):
    return morphs.URDF(file=entry.path, fixed=True) if entry.format == "urdf" else morphs.MJCF(file=entry.path)


def _load(entry, meshes: bool):
    tree = model.load(_morph(entry))
    if meshes:
        for link in tree.links:
            for visual in link.visuals:
                visual.mesh  # noqa: B018  (the cached property loads the mesh)
    return tree


def _median_ms(entry, meshes: bool, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        _load(entry, meshes)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("robots", nargs="*", default=list(DEFAULT_ROBOTS), help="catalog names or robot files")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is printed")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: expected a positive integer")

    header = f"{'robot':<14} {'format':<6} {'source':<18} {'links':>5} {'dofs':>4} {'visuals':>7} " \
             f"{'load ms':>9} {'+meshes ms':>10}"
    print(f"median of {args.repeat} run(s) per figure")
    print(header)
    print("-" * len(header))
    for name in args.robots:
        entry = assets.resolve(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # e.g. a mimic the engine ignores
            _load(entry, meshes=True)  # warm-up: imports, the file system cache
            tree = _load(entry, meshes=False)
            n_visuals = sum(len(link.visuals) for link in tree.links)
            plain = _median_ms(entry, False, args.repeat)
            with_meshes = _median_ms(entry, True, args.repeat)
        print(f"{entry.name:<14} {entry.format:<6} {entry.source:<18} {tree.n_links:>5} {tree.n_dofs:>4} "
              f"{n_visuals:>7} {plain:>9.1f} {with_meshes:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
