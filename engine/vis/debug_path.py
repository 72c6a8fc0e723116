"""``scene.draw_debug_path(qposs, entity, link_idx=-1, density=0.3, frame_scaling=1.0)``: a planned
path drawn as a visualizer-only debug object (Genesis 1.4.5's call).

The link ``link_idx`` of ``entity`` is posed by FK at every waypoint of ``qposs`` (``(T, n_qs)``,
drawn in the cell of env ``env_idx``, 0 by default, a keyword beyond Genesis, as the other
``draw_debug_*`` calls have; or ``(T, n_envs, n_qs)``, one drawing per env): a thin tube joins its
positions, and a coordinate frame (``0.1 * frame_scaling`` m axes) marks a share ``density`` of
the waypoints, evenly spread, the first and last among them. One handle for the whole drawing:
``clear_debug_object`` removes it. Nothing enters the scene's state.
"""

from __future__ import annotations

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError
from ..transforms import quat_to_matrix
from .debug import FRAME_COLORS, ORIGIN_COLOR, DebugObject, scale_matrix, segment

PATH_COLOR = (1.0, 0.85, 0.1, 0.9)
TUBE_RADIUS = 0.003  # m, times frame_scaling
AXIS_LENGTH = 0.1  # m, times frame_scaling


def path_handle(debug, scene, qposs, entity, link_idx=-1, density=0.3, frame_scaling=1.0, env_idx=0) -> DebugObject:
    """The :class:`DebugObject` of a path in ``scene``, added to ``debug`` (its
    :class:`~engine.vis.debug.DebugObjects`)."""
    if not hasattr(entity, "configuration") or not hasattr(entity, "n_qs"):
        raise InvalidTypeError(f"entity: expected the robot entity the path is for, got {type(entity).__name__}")
    q = inputs.as_float_array("qposs", qposs)
    n = entity.n_qs
    if q.ndim == 2 and q.shape[1] == n:
        q, batched = q[:, None], False
    elif q.ndim == 3 and q.shape[2] == n and scene.is_batched and q.shape[1] == scene.n_envs:
        batched = True
    else:
        expected = f"(T, {n})" + (f" or (T, {scene.n_envs}, {n})" if scene.is_batched else "")
        raise InvalidValueError(f"qposs: expected shape {expected}, got {q.shape}")
    if len(q) < 1:
        raise InvalidValueError("qposs: expected at least one waypoint")
    links = entity.n_links
    if isinstance(link_idx, bool) or not isinstance(link_idx, int | np.integer) or not -links <= link_idx < links:
        raise InvalidValueError(f"link_idx: expected an index into the entity's {links} links, got {link_idx!r}")
    density = inputs.as_positive("density", density, maximum=1.0)
    scaling = inputs.as_positive("frame_scaling", frame_scaling)
    T, B = q.shape[:2]
    pose = entity.configuration.fk_poses(np.ascontiguousarray(q.reshape(T * B, n), entity.configuration.dtype))
    pose = pose[:, int(link_idx) % links].astype(float).reshape(T, B, 7).transpose(1, 0, 2)  # (B, T, 7)
    marks = np.unique(np.round(np.linspace(0, T - 1, max(2, int(round(density * T))))).astype(int))
    frames = np.broadcast_to(np.eye(4), (B, len(marks), 4, 4)).copy()
    frames[:, :, :3, :3] = quat_to_matrix(pose[:, marks, 3:])
    frames[:, :, :3, 3] = pose[:, marks, :3]
    parts = [(("sphere", ORIGIN_COLOR), frames @ scale_matrix(0.015 * scaling))]
    for axis, color in enumerate(FRAME_COLORS):
        tip = np.zeros(3)
        tip[axis] = AXIS_LENGTH * scaling
        parts.append((("cylinder", color), frames @ segment(np.zeros(3), tip, 0.005 * scaling)))
    if T > 1:
        a, b = pose[:, :-1, :3], pose[:, 1:, :3]
        tube = segment(a.reshape(-1, 3), b.reshape(-1, 3), TUBE_RADIUS * scaling).reshape(B, T - 1, 4, 4)
        parts.append((("cylinder", PATH_COLOR), tube))
    envs = np.arange(B) if batched else debug.env_cells(env_idx)
    handle = DebugObject("path", np.broadcast_to(np.eye(4), (B, 4, 4)).copy(), batched, envs, parts)
    return debug.add(handle)


__all__ = ["path_handle"]
