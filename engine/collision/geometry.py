"""Collision geometry of a robot file, per link, in the link's body frame (plain numpy).

The loaders in :mod:`.urdf` and :mod:`.mjcf` keep visuals only; this module reads the collision
geometry of the same file on demand (only the collision model needs it):

* URDF: each link's ``<collision>`` elements (box, sphere, cylinder, mesh; ``package://`` URIs
  resolved like the visuals').
* MJCF: the geoms of the collision group, those with ``contype`` or ``conaffinity`` nonzero (the
  complement of what :mod:`.mjcf` draws when the file separates the two).

A link without collision geometry falls back to its visuals. Each geometry is a
:class:`~engine.model.tree.Visual` (same kinds, sizes and frames), so ``geom.mesh`` gives its
trimesh. A number that is not finite, a primitive's size that is not positive or a mesh scale of 0 is a
:class:`ModelLoadError` naming the file and the link.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..model.errors import ModelLoadError
from ..model.tree import MAX_MODEL_NUMBER, Visual

GREY = np.array([0.6, 0.6, 0.65, 1.0])


def collision_geometry(tree, morph) -> list[list[Visual]]:
    """The collision geometries of every link of ``tree`` (loaded from ``morph``), in link order:
    ``[n_links]`` lists of :class:`Visual`, each posed in its link's body frame (m).

    ``morph``: the URDF / MJCF morph the tree came from (its ``scale`` applies); for a single-body
    morph (Box, Sphere, Mesh, ...) its shape is the collision geometry (drawn or not)."""
    from ..morphs import MJCF, URDF, Shape

    if isinstance(morph, URDF):
        per_link = _urdf(Path(morph.file), tree, float(morph.scale))
    elif isinstance(morph, MJCF):
        per_link = _mjcf(Path(morph.file), tree, float(morph.scale))
    elif isinstance(morph, Shape):
        from ..model.shapes import shape_visuals

        per_link = [shape_visuals(morph)]
    else:
        per_link = [[] for _ in tree.links]
    out = []
    for link, geoms in zip(tree.links, per_link):
        geoms = geoms if geoms else list(link.visuals)
        for geom in geoms:
            _check(geom, tree.source, link.name)
        out.append(geoms)
    return out


def mesh_files(geometry: list[list[Visual]]) -> list[Path]:
    """The mesh files the geometry reads, in order, without duplicates (for cache keys)."""
    files = [Path(g.mesh_file) for geoms in geometry for g in geoms if g.kind == "mesh" and g.mesh_file]
    return list(dict.fromkeys(files))


def _check(geom: Visual, source, link: str) -> None:
    where = f"{source}: link '{link}': a {geom.kind} collision geometry"
    for name, value in (("pose", np.concatenate([np.ravel(geom.pos), np.ravel(geom.quat)])), ("size", geom.size)):
        arr = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(arr)) or np.abs(arr).max(initial=0) > MAX_MODEL_NUMBER:
            raise ModelLoadError(f"{where}: its {name} is not finite: {arr.tolist()}")
    size = np.asarray(geom.size, dtype=float)
    if geom.kind == "mesh" and np.any(size == 0):  # a negative mesh scale mirrors it: allowed
        raise ModelLoadError(f"{where}: scale {size.tolist()}; expected every entry nonzero")
    if geom.kind != "mesh" and np.any(size <= 0):
        raise ModelLoadError(f"{where}: size {size.tolist()}; expected every entry > 0")
    if np.linalg.norm(geom.quat) < 1e-9:
        raise ModelLoadError(f"{where}: zero orientation quaternion")


def _urdf(path: Path, tree, scale: float) -> list[list[Visual]]:
    from ..assets import resolve_package_uri
    from ..model.urdf import origin_pose, parse_urdf

    robot = parse_urdf(path)
    by_name = {link.name: link for link in robot.links}
    out = []
    for link in tree.links:
        geoms = []
        for col in getattr(by_name.get(link.name), "collisions", None) or []:
            pos, quat = origin_pose(col.origin)
            pos = pos * scale
            g = col.geometry
            if g is None:
                continue
            try:
                if g.box is not None:
                    geoms.append(Visual("box", np.asarray(g.box.size, float) * scale, pos, quat, GREY.copy()))
                elif g.sphere is not None:
                    geoms.append(Visual("sphere", np.array([float(g.sphere.radius)]) * scale, pos, quat, GREY.copy()))
                elif g.cylinder is not None:
                    geoms.append(Visual("cylinder", np.array([float(g.cylinder.radius), float(g.cylinder.length)])
                                        * scale, pos, quat, GREY.copy()))
                elif g.mesh is not None:
                    file = resolve_package_uri(g.mesh.filename, path)
                    if file is None:
                        warnings.warn(f"{path}: link '{link.name}': collision mesh file not found: "
                                      f"'{g.mesh.filename}'; the link's collision model skips it",
                                      RuntimeWarning, stacklevel=4)
                        continue
                    mesh_scale = np.ones(3) if g.mesh.scale is None else np.broadcast_to(
                        np.asarray(g.mesh.scale, float), (3,)).copy()
                    geoms.append(Visual("mesh", mesh_scale * scale, pos, quat, GREY.copy(), mesh_file=file))
            except (TypeError, ValueError) as err:  # a size that is not a number
                raise ModelLoadError(f"{path}: link '{link.name}': bad collision geometry: {err}") from None
        out.append(geoms)
    return out


def _mjcf(path: Path, tree, scale: float) -> list[list[Visual]]:
    from ..model.mjcf import compile_mjcf, geom_visual

    model = compile_mjcf(path)
    colliding = (model.geom_contype != 0) | (model.geom_conaffinity != 0)
    out = []
    for b in range(1, model.nbody):  # the loader keeps every body but the world, in order
        geoms = [g for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])
                 if colliding[g]]
        out.append([v for v in (geom_visual(model, g, scale) for g in geoms) if v is not None])
    if len(out) != len(tree.links):
        raise ModelLoadError(f"{path}: {len(out)} bodies but the tree has {len(tree.links)} links")
    return out
