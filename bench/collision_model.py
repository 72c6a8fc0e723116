"""How tight and how safe the robot collision models are: over-coverage against the collision
meshes, and conservativeness against Pinocchio + coal.

    python bench/collision_model.py                           # the Panda, every model
    python bench/collision_model.py --robots panda_urdf baxter ur5 --coal 200
    python bench/collision_model.py --all                     # every example-robot-data robot with meshes

Models: ``cluster N`` (``collision_model(spheres_per_link=N)``: N spheres per link, the model
before issue 29, default N = 8) and ``cover T mm`` (``collision_model(tolerance=T)``: spheres sunk
into the body, standing out of the surface by about T; the default model, T = 4 mm).

**Over-coverage** of a link: points spread uniformly over the outer boundary of the union of its
spheres (points of each sphere's surface, area-weighted, that lie in no other sphere of the link),
and each point's distance to the link's collision mesh (trimesh, exact point-to-triangle).
Mean and max over every link of the robot, area-weighted: how far the model reaches beyond the
mesh, i.e. how much clearance it gives away.

**Conservativeness** (``--coal N``, robots with an SRDF, loaded by Pinocchio): N seeded random
configurations; coal's mesh collisions and distances over the same counted pairs (the SRDF's
pairs removed) against the model's self-collision distance. "missed" counts configurations that
collide at mesh level and yet read free: it must be 0. "gap" is the mean of mesh distance minus
model distance over the configurations the model reads free (the pair-level price of the
over-coverage); "free" the share read free by the model and by coal.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]  # tests/: the coal reference
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

from _common import print_table  # noqa: E402

from engine.assets import list_robots  # noqa: E402
from engine.collision.geometry import collision_geometry  # noqa: E402
from engine.collision.spheres import link_mesh, sphere_model  # noqa: E402
from engine.model import load  # noqa: E402
from engine.morphs import URDF  # noqa: E402

MODELS = {"cluster 8": dict(spheres_per_link=8), "cluster 32": dict(spheres_per_link=32),
          "cover 4 mm": dict(spheres_per_link=None, tolerance=0.004)}
POINTS = 3000  # boundary points per link


def boundary_points(centres: np.ndarray, radii: np.ndarray, n: int, rng) -> np.ndarray:
    """Points ``(<= n, 3)`` spread uniformly over the outer boundary of the union of the spheres."""
    pick = rng.choice(len(radii), n, p=radii ** 2 / (radii ** 2).sum())
    u = rng.normal(size=(n, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    pts = centres[pick] + u * radii[pick, None]
    inside = np.linalg.norm(pts[:, None] - centres[None], axis=-1) < radii[None] * (1 - 1e-9)
    inside[np.arange(n), pick] = False
    return pts[~inside.any(1)]


def over_coverage(tree, geometry, model, seed: int = 0) -> np.ndarray:
    """Distances (m) of the model's boundary points to the link meshes, every link pooled."""
    import trimesh

    rng = np.random.default_rng(seed)
    out = []
    for i, geoms in enumerate(geometry):
        idx = model.of_link(i)
        mesh = link_mesh(geoms, grow=False)
        if mesh is None or not len(idx):
            continue
        pts = boundary_points(model.centers[idx], model.radii[idx], POINTS, rng)
        out.append(trimesh.proximity.closest_point(mesh, pts)[1])
    return np.concatenate(out) if out else np.zeros(0)


def with_meshes() -> list:
    return [e for e in list_robots() if e.source == "example-robot-data" and e.name != "falcon"
            and re.search(r"<collision\b", e.path.read_text(errors="ignore"))]


def coal_check(entry, fit: dict, n: int, seed: int) -> dict | None:
    """Missed collisions, mean gap and free shares of ``n`` random configurations (None: no SRDF)."""
    import pinocchio as pin
    from _coal import pin_coal

    import engine
    from engine.collision.robot import sample_qpos
    from engine.model.srdf import find_srdf

    if find_srdf(entry.path) is None:
        return None
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.URDF(file=str(entry.path), fixed=True))
    scene.build(n_envs=n)
    robot.collision_model(**{k: v for k, v in fit.items() if v is not None})
    qpos = sample_qpos(robot.tree, n, seed)
    dist = np.asarray(robot.collision_distance(qpos, world=False), float)
    ref, geom = pin_coal(robot.tree)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    mesh_dist, mesh_hit = np.empty(n), np.zeros(n, bool)
    for i, q in enumerate(qpos):
        pq = ref.pin_q(q)
        pin.computeDistances(ref.model, data, geom, gdata, pq)
        mesh_dist[i] = min((r.min_distance for r in gdata.distanceResults), default=np.inf)
        pin.computeCollisions(ref.model, data, geom, gdata, pq, False)
        mesh_hit[i] = any(r.isCollision() for r in gdata.collisionResults)
    scene.destroy()
    free = dist > 0
    return dict(missed=int((free & mesh_hit).sum()), gap=float(np.mean(mesh_dist[free] - dist[free])) if free.any()
                else float("nan"), free=float(free.mean()), mesh_free=float((~mesh_hit).mean()))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="*", default=["panda_urdf"], help="catalog names (default: the Panda)")
    parser.add_argument("--all", action="store_true", help="every example-robot-data robot with collision meshes")
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--coal", type=int, default=0, help="random configurations judged by coal (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    entries = with_meshes()
    if not args.all:
        entries = [e for e in entries if e.name in args.robots]
    if args.coal:
        import engine

        engine.init(backend="cpu", precision="32")
    rows = []
    for entry in entries:
        morph = URDF(file=str(entry.path), fixed=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tree = load(morph)
            geometry = collision_geometry(tree, morph)
        for name in args.models:
            fit = MODELS[name]
            t0 = time.perf_counter()
            model = sphere_model(tree, geometry, fit["spheres_per_link"], tolerance=fit.get("tolerance"))
            fit_s = time.perf_counter() - t0
            d = over_coverage(tree, geometry, model, args.seed)
            row = [entry.name, name, model.n_spheres, f"{fit_s:.1f}", f"{d.mean() * 1e3:.1f}", f"{d.max() * 1e3:.1f}"]
            if args.coal:
                c = coal_check(entry, fit, args.coal, args.seed)
                row += ["-"] * 4 if c is None else [c["missed"], f"{c['gap'] * 1e3:.1f}", f"{c['free']:.0%}",
                                                    f"{c['mesh_free']:.0%}"]
            rows.append(row)
            print(f"  {entry.name} {name} done", file=sys.stderr, flush=True)
    head = ["robot", "model", "spheres", "fit s", "over mean mm", "over max mm"]
    if args.coal:
        head += [f"missed (of {args.coal})", "gap mm", "free (model)", "free (mesh)"]
    print("over-coverage: model boundary to collision mesh (fit s: 0.0 when cached)")
    print_table(head, rows)


if __name__ == "__main__":
    main()
