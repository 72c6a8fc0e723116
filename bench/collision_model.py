"""How tight and how safe the robot collision models are: over-coverage against the collision
meshes, and conservativeness against Pinocchio + coal.

    python bench/collision_model.py                           # the Panda, every model
    python bench/collision_model.py --robots panda_urdf baxter ur5 --coal 200
    python bench/collision_model.py --all                     # every example-robot-data robot with meshes
    python bench/collision_model.py --all --points 1000       # the same, quicker (fewer points per link)
    python bench/collision_model.py --robots hyq --models "one hull" new   # one hull per link against the pieces
    python bench/collision_model.py --robots hyq --pieces 16 64   # every hulled link cut into K pieces

Models: ``cluster N`` (``collision_model(spheres_per_link=N, hulls=False)``: N spheres per link,
the model before issue 29, default N = 8), ``cover T mm`` (``collision_model(tolerance=T,
hulls=False)``: spheres sunk into the body, standing out of the surface by about T, T = 4 mm),
``one hull`` (the cover's spheres and, near contact, each link's one convex hull: the model
before the pieces) and ``new`` (``collision_model()``, the default: the cover's spheres and, near
contact, each link's pieces, :mod:`engine.collision.pieces`: its one hull where that is tight, else
convex pieces of its surface; a pair's distance is the larger of the two bounds, so a link's
effective solid is its sphere union ∩ the union of its pieces, each grown by its ``radius`` where
it was reduced).

**Over-coverage** of a link (:mod:`_overcoverage`): ``--points`` points spread uniformly (per unit
area) over the boundary of the link's solid -- the union of its spheres, or for ``new`` the union
∩ the hull -- and each point's distance to the link's collision mesh (trimesh, exact
point-to-triangle, unsigned, as the measure before the hulls: a boundary point inside the mesh
counts with its distance to the surface). The mesh is the link's geometry as tessellated
(:func:`engine.collision.spheres.link_mesh` without the primitives' growth). Every link gets the
same number of points, so the robot's mean and max are over its links pooled, each link weighing
the same: how far the model reaches beyond the mesh, i.e. how much clearance it gives away.

Points inside the mesh: the cover's spheres hug the surface, so on a large body their union is
hollow, and the walls of its hollows are boundary too, inside the body, centimetres from the
surface; the unsigned measure counts them although they give no clearance away. A robot whose new
mean exceeds the issue's 5 mm gets its mean with the points inside the mesh at 0 (winding number,
:func:`_overcoverage.inside_zeroed`) and its links listed, worst first.

**Pieces** (``--pieces K ...``): the new model with every hulled link (loose or not) cut into K
surface patches' hulls (:func:`engine.collision.pieces.surface_pieces`, not reduced): what a fixed
K would give, against ``new``'s K chosen per link.

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

import _overcoverage as oc  # noqa: E402
from _common import print_table  # noqa: E402
from _overcoverage import GrownHull, boundary_points, convexity, inside_zeroed, mesh_distance  # noqa: E402
from _surfaces import true_surface  # noqa: E402

from engine.assets import list_robots  # noqa: E402
from engine.collision.geometry import collision_geometry  # noqa: E402
from engine.collision.hulls import link_hulls  # noqa: E402
from engine.collision.pieces import robot_pieces, surface_pieces  # noqa: E402
from engine.collision.spheres import link_mesh, sphere_model  # noqa: E402
from engine.model import load  # noqa: E402
from engine.morphs import URDF  # noqa: E402

# the sphere fit of each model (collision_model's arguments) and whether the checks read the hulls
MODELS = {"cluster 8": dict(spheres_per_link=8, hulls=False), "cluster 32": dict(spheres_per_link=32, hulls=False),
          "cover 4 mm": dict(tolerance=0.004, hulls=False), "one hull": dict(tolerance=0.004, hulls=True),
          "new": dict(tolerance=0.004, hulls=True)}
ONE_HULL = "one hull"  # the model before the pieces: one convex hull per link (its coal check is not available)
DEFAULT_MODELS = ["cluster 8", "cover 4 mm", "new"]
POINTS = 3000  # boundary points per link (--points)
GOAL = 0.005  # m: the mean over-coverage
WORST_LINKS = 6  # links listed for a robot over the goal


def over_coverage(meshes: list, model, pieces: list | None, points: int, seed: int) -> tuple[dict, dict]:
    """``({link: distances (points,)}, {link: (points (points, 3), on_spheres (points,))})``: each
    measured link's boundary points of its solid (link frame, m; :func:`_overcoverage.boundary_points`)
    and their distances (m) to its mesh (``meshes``: ``[n_links]`` trimesh or None). The solid: the
    spheres of ``model`` (:class:`~engine.collision.spheres.SphereModel`), intersected with the
    union of ``pieces[link]`` (a list of :class:`_overcoverage.GrownHull`, or None) where ``pieces``
    is given. Links without a mesh or without spheres are left out."""
    out, samples = {}, {}
    for i, mesh in enumerate(meshes):
        idx = model.of_link(i)
        if mesh is None or not len(idx):
            continue
        rng = np.random.default_rng([seed, i])  # the same points whatever the models measured before
        pts, on_spheres = boundary_points(model.centers[idx], model.radii[idx], pieces[i] if pieces else None,
                                          points, rng)
        out[i], samples[i] = mesh_distance(mesh, pts), (pts, on_spheres)
    return out, samples


def pooled(per_link: dict[int, np.ndarray]) -> tuple[float, float]:
    """(mean, max) in mm over every link's points."""
    d = np.concatenate(list(per_link.values())) if per_link else np.zeros(1)
    return float(d.mean() * 1e3), float(d.max() * 1e3)


