"""The planned path of the selected env, drawn in the view under planned motion (``solver.plan``).

A visualizer-only debug object (``scene.draw_debug_path``) in the selected env's cell: the first
target's link along the path the env moves along, or last moved along. It is drawn again when the
env starts another path or another env is selected, and removed when planning is turned off.
"""

from __future__ import annotations

import numpy as np

PATH_DENSITY = 0.05  # share of the path's samples marked with a frame
PATH_FRAME_SCALE = 1.0  # a 3 mm tube, 10 cm axes (engine.vis.debug_path)


class PathView:
    """Keeps the one path drawing of a scene (:meth:`update` every solved frame)."""

    def __init__(self):
        self.handle = None
        self.shown: tuple | None = None  # (env, id of the path's samples) drawn
        self.samples: np.ndarray | None = None  # (T, n_qs) the path drawn
        self.points: np.ndarray | None = None  # (T, 3) m: where the drawn link goes, in the world

    def update(self, scene, runner, env: int, on: bool) -> None:
        """Draw ``runner``'s path of env ``env`` in ``scene`` (``on``), unless it is drawn already."""
        path = runner.path_of(env) if on and runner.links else None
        key = None if path is None or len(path) < 2 else (int(env), id(path))
        if key == self.shown:
            return
        self.clear(scene)
        if key is not None:
            link = runner.links[0].idx_local
            samples = np.asarray(path, float)
            self.handle = scene.draw_debug_path(samples, runner.robot, link_idx=link, density=PATH_DENSITY,
                                                frame_scaling=PATH_FRAME_SCALE, env_idx=int(env) if scene.is_batched
                                                else 0)
            scene.update_debug_objects()
            self.samples = samples
            config = runner.robot.configuration
            local = config.fk_poses(np.ascontiguousarray(samples, config.dtype))[:, link, :3].astype(float)
            self.points = local + (scene.envs_offset()[int(env)] if scene.is_batched else 0.0)
        self.shown = key

    def clear(self, scene) -> None:
        """Remove the drawing (a scene being replaced: nothing to remove there)."""
        if self.handle is not None and scene is not None:
            scene.clear_debug_object(self.handle)
            scene.update_debug_objects()
        self.handle, self.shown, self.samples, self.points = None, None, None, None

    @property
    def drawn(self) -> bool:
        return self.handle is not None
