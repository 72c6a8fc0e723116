"""A small cluttered Panda scene for the app's collision tests: two envs, one fixed hand target
above a table, and a ball beside the arm that a test moves onto its forearm (from y = 0.35 m to
y = 0: the forearm runs from about (0.07, 0, 0.65) to (0.41, 0, 0.46) at the answer)."""

from __future__ import annotations

from pathlib import Path

BALL = 1  # the ball's index among the obstacles
BALL_START = (0.24, 0.35, 0.58)  # m, clear of the arm
BALL_ON_ARM = (0.24, 0.0, 0.58)  # m, on the forearm of the answer to the target

SCENE = f"""\
robot: panda_urdf
envs: {{n_envs: 2, env_spacing: [2.0, 2.0]}}
solver: {{seed: 0, avoid_collisions: true, collision_margin: 0.01}}
targets:
  - {{link: panda_hand, pos: [0.5, 0.0, 0.35], rpy: [180, 0, 0]}}
obstacles:
  - {{kind: box, size: [1.2, 1.4, 0.04], pos: [0.35, 0.0, -0.02], color: [0.55, 0.42, 0.3]}}
  - {{kind: sphere, size: 0.08, pos: {list(BALL_START)}, color: [0.2, 0.3, 0.9]}}
camera: {{pos: [3.4, -0.5, 1.5], lookat: [0.3, 0.0, 0.35], fov: 50}}
"""


def write_scene(folder: Path, text: str = SCENE) -> Path:
    path = Path(folder) / "clutter.yaml"
    path.write_text(text)
    return path
