"""Decimation for the renderer's reduced level of detail: a mesh keeps its surface however its
file shares vertices, thin parts survive, and results are kept on disk.

Baxter's torso (COLLADA: vertices split along normal and texture seams, 2.4 per face) decimated
as loaded kept 2 % of its area, and the torso and pedestal vanished from every view of 16 envs
and more (tests/test_vis_silhouettes.py checks every catalog robot's silhouette)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine import morphs
from engine.vis import mesh_cache
from engine.vis import meshes as vis_meshes


def split_mesh(mesh, fraction: float, seed: int = 0):
    """``mesh`` with the vertices of a random ``fraction`` of its faces duplicated per face (as a
    file split along seams stores them)."""
    import trimesh

    rng = np.random.default_rng(seed)
    faces = np.asarray(mesh.faces).copy()
    verts = [np.asarray(mesh.vertices)]
    n = len(mesh.vertices)
    for f in np.flatnonzero(rng.random(len(faces)) < fraction):
        verts.append(np.asarray(mesh.vertices)[faces[f]])
        faces[f] = [n, n + 1, n + 2]
        n += 3
    return trimesh.Trimesh(np.concatenate(verts), faces, process=False)


def test_a_partly_split_mesh_keeps_its_surface():
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=5)  # 20480 faces
    split = split_mesh(sphere, 0.6)
    assert not vis_meshes.repeats_vertices(split)  # below the soup rule: the old code decimated it as it was
    out = vis_meshes.decimate(split, 1000)
    assert len(out.faces) <= 1100
    assert out.area / sphere.area > 0.95, f"the decimated sphere kept {out.area / sphere.area:.0%} of its area"


def test_baxters_torso_and_pedestal_keep_their_surface(tmp_path, monkeypatch):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.from_file("baxter"))
    for name in ("torso", "pedestal"):
        visual = robot.tree.links[robot.get_link(name).idx_local].visuals[0]
        out = vis_meshes.decimate(visual.mesh, 1000)
        assert out.area / visual.mesh.area > 0.7, f"{name}: {out.area / visual.mesh.area:.0%} of its area kept"
        assert len(out.faces) <= 8 * 1000 * 1.1


def test_decimated_meshes_are_kept_on_disk(tmp_path, monkeypatch):
    import trimesh

    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    mesh_file = tmp_path / "ball.stl"
    trimesh.creation.icosphere(subdivisions=4).export(mesh_file)
    mesh = trimesh.load(mesh_file, force="mesh", process=False)
    key = (str(mesh_file), (1.0, 1.0, 1.0))
    first = vis_meshes.decimate(mesh, 300, key)
    entries = list((tmp_path / "meshes").glob("decimated_*.npz"))
    assert len(entries) == 1
    vis_meshes._DECIMATED.clear()  # a new process: only the disk remembers

    def no_decimating(*args):
        raise AssertionError("decimated again instead of read from the disk cache")

    monkeypatch.setattr(vis_meshes, "_decimate", no_decimating)
    again = vis_meshes.decimate(mesh, 300, key)
    np.testing.assert_array_equal(again.faces, first.faces)
    np.testing.assert_allclose(again.vertices, first.vertices)
    # another budget, or an edited file, is another entry
    assert mesh_cache.entry_path(mesh_file, (1, 1, 1), 300) != mesh_cache.entry_path(mesh_file, (1, 1, 1), 600)
    before = mesh_cache.entry_path(mesh_file, (1, 1, 1), 300)
    mesh_file.write_bytes(mesh_file.read_bytes() + b"\n")
    assert mesh_cache.entry_path(mesh_file, (1, 1, 1), 300) != before


def test_an_unreadable_cache_entry_is_recomputed(tmp_path, monkeypatch):
    import trimesh

    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    mesh_file = tmp_path / "ball.stl"
    trimesh.creation.icosphere(subdivisions=4).export(mesh_file)
    path = mesh_cache.entry_path(mesh_file, (1.0, 1.0, 1.0), 300)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an npz")
    assert mesh_cache.load(path) is None
    vis_meshes._DECIMATED.clear()
    mesh = trimesh.load(mesh_file, force="mesh", process=False)
    out = vis_meshes.decimate(mesh, 300, (str(mesh_file), (1.0, 1.0, 1.0)))
    assert 0 < len(out.faces) <= 330 and mesh_cache.load(path) is not None


@pytest.mark.parametrize("n_envs, expected", [(1, "decimated"), (15, "decimated")])
def test_a_heavy_robot_is_decimated_at_any_env_count(n_envs, expected):
    """Baxter's full meshes hold ~410k triangles an env: drawn whole it rendered at 1-5 images/s."""
    from engine.vis import Visualizer

    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    scene.add_entity(morphs.from_file("baxter"))
    scene.build(n_envs=n_envs)
    vis = Visualizer(scene)
    try:
        assert vis.lod == expected
    finally:
        vis.close()
    light = engine.Scene()
    light.add_entity(morphs.from_file("panda"))
    light.build(n_envs=n_envs)
    vis = Visualizer(light)
    try:
        assert vis.lod == "full"
    finally:
        vis.close()


def test_links_drawn_alike_share_one_instanced_mesh():
    """Baxter's two arms use the same mesh files at the same origins: one mesh each, drawn for both
    arms in every env (tests/test_vis_silhouettes.py checks that every part still shows)."""
    from engine.vis import Visualizer

    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.from_file("baxter"))
    scene.build(n_envs=2)
    vis = Visualizer(scene, res=(64, 36))
    try:
        meshes_drawn, links = vis.link_meshes
    finally:
        vis.close()
    with_visuals = sum(1 for link in robot.tree.links if link.visuals)
    assert links == with_visuals
    assert meshes_drawn <= with_visuals - 14, (meshes_drawn, with_visuals)  # 7 arm links + gripper parts twice
