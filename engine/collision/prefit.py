"""Fit the catalog robots' collision models into the folder the package ships them in
(:data:`engine.collision.fit_store.SHIPPED`), so that no user waits for a catalog robot's fit:

    python -m engine.collision.prefit                 # every catalog robot with collision geometry
    python -m engine.collision.prefit panda baxter    # these (added to what the folder holds)
    python -m engine.collision.prefit --jobs 2
    python -m engine.collision.prefit --add-missing  # keep the folder's fits, add the files it lacks

Run it after changing the fitting (and bumping ``FIT_VERSION``) or the robot files; a shipped fit
that no longer matches its robot is never read (its key differs), so a stale folder costs time,
never answers. ``tests/test_collision_fit_store.py`` fails while a catalog robot lacks a current
fit. Each robot is fitted in a process of its own (fresh, with an empty cache), with the default
model: the cover fit and its sampled pairs (:class:`engine.collision.robot.RobotCollision`), and its
exact tier's pieces (:mod:`engine.collision.pieces`). ``--add-missing`` reads the folder's current
fits instead of fitting them again, so only the files it lacks are made (after a new kind of file,
such as the pieces, was added to the fit).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _fit_one(name: str, out: str, add_missing: bool = False) -> tuple[str, int, int, float]:
    """Fit catalog robot ``name`` into ``out``/collision with an empty cache and (unless
    ``add_missing``) no shipped fits: ``(name, spheres, pieces, seconds)``."""
    os.environ["IKSTUDIO_CACHE_DIR"] = out
    from . import fit_store

    if not add_missing:
        fit_store.SHIPPED = Path(out) / "none"  # fit afresh: never read the folder being rewritten
    import engine

    engine.init(backend=engine.cpu, logging_level="warning")
    t0 = time.perf_counter()
    model = _model(name)
    n_pieces = sum(len(p) for p in model.link_pieces())
    return name, model.spheres.n_spheres, n_pieces, time.perf_counter() - t0


def _model(name: str):
    """The default collision model of catalog robot ``name``."""
    import engine
    from engine.assets import resolve

    entry = resolve(name)
    morph = engine.morphs.URDF(file=str(entry.path), fixed=True) if entry.format == "urdf" else \
        engine.morphs.MJCF(file=str(entry.path))
    scene = engine.Scene()
    robot = scene.add_entity(morph)
    scene.build()
    try:
        return robot.collision_model()
    finally:
        scene.destroy()


def catalog_names() -> list[str]:
    """Every catalog robot's name."""
    from engine.assets import list_robots

    return [e.name for e in list_robots()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("robots", nargs="*", help="catalog names (default: every catalog robot)")
    parser.add_argument("--jobs", type=int, default=1, help="robots fitted at once (processes)")
    parser.add_argument("--add-missing", action="store_true",
                        help="read the folder's current fits and add only the files it lacks")
    args = parser.parse_args(argv)
    from ..model.errors import ModelLoadError
    from . import fit_store

    os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")  # the workers' banners
    names = args.robots or catalog_names()
    with tempfile.TemporaryDirectory() as tmp:
        failed = []
        with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=multiprocessing.get_context("spawn"),
                                 max_tasks_per_child=1) as pool:
            futures = {name: pool.submit(_fit_one, name, tmp, args.add_missing) for name in names}
            for name, future in futures.items():
                try:
                    _, n, n_pieces, seconds = future.result()
                    print(f"{name}: {n} spheres, {n_pieces} pieces, {seconds:.1f} s", flush=True)
                except ModelLoadError as exc:  # a catalog file no one can load has nothing to fit
                    print(f"{name}: skipped, it does not load: {exc}", flush=True)
                except Exception as exc:  # noqa: BLE001 -- reported and counted; the others carry on
                    failed.append(name)
                    print(f"{name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        if not args.robots and not failed and not args.add_missing:  # the whole catalog refitted: the folder
            # becomes exactly this run's fits
            shutil.rmtree(fit_store.SHIPPED, ignore_errors=True)
        fit_store.SHIPPED.mkdir(parents=True, exist_ok=True)
        made = sorted((Path(tmp) / "collision").glob("*.npz"))
        for path in made:
            shutil.copyfile(path, fit_store.SHIPPED / path.name)
        size = sum(p.stat().st_size for p in fit_store.SHIPPED.glob("*.npz"))
        print(f"{len(made)} files written to {fit_store.SHIPPED} ({size / 1e6:.1f} MB in the folder)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
