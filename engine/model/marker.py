"""The project's frame marker mesh, ``engine/data/meshes/axis.obj``, made here (plain numpy).

Three arrows from the origin, one unit long, along +x (red), +y (green) and +z (blue), and a
small grey cube at the origin. Each arrow is a shaft (a prism of ``SEGMENTS`` sides, radius
``SHAFT_RADIUS``) ending in a cone (radius ``HEAD_RADIUS``, length ``HEAD_LENGTH``). The OBJ
carries per-vertex colours (``v x y z r g b``), which trimesh reads and the renderer draws. Scale
it to size: Genesis' IK examples use ``gs.morphs.Mesh(file="meshes/axis.obj", scale=0.15)``.

Regenerate the shipped file with ``python -m engine.model.marker`` (a test checks it matches).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

SEGMENTS = 16
SHAFT_RADIUS = 0.025
HEAD_RADIUS = 0.06
HEAD_LENGTH = 0.2
CUBE_HALF = 0.04
COLORS = {"x": (0.9, 0.15, 0.15), "y": (0.15, 0.8, 0.2), "z": (0.2, 0.35, 0.95), "origin": (0.8, 0.8, 0.8)}
PATH = Path(__file__).resolve().parent.parent / "data" / "meshes" / "axis.obj"


def _arrow_along_z() -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) and faces (F, 3) (counter-clockwise seen from outside) of a unit arrow on +z."""
    angle = 2 * np.pi * np.arange(SEGMENTS) / SEGMENTS
    ring = np.stack([np.cos(angle), np.sin(angle), np.zeros(SEGMENTS)], axis=1)
    shaft_end = 1.0 - HEAD_LENGTH
    verts = [ring * SHAFT_RADIUS, ring * SHAFT_RADIUS + [0, 0, shaft_end], ring * HEAD_RADIUS + [0, 0, shaft_end],
             np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, shaft_end]])]
    v = np.concatenate(verts)
    bottom, top, head = 0, SEGMENTS, 2 * SEGMENTS
    base_centre, tip, head_centre = 3 * SEGMENTS, 3 * SEGMENTS + 1, 3 * SEGMENTS + 2
    faces = []
    for i in range(SEGMENTS):
        j = (i + 1) % SEGMENTS
        faces += [[bottom + i, bottom + j, top + j], [bottom + i, top + j, top + i]]  # shaft side
        faces += [[base_centre, bottom + j, bottom + i]]  # shaft base (facing -z)
        faces += [[head_centre, head + j, head + i]]  # head base (facing -z)
        faces += [[head + i, head + j, tip]]  # cone
    return v, np.array(faces)


def _cube() -> tuple[np.ndarray, np.ndarray]:
    s = CUBE_HALF
    v = np.array([[x, y, z] for x in (-s, s) for y in (-s, s) for z in (-s, s)])
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    faces = [f for a, b, c, d in quads for f in ([a, b, c], [a, c, d])]
    return v, np.array(faces)


def axis_marker() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(vertices (V, 3), colours (V, 3) in [0, 1], faces (F, 3))`` of the marker, unit size."""
    v, f = _arrow_along_z()
    turns = {"x": np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),  # +90 deg about y: z -> x
             "y": np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0]]),  # -90 deg about x: z -> y
             "z": np.eye(3)}
    parts = [(v @ turns[a].T, f, COLORS[a]) for a in ("x", "y", "z")]
    parts.append((*_cube(), COLORS["origin"]))
    verts, colors, faces, start = [], [], [], 0
    for pv, pf, color in parts:
        verts.append(pv)
        colors.append(np.tile(color, (len(pv), 1)))
        faces.append(pf + start)
        start += len(pv)
    return np.concatenate(verts), np.concatenate(colors), np.concatenate(faces)


def obj_text() -> str:
    """The marker as Wavefront OBJ text with per-vertex colours (deterministic)."""
    v, c, f = axis_marker()
    lines = ["# IK Studio frame marker: x red, y green, z blue, unit length (engine/model/marker.py)"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f} {r:.3f} {g:.3f} {b:.3f}" for (x, y, z), (r, g, b) in zip(v + 0.0, c)]
    lines += [f"f {a + 1} {b + 1} {d + 1}" for a, b, d in f]
    return "\n".join(lines) + "\n"


def write(path: Path = PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj_text(), encoding="ascii")
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else PATH))
