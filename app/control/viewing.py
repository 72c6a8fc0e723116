"""The camera side of the controller: the orbit camera's framing (frame all, a scene file's camera
kept only if it shows every env), its size (the view's, or a recording's with the image
letterboxed in the view) and the env geometry the GUI reads from the snapshot. A mixin of
:class:`app.control.controller.AppController`."""

from __future__ import annotations

import numpy as np

from engine import scenefile

LINK_PAD_M = 0.15  # link geometry around the link origins


class CameraMixin:
    """Camera methods for the controller (``self.camera``, ``self.view``, ``self.spec``)."""

    def current_camera_params(self) -> tuple:
        cam = self.camera
        return (tuple(cam.position().tolist()), tuple(np.asarray(cam.target, float).tolist()), float(cam.fov_deg),
                (cam.width, cam.height))

    def camera_from_spec(self) -> None:
        """The file's camera, unless it leaves an env out of this view (the file's camera may be
        framed for a video of another aspect ratio): then frame every env."""
        cam = self.spec.camera
        if cam is None:
            self.frame_all()
            return
        pos, lookat = np.array(cam.pos, float), np.array(cam.lookat, float)
        d = pos - lookat
        dist = float(np.linalg.norm(d))
        self.camera.target = lookat
        self.camera.distance = dist
        self.camera.azimuth_deg = float(np.degrees(np.arctan2(d[1], d[0])))
        self.camera.elevation_deg = float(np.degrees(np.arcsin(np.clip(d[2] / dist, -1, 1))))
        self.camera.fov_deg = float(cam.fov)
        if not self._shows_every_env():
            self.frame_all()
        else:
            self._framing = ("file", self._pose())

    def _shows_every_env(self, margin: float = 0.02) -> bool:
        """Every env's robot (the box around its link origins, padded) lies inside the view."""
        v = self.view
        pos = v.links_pos + v.offsets[:, None]
        lo, hi = pos.min(axis=1) - LINK_PAD_M, pos.max(axis=1) + LINK_PAD_M
        corners = np.stack([np.stack([np.where(m & 1, hi[:, 0], lo[:, 0]), np.where(m & 2, hi[:, 1], lo[:, 1]),
                                      np.where(m & 4, hi[:, 2], lo[:, 2])], axis=1) for m in range(8)], axis=1)
        pix, depth = self.camera.project(corners)
        size = np.array([self.camera.width, self.camera.height])
        edge = margin * size.min()
        return bool(np.all(depth > 0) and np.all(pix >= edge) and np.all(pix <= size - edge))

    def camera_to_spec(self) -> None:
        self.spec.camera = scenefile.CameraSpec(pos=tuple(float(x) for x in self.camera.position().round(4)),
                                                lookat=tuple(float(x) for x in np.asarray(self.camera.target).round(4)),
                                                fov=float(self.camera.fov_deg))

    def hand_camera(self) -> None:
        """The camera as it is now, for the sim's next image, and the scene it was framed for: none
        while a window's view is not laid out yet (the sim holds the scene's first image for it)."""
        self.camera_params = self.current_camera_params()
        framed = self.view is not None and self.view_laid_out
        self.camera_generation = self.view.generation if framed else 0

    def resize_view(self, width: int, height: int) -> None:
        """The 3D view's widget changed size: render at the new size (unless a recording fixes it).
        A camera the app framed and nobody moved since is framed again for the new shape: every env
        after "frame all" (the view first laid out, or made narrower, would cut envs off at its
        sides: a laptop's screen), and a scene file's camera only while it still shows every env."""
        self.view_size = (max(int(width), 16), max(int(height), 16))
        self.view_laid_out = True
        before = (self.camera.width, self.camera.height)
        self.apply_render_size()
        framing = self._framing
        if (self.view is None or framing is None or before == (self.camera.width, self.camera.height)
                or framing[1] != self._pose()):
            return
        if framing[0] == "all" or not self._shows_every_env():
            self.frame_all()

    def _pose(self) -> tuple:
        """The camera's position, look-at point (m) and field of view (degrees), rounded to 1e-9."""
        cam = self.camera
        return (*np.round(cam.position(), 9).tolist(), *np.round(cam.target, 9).tolist(), round(cam.fov_deg, 9))

    def apply_render_size(self) -> None:
        """The camera renders at the recording's size while one runs, else at the view's."""
        size = self.render_size or self.view_size
        if tuple(size) != (self.camera.width, self.camera.height):
            self.camera.resize(*size)
            self.res = tuple(size)

    def view_transform(self) -> tuple[float, float, float]:
        """(scale, x0, y0): camera pixel p shows at view pixel (x0, y0) + scale * p. The identity but
        while recording at a size other than the view's: then the image is fitted in the view,
        centred, its aspect ratio kept (letterboxed)."""
        (vw, vh), (cw, ch) = self.view_size, (self.camera.width, self.camera.height)
        if (vw, vh) == (cw, ch):
            return 1.0, 0.0, 0.0
        scale = min(vw / cw, vh / ch)
        return scale, 0.5 * (vw - scale * cw), 0.5 * (vh - scale * ch)

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned box (lo, hi) around every env's links, the ground at z = 0 included, m (as
        the visualizer's, from the snapshot)."""
        v = self.view
        pos = v.links_pos + v.offsets[:, None]
        lo, hi = pos.min(axis=(0, 1)) - LINK_PAD_M, pos.max(axis=(0, 1)) + LINK_PAD_M
        lo[2], hi[2] = min(lo[2], 0.0), max(hi[2], 0.3)
        return lo, hi

    def frame_all(self) -> None:
        """Fit every env's robot (and the ground under it) in the view, direction kept."""
        lo, hi = self.scene_bounds()
        self.camera.frame_box(lo, hi, margin_px=0.03 * min(self.camera.width, self.camera.height))
        self._framing = ("all", self._pose())

    def preset(self, name: str) -> None:
        self.camera.preset(name)

    def env_centers(self) -> np.ndarray:
        """On-screen centre of every env's robot (n_envs, 3): the mean of its link origins, m."""
        return self.view.links_pos.mean(axis=1) + self.view.offsets

    def env_center(self, env: int) -> np.ndarray:
        return self.env_centers()[env]

    def nearest_env(self) -> int:
        """The env whose robot is nearest the camera."""
        return int(np.argmin(np.linalg.norm(self.env_centers() - self.camera.position(), axis=1)))

