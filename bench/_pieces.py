"""A link's surface cut into ``k`` patches, each patch's convex hull a piece: what a convex
decomposition per link would give the checks (used by ``bench/collision_model.py --pieces``).

The union of the pieces holds the link's surface exactly: every triangle lies in one patch, so in
that patch's hull (a hull is convex). Triangles longer than the patches' expected size are split
first, so that one long triangle does not stretch a patch across the body. Patches are k-means
clusters (scipy, seeded) of the triangles' centroids. A patch too flat for qhull keeps its points
with a 1 micrometre thickness either side along its mean normal (still holding its triangles).
"""

from __future__ import annotations

import numpy as np

THICKNESS = 1e-6  # m: half the thickness given to a flat patch


def surface_pieces(mesh, k: int, seed: int = 0) -> list[np.ndarray]:
    """``[(n_i, 3)]``: the vertices (link frame, m) of the convex hulls of ``k`` patches of the
    trimesh ``mesh`` (fewer where clusters come out empty)."""
    import trimesh
    from scipy.cluster.vq import kmeans2

    extent = float(np.linalg.norm(mesh.bounds[1] - mesh.bounds[0]))
    v, f = trimesh.remesh.subdivide_to_size(mesh.vertices, mesh.faces, max_edge=extent / (2 * np.sqrt(k)),
                                            max_iter=20)
    tri = np.asarray(v, float)[np.asarray(f)]  # (F, 3, 3)
    _, label = kmeans2(tri.mean(axis=1), k, seed=seed, minit="++")
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    pieces = []
    for j in range(k):
        own = label == j
        if not own.any():
            continue
        points = np.unique(tri[own].reshape(-1, 3), axis=0)
        try:
            hull = trimesh.convex.convex_hull(points)
            if hull.volume > 0:
                pieces.append(np.asarray(hull.vertices, float))
                continue
        except Exception:  # flat: qhull refuses
            pass
        n = normal[own].sum(axis=0)
        n = n / max(np.linalg.norm(n), 1e-30)
        pieces.append(np.concatenate([points + THICKNESS * n, points - THICKNESS * n]))
    return pieces
