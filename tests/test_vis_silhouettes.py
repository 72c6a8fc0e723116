"""Every catalog robot drawn whole: the renderer's silhouette of each robot (both levels of detail)
against a reference silhouette of the same visuals made independently of the app's render path.

The reference loads each visual's mesh file with trimesh's own loader (``trimesh.load``, no
merging, smoothing or decimation; primitives made by ``trimesh.creation``), poses it by the
robot's link poses and the visual's origin, and draws it with pyrender's stock pipeline
(``Mesh.from_trimesh``, a depth-only pass, its own GL context). The renderer's silhouette is the
set of pixels that do not change between two frames on different background colours. A robot
whose parts are lost on the way (Baxter's torso and pedestal vanished when its COLLADA meshes
were decimated) covers much less than the reference and fails.

Images are small (160 x 120), mesh files are read once per test session, and the reference keeps
their shape alone (vertices and faces: a depth pass needs no materials or textures).
"""

from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from _support import skip_or_fail

import engine
from engine import assets, morphs
from engine.model.errors import ModelLoadError
from engine.transforms import pose_to_matrix
from engine.vis import Camera, Visualizer
from engine.vis import meshes as vis_meshes

RES = (160, 120)
ROBOTS = [entry.name for entry in assets.list_robots()]
MIN_ALPHA = 0.6  # visuals more transparent than this are not part of the silhouette (both sides)
# At 160 x 120 a decimated thin part (a drone's legs, a gripper's fingers) loses some pixels: the
# worst whole robot scores 0.87 (iris); a lost part scores far less (Baxter before: 0.43).
MIN_IOU = {"full": 0.97, "decimated": 0.85}
# catalog files that do not load, and why (tests/test_model_urdf.py::test_known_rejections)
UNLOADABLE = {"falcon": "child link 'Z_propeller' is not a <link>", "ur_ur3": "cannot parse URDF"}


@functools.lru_cache(maxsize=64)
def _file_mesh(path: str):
    import trimesh

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mesh = trimesh.load(path, force="mesh", process=False, skip_materials=True)  # as read: no vertex merging
    # the shape alone: a depth pass needs no materials (pyrender formats every texture it is given)
    return trimesh.Trimesh(np.asarray(mesh.vertices), np.asarray(mesh.faces), process=False)


def _reference_mesh(visual):
    import trimesh

    size = np.asarray(visual.size, float)
    if visual.kind == "mesh":
        if visual.mesh_data is not None:
            mesh = trimesh.Trimesh(*visual.mesh_data, process=False)
        else:
            mesh = _file_mesh(str(visual.mesh_file)).copy()
        mesh.apply_scale(size)
        return mesh
    if visual.kind == "box":
        return trimesh.creation.box(extents=size)
    if visual.kind == "sphere":
        return trimesh.creation.uv_sphere(radius=size[0])
    if visual.kind == "ellipsoid":
        mesh = trimesh.creation.uv_sphere(radius=1.0)
        mesh.apply_scale(size)
        return mesh
    if visual.kind == "cylinder":
        return trimesh.creation.cylinder(radius=size[0], height=size[1], sections=32)
    if visual.kind == "capsule":
        return trimesh.creation.capsule(radius=size[0], height=size[1])
    raise AssertionError(f"unknown visual kind {visual.kind}")


def reference_parts(robot) -> list:
    """``[(trimesh, world pose (4, 4))]`` of every visual of ``robot`` (env 0) opaque enough to count."""
    n = robot.n_links
    pos = robot.get_links_pos().reshape(-1, n, 3)[0]
    quat = robot.get_links_quat().reshape(-1, n, 4)[0]
    parts = []
    for link in robot.tree.links:
        for visual in link.visuals:
            if float(visual.rgba[3]) <= MIN_ALPHA:
                continue
            mesh = _reference_mesh(visual)
            if mesh is None or len(mesh.faces) == 0:
                continue
            T = pose_to_matrix(pos[link.idx], quat[link.idx]) @ pose_to_matrix(visual.pos, visual.quat)
            parts.append((mesh, T))
    return parts


