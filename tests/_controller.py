"""What the controller tests share (tests/test_app_controller.py, tests/test_app_target_edits.py):
scenes as text, the fixtures that make controllers, and helpers that drag gizmos through the
pointer API and read link poses."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine as ik
from app.control import gizmo as gz
from app.control.controller import AppController

RES = (320, 180)

PANDA_POSE_SCENE = """\
robot: panda
envs:
  n_envs: 4
solver:
  seed: 0
targets:
  - link: hand
    pos: [0.45, 0.1, 0.4]
    quat: [0.0, 1.0, 0.0, 0.0]
"""

FINGERS_SCENE = """\
robot: panda
envs:
  n_envs: 4
solver:
  seed: 0
targets:
  - link: left_finger
    pos: [0.3, -0.04, 0.53]
    quat: [0.0, 1.0, 0.0, 0.0]
  - link: right_finger
    pos: [0.3, 0.04, 0.53]
    quat: [0.0, 1.0, 0.0, 0.0]
"""


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


@pytest.fixture
def ctl():
    """The default scene (the seed's 16 Pandas, a circling hand target), small offscreen view."""
    c = AppController(res=RES)
    yield c
    c.close()


@pytest.fixture
def scene_ctl(tmp_path):
    """A controller on a scene file written from text into tmp_path."""
    made = []

    def make(text: str, name: str = "scene.yaml") -> AppController:
        path = tmp_path / name
        path.write_text(text)
        c = AppController(path, res=RES)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def hand_pos(c: AppController, link: str = "hand") -> np.ndarray:
    """(n_envs, 3) env-local position of ``link``."""
    idx = c.robot.get_link(link).idx_local
    return c.robot.get_links_pos().reshape(c.n_envs, -1, 3)[:, idx].astype(float)


def link_quat(c: AppController, link: str) -> np.ndarray:
    idx = c.robot.get_link(link).idx_local
    return c.robot.get_links_quat().reshape(c.n_envs, -1, 4)[:, idx].astype(float)


def handle(c: AppController, kind: str, axis: int, target: int = 0) -> gz.Handle:
    return next(h for h in gz.handle_geometry(c.targets.gizmo(target)) if h.kind == kind and h.axis == axis)


def pixel(c: AppController, point) -> np.ndarray:
    px, depth = c.camera.project(np.asarray(point, float))
    assert depth > 0 and np.all(np.isfinite(px)), f"{point} is not in front of the camera"
    return px


def drag(c: AppController, start3d, end3d, steps: int = 5, ctrl: bool = False, via=None) -> None:
    """A left-button drag through the pointer API from the pixel of ``start3d`` to that of ``end3d``
    (``via``: world points to pass through, default a straight line in pixels)."""
    a, b = pixel(c, start3d), pixel(c, end3d)
    assert c.pointer_down("left", *a) == "gizmo"
    path = [pixel(c, p) for p in via] if via is not None else [a + (b - a) * k / steps for k in range(1, steps + 1)]
    for p in path:
        c.pointer_move(*p, ctrl=ctrl)
    c.pointer_move(*b, ctrl=ctrl)
    c.pointer_up(*b)


def picked(c: AppController, point) -> tuple[int, gz.Handle] | None:
    found = c.targets.pick(*pixel(c, point))
    return None if found is None else (found[0], found[1].handle)


def solve_now(c: AppController, frames: int = 1):
    """Solve the current targets without advancing time (paused + an edit pending)."""
    c.playing = False
    for _ in range(frames):
        c.dirty = True
        c.update()
    return c.last_frame


def settle(c: AppController, max_frames: int = 120):
    """Solve paused until no env lags: with smooth tracking (the shipped scenes' default) a target
    moved by an edit is followed over several frames, each within the velocity limits."""
    frame = solve_now(c)
    for _ in range(max_frames):
        if frame.lagging is None or not frame.lagging.any():
            return frame
        c.update()  # paused, the sim goes on solving while envs lag (Sim.catching_up)
        frame = c.last_frame
    raise AssertionError(f"envs still lagging after {max_frames} frames: {np.flatnonzero(frame.lagging)}")


def tint_share(img: np.ndarray, rgba, min_chroma: float = 40.0) -> float:
    """Share of pixels of ``img`` (H, W, 3) in the hue of the tint ``rgba``: their colour minus
    its grey points the tint's way (cosine > 0.95) and is at least ``min_chroma`` grey levels long
    (the grey ground and white shells are not)."""
    rgb = img.astype(float)
    chroma = rgb - rgb.mean(axis=-1, keepdims=True)
    tint = np.array(rgba[:3]) - np.mean(rgba[:3])
    norm = np.linalg.norm(chroma, axis=-1)
    cos = chroma @ tint / (np.maximum(norm, 1e-9) * np.linalg.norm(tint))
    return float(((cos > 0.95) & (norm > min_chroma)).mean())


def quat_angle_axis(q) -> tuple[float, np.ndarray]:
    q = np.asarray(q, float) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = np.linalg.norm(q[1:])
    return 2.0 * math.atan2(s, q[0]), q[1:] / max(s, 1e-12)


def conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], float)


