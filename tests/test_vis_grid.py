"""The floor grid at many envs: no moire. Lines 0.25 m apart over a 256-env ground (~20 m across)
fall a pixel or two apart in the far rows of a framed view and alias into bands; a wide ground gets
a coarser grid. Checked on the rendered pixels: in the far rows of the floor few pixels are line."""

from __future__ import annotations

import numpy as np
import pytest
from _support import skip_or_fail

import engine
from engine.vis import Visualizer
from engine.vis import meshes as vis_meshes


def floor_image(n_envs: int, spacing: float):
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    scene.build(n_envs=n_envs, env_spacing=(spacing, spacing))
    vis = Visualizer(scene, res=(960, 540))
    try:
        img = vis.render()
    except RuntimeError as err:
        vis.close()
        skip_or_fail(f"no offscreen GL here: {err}")
    bg = np.asarray(vis.bg_color[:3]) * 255
    vis.close()
    px = img.astype(int)
    floor = np.abs(px - bg).max(axis=-1) > 6
    lines = floor & (px.mean(axis=-1) > 100)  # grid lines are light grey, the plane dark grey
    return floor, lines


@pytest.mark.parametrize("n_envs", [256, 1024])
def test_a_wide_floor_has_no_moire(n_envs):
    floor, lines = floor_image(n_envs, 1.2)
    rows = np.flatnonzero(floor.sum(axis=1) > 50)
    far = slice(rows[0], rows[0] + 60)  # the 60 farthest rows of the floor
    fraction = lines[far].sum() / floor[far].sum()
    assert fraction < 0.15, f"{fraction:.0%} of the far floor's pixels are grid line: the lines alias (moire)"
    assert lines.sum() > 0.01 * floor.sum(), "the grid is gone"


def test_a_small_floor_keeps_its_fine_grid():
    assert vis_meshes.grid_spacing((-2.0, -2.0), (2.0, 2.0)) == 0.25
    assert vis_meshes.grid_spacing((-10.0, -10.0), (10.0, 10.0)) == 1.0  # 256 envs 1.2 m apart