@pytest.fixture(scope="module")
def reference_renderer():
    """pyrender's stock offscreen renderer at :data:`RES`, one for every robot (creating and
    deleting one per robot cost more than its depth passes)."""
    import pyrender

    try:
        renderer = pyrender.OffscreenRenderer(*RES)
    except Exception as err:  # no offscreen GL in this environment
        skip_or_fail(f"no offscreen GL here: {err}")
    yield renderer
    renderer.delete()


def reference_mask(parts, camera: Camera, renderer) -> np.ndarray:
    """Pixels covered by ``parts`` (a depth-only pass of pyrender's own pipeline) seen by ``camera``."""
    import pyrender

    scene = pyrender.Scene()
    for mesh, T in parts:
        scene.add(pyrender.Mesh.from_trimesh(mesh, smooth=False), pose=T)
    scene.add(pyrender.PerspectiveCamera(yfov=np.deg2rad(camera.fov), aspectRatio=camera.aspect,
                                         znear=camera.znear, zfar=camera.zfar), pose=camera.pose)
    depth = renderer.render(scene, flags=pyrender.RenderFlags.DEPTH_ONLY)
    return depth > 0


def drawn_mask(vis: Visualizer) -> np.ndarray:
    """Pixels the robot covers: those equal on a black and on a white background."""
    vis.bg_color = (0.0, 0.0, 0.0, 1.0)
    dark = vis.render().astype(int)
    vis.bg_color = (1.0, 1.0, 1.0, 1.0)
    light = vis.render().astype(int)
    return np.abs(light - dark).max(axis=-1) < 255 * (1 - MIN_ALPHA)


def framed_camera(parts) -> Camera:
    points = np.concatenate([np.asarray(m.vertices) @ T[:3, :3].T + T[:3, 3] for m, T in parts])
    return Camera(res=RES).frame_bounds(points.min(axis=0), points.max(axis=0), direction=(1.0, 0.7, 0.45))


def iou(a: np.ndarray, b: np.ndarray) -> float:
    return float((a & b).sum() / max((a | b).sum(), 1))


@pytest.mark.parametrize("name", ROBOTS)
def test_every_catalog_robot_is_drawn_whole(name, reference_renderer):
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene(show_viewer=False)
    if name in UNLOADABLE:
        with pytest.raises(ModelLoadError, match=re.escape(UNLOADABLE[name])):
            scene.add_entity(morphs.from_file(name))
        return
    robot = scene.add_entity(morphs.from_file(name))
    scene.build()
    parts = reference_parts(robot)
    if not parts:  # a file without visuals (simple_humanoid), or whose mesh files are missing (romeo_laas_small)
        files = [v.mesh_file for link in robot.tree.links for v in link.visuals if v.mesh_file is not None]
        assert not any(Path(f).is_file() for f in files), f"{name}: mesh files exist but nothing is drawn"
        assert not vis_meshes.link_specs(robot.tree), f"{name}: the renderer draws what the reference lacks"
        return
    camera = framed_camera(parts)
    expected = reference_mask(parts, camera, reference_renderer)
    assert expected.sum() > 0.005 * expected.size, f"{name}: the reference silhouette is nearly empty"  # thin: 1 %
    for lod in ("full", "decimated"):
        vis = Visualizer(scene, res=RES, camera=camera.copy(), lod=lod, show_grid=False)
        vis.vis_options = vis.vis_options.model_copy(update={"show_world_frame": False, "show_link_frame": False})
        try:
            drawn = drawn_mask(vis)
        finally:
            vis.close()
        score = iou(drawn, expected)
        missing = float((expected & ~drawn).sum() / expected.sum())
        assert score >= MIN_IOU[lod], (f"{name} ({lod}): drawn silhouette matches the reference's by IoU {score:.3f} "
                                       f"< {MIN_IOU[lod]}; {missing:.1%} of the reference's pixels are not drawn")
