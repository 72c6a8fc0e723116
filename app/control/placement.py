"""Where a robot loaded from the catalog (or a file) goes: on the floor, and far enough from its
neighbours. Computed from public engine calls (the robot's tree, its link poses) and the visual
meshes the renderer draws anyway.

* :func:`lift_to_floor`: how far up to move the base so that the lowest point of the robot's
  geometry at its default pose is at z = 0 (a humanoid whose base is its pelvis loads with its
  legs below the floor); robots already above the floor are not lowered.
* :func:`reach`: how far the robot's geometry gets from its base horizontally, over random
  configurations within its joint limits (forward kinematics).
* :func:`env_spacing`: the spacing of the env grid: reach plus the default pose's footprint plus a
  margin, so that a robot reaching toward a neighbour in its default pose stops short of it.
"""

from __future__ import annotations

import math

import numpy as np

from engine.transforms import quat_to_matrix

SPACING_MARGIN_M = 0.1
MIN_SPACING_M = 0.5


def _visual_points(visual) -> np.ndarray:
    """(N, 3) points of one visual in its link's frame (its mesh vertices; none if unreadable)."""
    mesh = visual.mesh
    if mesh is None or len(mesh.vertices) == 0:
        return np.zeros((0, 3))
    pts = np.asarray(mesh.vertices, float)
    return pts @ quat_to_matrix(np.asarray(visual.quat, float)).T + np.asarray(visual.pos, float)


def geometry_points(tree, links_pos, links_quat) -> np.ndarray:
    """(N, 3) points of the robot's visual geometry (link origins included) for one env's link poses."""
    out = [np.asarray(links_pos, float)]
    for link in tree.links:
        for visual in link.visuals:
            pts = _visual_points(visual)
            if len(pts):
                out.append(pts @ quat_to_matrix(np.asarray(links_quat[link.idx], float)).T + links_pos[link.idx])
    return np.concatenate(out)


def lift_to_floor(tree, links_pos, links_quat) -> float:
    """Metres to raise the base so the robot's lowest point is on the floor (0 if it is not below)."""
    low = float(geometry_points(tree, links_pos, links_quat)[:, 2].min())
    return max(0.0, -low)


def _link_points(tree, per_link: int = 96) -> list[np.ndarray]:
    """Per link, up to ``per_link`` points of its geometry's convex hull in the link's frame (its
    origin included): enough to measure how far it reaches."""
    out = []
    for link in tree.links:
        pts = np.concatenate([np.zeros((1, 3))] + [_visual_points(v) for v in link.visuals])
        if len(pts) > per_link:
            try:
                import trimesh

                pts = np.asarray(trimesh.points.PointCloud(pts).convex_hull.vertices, float)
            except Exception:  # a flat or degenerate cloud: keep a spread of its points
                pass
            if len(pts) > per_link:
                pts = pts[np.linspace(0, len(pts) - 1, per_link).astype(int)]
        out.append(pts)
    return out


class _Geometry:
    """The robot's hull points, all links' in one array (``points`` (M, 3), ``link`` (M,))."""

    def __init__(self, tree):
        per_link = _link_points(tree)
        self.points = np.concatenate(per_link)
        self.link = np.concatenate([np.full(len(p), i) for i, p in enumerate(per_link)])

    def footprint(self, links_pos, links_quat) -> float:
        pos, rot = np.asarray(links_pos, float), quat_to_matrix(np.asarray(links_quat, float))
        world = np.einsum("mij,mj->mi", rot[self.link], self.points) + pos[self.link] - pos[0]
        return float(np.linalg.norm(world[:, :2], axis=1).max())


def footprint(tree, links_pos, links_quat) -> float:
    """Horizontal radius (m) of the robot's geometry around its base at one pose."""
    return _Geometry(tree).footprint(links_pos, links_quat)


def reach(robot, samples: int = 64, seed: int = 0, geometry: _Geometry | None = None) -> float:
    """How far (m, horizontally) the robot's geometry gets from its base: the largest footprint over
    ``samples`` random configurations within the joint limits (1-dof joints; a floating base stays
    put), by forward kinematics."""
    tree = robot.tree
    geometry = geometry or _Geometry(tree)
    rng = np.random.default_rng(seed)
    q0 = np.asarray(tree.default_qpos, float)
    best = 0.0
    for k in range(samples + 1):
        q = q0.copy()
        for joint in tree.joints if k else ():
            if joint.n_qs == 1:
                span = math.pi if joint.type in ("revolute", "continuous") else 0.5
                lo = joint.lower if np.isfinite(joint.lower) else -span
                hi = joint.upper if np.isfinite(joint.upper) else span
                q[joint.q_start] = rng.uniform(lo, hi)
        pos, quat = robot.forward_kinematics(q)  # one configuration, for every env of the robot's scene
        n = robot.n_links
        best = max(best, geometry.footprint(np.reshape(pos, (-1, n, 3))[0], np.reshape(quat, (-1, n, 4))[0]))
    return best


def env_spacing(robot, links_pos, links_quat) -> float:
    """The env grid's spacing (m, both axes): the robot's reach plus its footprint at the default
    pose plus a margin, so that a robot reaching toward its neighbour stops short of it; rounded up
    to 0.1 m, at least MIN_SPACING_M."""
    geometry = _Geometry(robot.tree)
    need = reach(robot, geometry=geometry) + geometry.footprint(links_pos, links_quat) + SPACING_MARGIN_M
    return max(MIN_SPACING_M, math.ceil(need * 10.0 - 1e-9) / 10.0)