def with_meshes() -> list:
    """Every example-robot-data robot of the catalog whose file has collision elements (those that
    fail to load included: the tables report them)."""
    return [e for e in list_robots() if e.source == "example-robot-data"
            and re.search(r"<collision\b", e.path.read_text(errors="ignore"))]


def measure(entry, names: list[str], points: int, seed: int, pieces: tuple = ()) -> dict:
    """One robot: ``{"links": link names, "hulls": [Hull | None], "meshes": [mesh | None],
    model name: {"spheres", "fit_s", "per_link", "samples"}}`` (the last two: :func:`over_coverage`);
    for each K of ``pieces`` also ``"new, K pieces"``: the new model's spheres ∩ the union of K
    surface patches' hulls per hulled link (:func:`engine.collision.pieces.surface_pieces`), with
    ``"n_vertices"``; ``"pieces"``: the new model's pieces per link."""
    morph = URDF(file=str(entry.path), fixed=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tree = load(morph)
        geometry = collision_geometry(tree, morph)
    hulls = link_hulls(geometry)  # each link's one hull (RobotCollision.link_hulls)
    one = [None if h is None else [GrownHull(h.vertices, h.radius)] for h in hulls]
    cut = robot_pieces(tree, geometry)  # as RobotCollision.link_pieces gives the kernels (disk cache)
    grown = [[GrownHull(p.vertices, p.radius) for p in c] or None for c in cut]
    out = {"links": tree.link_names(), "hulls": hulls, "meshes": [true_surface(g) for g in geometry],
           "pieces": [len(c) for c in cut]}
    for name in names:
        fit = MODELS[name]
        t0 = time.perf_counter()
        model = sphere_model(tree, geometry, fit.get("spheres_per_link"), tolerance=fit.get("tolerance"))
        fit_s = time.perf_counter() - t0
        per_link, samples = over_coverage(out["meshes"], model, (one if name == ONE_HULL else grown) if fit["hulls"]
                                          else None, points, seed)
        out[name] = dict(spheres=model.n_spheres, fit_s=fit_s, per_link=per_link, samples=samples)
        print(f"  {entry.name} {name} done", file=sys.stderr, flush=True)
    if pieces:  # the new model's spheres (fitted above when "new" was measured, else read from the disk cache)
        model = sphere_model(tree, geometry, None, tolerance=MODELS["new"]["tolerance"])
        for k in pieces:
            cut = [None if h is None else surface_pieces(link_mesh(g), k) for h, g in zip(hulls, geometry)]
            per_link, samples = over_coverage(out["meshes"], model, [None if c is None else [GrownHull(v) for v in c]
                                                                     for c in cut], points, seed)
            out[f"new, {k} pieces"] = dict(spheres=model.n_spheres, per_link=per_link, samples=samples,
                                           n_vertices=sum(len(v) for c in cut if c for v in c))
            print(f"  {entry.name} {k} pieces done", file=sys.stderr, flush=True)
    return out


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


def outer(got: dict) -> dict[int, np.ndarray]:
    """The new model's per-link distances of the points on its *outer* boundary: those inside the
    mesh (:func:`_overcoverage.enclosed`, the walls of the sphere union's hollows, which the model
    encloses since it holds the whole surface) left out. What the model reaches beyond the mesh."""
    out = {}
    for i, dist in got["new"]["per_link"].items():
        points, on_spheres = got["new"]["samples"][i]
        out[i] = dist[~oc.enclosed(got["meshes"][i], points, dist, on_spheres)]
    return out


def inside_split(got: dict) -> dict[int, tuple[np.ndarray, float]]:
    """The new model's per-link distances with the boundary points inside the mesh set to 0, and
    the share of such points (:func:`_overcoverage.inside_zeroed`): the part of the unsigned
    over-coverage that is the spheres' hollows inside the body, not reach beyond it."""
    out = {}
    for i, dist in got["new"]["per_link"].items():
        points, on_spheres = got["new"]["samples"][i]
        out[i] = inside_zeroed(got["meshes"][i], points, dist, on_spheres)
    return out


def worst_links(name: str, got: dict, split: dict) -> list[list]:
    """Rows of the table of a robot's links, worst new mean first (:data:`WORST_LINKS` of them)."""
    new, cover = got["new"]["per_link"], got.get("cover 4 mm", {}).get("per_link", {})
    rows = []
    for i in sorted(new, key=lambda i: -new[i].mean())[:WORST_LINKS]:
        hull = got["hulls"][i]
        rows.append([name, got["links"][i], f"{new[i].mean() * 1e3:.1f}", f"{new[i].max() * 1e3:.1f}",
                     f"{split[i][1]:.0%}", f"{split[i][0].mean() * 1e3:.1f}",
                     f"{cover[i].mean() * 1e3:.1f}" if i in cover else "-",
                     "-" if hull is None else len(hull.vertices),
                     "-" if hull is None else f"{hull.radius * 1e3:.2f}",
                     convexity(got["meshes"][i])])
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="*", default=["panda_urdf"], help="catalog names (default: the Panda)")
    parser.add_argument("--all", action="store_true", help="every example-robot-data robot with collision meshes")
    parser.add_argument("--models", nargs="*", default=DEFAULT_MODELS, choices=list(MODELS))
    parser.add_argument("--points", type=int, default=POINTS, help=f"boundary points per link (default {POINTS})")
    parser.add_argument("--coal", type=int, default=0, help="random configurations judged by coal (0: none)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pieces", type=int, nargs="*", default=[],
                        help="also the new model with each hulled link cut into K convex pieces (surface patches)")
    args = parser.parse_args(argv)
    entries = with_meshes()
    if not args.all:
        entries = [e for e in entries if e.name in args.robots]
    if args.coal:
        import engine

        engine.init(backend="cpu", precision="32")
    rows, summary, links, cut_rows, failed = [], [], [], [], 0
    t_start = time.perf_counter()
    for entry in entries:
        try:
            got = measure(entry, args.models, args.points, args.seed, tuple(args.pieces))
        except Exception as err:  # a robot that does not load is reported, not fatal
            text = str(err).replace(str(entry.path), entry.path.name).splitlines()
            reason = f"{type(err).__name__}: {text[0] if text else ''}"[:120]
            print(f"  {entry.name} failed: {reason}", file=sys.stderr, flush=True)
            summary.append([entry.name] + ["-"] * (3 + 2 * len(args.models) + ("new" in args.models))
                           + [f"failed: {reason}"])
            failed += 1
            continue
        cells = [entry.name, sum(h is not None for h in got["hulls"]), sum(got["pieces"])]
        for name in args.models:
            m = got[name]
            mean, top = pooled(m["per_link"])
            row = [entry.name, name, m["spheres"], len(m["per_link"]), f"{m['fit_s']:.1f}", f"{mean:.1f}", f"{top:.1f}"]
            if args.coal:
                c = None if name == ONE_HULL else coal_check(entry, MODELS[name], args.coal, args.seed)
                row += ["-"] * 4 if c is None else [c["missed"], f"{c['gap'] * 1e3:.1f}", f"{c['free']:.0%}",
                                                    f"{c['mesh_free']:.0%}"]
            rows.append(row)
            cells += [f"{mean:.1f}", f"{top:.1f}"]
        if "new" in args.models:
            cells.append(f"{pooled(outer(got))[0]:.1f}")
        radii = [h.radius for h in got["hulls"] if h is not None]
        over = "new" in args.models and pooled(got["new"]["per_link"])[0] > GOAL * 1e3
        cells.insert(1, got[args.models[-1]]["spheres"])
        note = [f"hull radius <= {max(radii) * 1e3:.1f} mm"] if radii and max(radii) > 0 else []
        if over:
            split = inside_split(got)
            inner = pooled({i: d for i, (d, _) in split.items()})[0]
            note.append(f"over 5 mm ({inner:.1f} mm with points inside the mesh at 0)")
            links += worst_links(entry.name, got, split)
        summary.append(cells + ["; ".join(note)])
        for k in args.pieces:
            m = got[f"new, {k} pieces"]
            zeroed = {i: inside_zeroed(got["meshes"][i], m["samples"][i][0], d, m["samples"][i][1])[0]
                      for i, d in m["per_link"].items()}
            cut_rows.append([entry.name, k, m["n_vertices"], *(f"{x:.1f}" for x in pooled(m["per_link"])),
                             f"{pooled(zeroed)[0]:.1f}"])
    head = ["robot", "model", "spheres", "links", "fit s", "over mean mm", "over max mm"]
    if args.coal:
        head += [f"missed (of {args.coal})", "gap mm", "free (model)", "free (mesh)"]
    print(f"over-coverage: model boundary to collision mesh, {args.points} points per link, seed {args.seed} "
          f"(fit s: 0.0 when cached)")
    print_table(head, rows)
    print()
    print(f"per robot (mm; spheres: the {args.models[-1]} model's; hulls: links with a hull; pieces: the new model's; "
          f"one hull = cover 4 mm spheres ∩ hull; new = cover 4 mm spheres ∩ pieces)")
    print_table(["robot", "spheres", "hulls", "pieces"] + [f"{n} {s}" for n in args.models for s in ("mean", "max")]
                + (["new outer mean"] if "new" in args.models else []) + ["note"], summary)
    if "new" in args.models:
        done = [r for r in summary if not str(r[-1]).startswith("failed")]
        n_over = sum("over 5 mm" in str(r[-1]) for r in done)
        n_outer = sum(float(r[-2]) > GOAL * 1e3 for r in done)
        print(f"\n{len(done)} robots measured, {failed} failed to load; new mean over {GOAL * 1e3:.0f} mm: {n_over} "
              f"(all boundary points), {n_outer} (outer boundary: points inside the mesh left out)")
    if links:
        print(f"\nlinks of the robots over {GOAL * 1e3:.0f} mm, worst new mean first (mm; inside: the share of the "
              f"new boundary's points inside the mesh, by winding number, and the mean with them at 0; hull: "
              f"vertices, radius; convex: mesh volume / hull volume)")
        print_table(["robot", "link", "new mean", "new max", "inside", "mean, inside 0", "cover mean", "hull verts",
                     "hull r", "convex"], links, left=2)
    if cut_rows:
        print("\nthe new model with each hulled link cut into K convex pieces (mm; beyond: points inside the "
              "mesh at 0; vertices: all pieces' together)")
        print_table(["robot", "K", "vertices", "mean", "max", "mean beyond"], cut_rows)
    print(f"\n{time.perf_counter() - t_start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
