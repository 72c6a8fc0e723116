"""``with_entity`` + ``ee_link_name``: a single body carried rigidly by a link while planning.

The body's sphere model (its own :meth:`~engine.collision.api.CollisionMethods.collision_model`,
fitted to its shape) is moved into the carrying link's frame with the grasp as it stands when
``plan_path`` is called (the body's pose relative to the link, the same in every env), and its
spheres join that link's in the checks: against the obstacles, and against the robot's links in
the self pairs that link already counts. The bounds of :mod:`engine.plan.bounds` cover them like
any sphere of the link.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError
from ..transforms import quat_conj, quat_mul, quat_rotate

GRASP_TOL = 1e-3  # m / rad-ish: how much the grasp may differ between envs


def carried_spheres(robot, link, body, envs) -> tuple[int, np.ndarray, np.ndarray]:
    """``(link index, centres (k, 3) m in the link frame, radii (k,))`` of ``body`` as ``link`` holds it."""
    from ..morphs import Shape

    if body is robot or not isinstance(getattr(body, "morph", None), Shape) or body.n_links != 1:
        raise InvalidTypeError(f"with_entity: expected a single-body entity (a Box, Sphere, Cylinder or Mesh) other "
                               f"than the robot, got {type(getattr(body, 'morph', body)).__name__}")
    if body.is_placed_body:
        raise InvalidValueError("with_entity: a fixed body is an obstacle; a carried body must not be fixed")
    if body.scene is not robot.scene:
        raise InvalidValueError("with_entity: the body belongs to another scene")
    idx = link.idx_local
    ee = robot.configuration.pose[envs, idx].astype(float)  # (M, 7)
    obj = body.configuration.pose[envs, 0].astype(float)
    inv = quat_conj(ee[:, 3:])
    rel_pos = quat_rotate(inv, obj[:, :3] - ee[:, :3])
    rel_quat = quat_mul(inv, obj[:, 3:])
    rel_quat *= np.sign(rel_quat[:, :1] + (rel_quat[:, :1] == 0))
    if np.abs(rel_pos - rel_pos[:1]).max() > GRASP_TOL or np.abs(rel_quat - rel_quat[:1]).max() > GRASP_TOL:
        raise InvalidValueError("with_entity: the body sits differently on the link in different envs; "
                                "planning takes one grasp for every env")
    spheres = body.collision_model().spheres
    centres = rel_pos[0] + quat_rotate(np.broadcast_to(rel_quat[0], (spheres.n_spheres, 4)), spheres.centers)
    return idx, centres, np.asarray(spheres.radii, float)


def augment(tables, link: int, centres: np.ndarray, radii: np.ndarray):
    """The sphere model's kernel tables ``(sphere rows (S, 6), bounds (L, 4), pairs (P, 6))`` with the
    spheres ``centres`` / ``radii`` added to ``link`` (kept grouped by link; pair ranges shifted)."""
    spheres, bounds, pairs = (np.array(t) for t in tables)
    dtype = spheres.dtype
    owner = spheres[:, 0].astype(np.int64)
    at = int(np.searchsorted(owner, link, side="right"))
    k = len(radii)
    # plain sphere rows (a group count of 0 in any further column: engine.collision.groups), after the link's rows
    new = np.concatenate([np.full((k, 1), link), centres, radii[:, None], np.zeros((k, spheres.shape[1] - 5))],
                         axis=1).astype(dtype)
    spheres = np.concatenate([spheres[:at], new, spheres[at:]])
    for l_col, s0, s1 in ((0, 2, 3), (1, 4, 5)):  # ranges of later links move along; the link's own grows
        owner_link = pairs[:, l_col]
        pairs[:, s0] += np.where(owner_link > link, k, 0).astype(pairs.dtype)
        pairs[:, s1] += np.where(owner_link >= link, k, 0).astype(pairs.dtype)
    own = spheres[spheres[:, 0].astype(np.int64) == link]
    c = 0.5 * (own[:, 1:4].min(0) + own[:, 1:4].max(0))
    bounds[link, :3] = c
    bounds[link, 3] = (np.linalg.norm(own[:, 1:4] - c, axis=1) + own[:, 4]).max() * (1 + 1e-6)
    return np.ascontiguousarray(spheres), np.ascontiguousarray(bounds, dtype), np.ascontiguousarray(pairs)


__all__ = ["augment", "carried_spheres"]
