"""TALOS drawn smooth, not speckled (issue 17, item 9): its STL meshes repeat every vertex per
triangle, so each tiny facet was shaded on its own; the app merges the vertices and smooths the
normals (split at creases) before the renderer sees them. The speckle is measured in the picture:
how much the white shell's pixels differ from their neighbourhood's mean."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine as ik
from app import shading


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


def render_talos(smooth: bool) -> np.ndarray:
    from engine.vis import Camera, Visualizer

    scene = ik.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        robot = scene.add_entity(ik.morphs.from_file("talos"))
    scene.build()
    if smooth:
        assert shading.smooth_meshes(robot.tree) > 10
    cam = Camera(res=(480, 480), fov=30.0)
    cam.look_at([2.2, 0.6, 0.5], [0.0, 0.0, 0.2])  # the torso and arms, a few metres away
    vis = Visualizer(scene, camera=cam, lod="full", show_grid=False)
    scene.visualizer = vis
    try:
        return vis.update()
    finally:
        scene.destroy()


def speckle(img: np.ndarray) -> float:
    """Median |pixel - mean of its 3x3 neighbourhood| over the white shell, grey levels (the
    median: the shell's few real edges do not count, a speckle over all of it does)."""
    g = img.astype(float).mean(axis=2)
    pad = np.pad(g, 1, mode="edge")
    blur = sum(pad[i:i + g.shape[0], j:j + g.shape[1]] for i in range(3) for j in range(3)) / 9.0
    shell = img.min(axis=2) > 150
    for _ in range(2):  # away from the shell's outline
        shell = shell & np.roll(shell, 1, 0) & np.roll(shell, -1, 0) & np.roll(shell, 1, 1) & np.roll(shell, -1, 1)
    assert shell.sum() > 2000
    return float(np.median(np.abs(g - blur)[shell]))


def test_talos_shells_are_smooth():
    raw = speckle(render_talos(smooth=False))
    smooth = speckle(render_talos(smooth=True))
    assert smooth < 0.5 * raw, (raw, smooth)


def test_only_meshes_that_repeat_vertices_are_smoothed():
    scene = ik.Scene()
    robot = scene.add_entity(ik.morphs.from_file("panda"))
    scene.build()
    before = {id(v): v.mesh for link in robot.tree.links for v in link.visuals}
    shading.smooth_meshes(robot.tree)
    for link in robot.tree.links:
        for v in link.visuals:
            if not shading.needs_smoothing(before[id(v)]):
                assert v.mesh is before[id(v)]  # shared vertices already: left as the file has them
