"""How far a collision sphere can move along a straight joint-space segment.

For a hinge ``j`` and a sphere ``s`` on a link it moves, the sphere's centre is at most ``R[s, j]``
metres from the hinge's axis in every configuration, so turning the hinge by ``dq`` moves the
centre by at most ``R[s, j] * |dq|``; a slide moves it by ``|dq|`` (``R = 1``). Along a segment
``qa -> qb`` the joints move together, and the centre stays within ``sum_j R[s, j] * |qb_j - qa_j|``
of where it started (the triangle inequality over the chain). A sphere that moves at most ``delta``
sweeps a volume inside its ball grown by ``delta``, so a clearance larger than the bound proves
the whole segment free (self pairs: both spheres move, twice the bound).

``R[s, j]`` is a bound on ``|centre - joint origin|`` from the tree's fixed offsets: the joint's
anchor, each link offset down the chain to the sphere's link, the sphere's centre in its link,
and for each joint on the way twice its anchor's distance plus a slide's travel (a hinge about an
anchor ``a`` moves a point's distance from the link origin by at most ``2 |a|``).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValueError


def lever_arms(tree, link_of_sphere: np.ndarray, centers: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
    """``R (S, n_qs)`` (m per rad, or 1 for a slide; 0 where the joint does not move the sphere) for
    spheres on links ``link_of_sphere (S,)`` with centres ``centers (S, 3)`` m in their link frames.
    ``extra (S,)``: metres added to each sphere's reach (e.g. a carried body's size). Refuses free
    and ball joints (the planner interpolates qpos linearly)."""
    for joint in tree.joints:
        if joint.type in ("free", "ball"):
            raise InvalidValueError(f"plan_path: joint '{joint.name}' is a {joint.type} joint; planning covers "
                                    "hinges and slides only (fix the base: morphs.URDF(..., fixed=True))")
    links = tree.links
    spread = np.zeros(len(links))  # E_L: how far the link's joints move points away from its frame's origin
    for link in links:
        for j in link.joints:
            joint = tree.joints[j]
            travel = 0.0
            if joint.type == "prismatic":
                travel = max(abs(joint.lower - joint.ref), abs(joint.upper - joint.ref))
                if not np.isfinite(travel):
                    raise InvalidValueError(f"plan_path: slide '{joint.name}' has no finite limits")
            spread[link.idx] += 2.0 * float(np.linalg.norm(joint.pos)) + travel
    S = len(link_of_sphere)
    R = np.zeros((S, tree.n_qs))
    reach = np.linalg.norm(np.asarray(centers, float), axis=1) + (0.0 if extra is None else np.asarray(extra, float))
    for s in range(S):
        m = int(link_of_sphere[s])
        chain = [m]  # m, its parent, ... up to the root
        while links[chain[-1]].parent >= 0:
            chain.append(links[chain[-1]].parent)
        below = reach[s] + spread[m]  # bound of |centre - origin of link chain[i]|, built upwards
        for i, k in enumerate(chain):
            if i > 0:
                child = links[chain[i - 1]]
                below += float(np.linalg.norm(child.pos)) + spread[k]
            for j in links[k].joints:
                joint = tree.joints[j]
                if joint.n_qs != 1:
                    continue
                arm = 1.0 if joint.type == "prismatic" else below + float(np.linalg.norm(joint.pos)) + spread[k]
                R[s, joint.q_start] = max(R[s, joint.q_start], arm)
    return R


def motion_bound(R: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Largest distance (m) any sphere's centre moves along segments whose joint steps are
    ``dq (M, n_qs)``: ``max_s sum_j R[s, j] |dq_j|``, shape ``(M,)``."""
    if R.shape[0] == 0:
        return np.zeros(len(dq))
    return (np.abs(dq) @ R.T).max(axis=1)


__all__ = ["lever_arms", "motion_bound"]
