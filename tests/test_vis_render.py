"""The offscreen renderer (OSMesa, no display): every env cell drawn, debug frame axes where their
pose projects, clearing, per-env tint, the render thread, and the mesh levels of detail.

Pixels are checked against :meth:`Camera.project` (plain numpy), so these also pin the camera
model to what pyrender draws. A reference render of the same env grid with no robot gives the
background (ground grid included) to compare against.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from _support import in_fresh_process, rss_mb, skip_or_fail

import engine
from engine import morphs
from engine.transforms import pose_to_matrix
from engine.vis import Camera, Visualizer
from engine.vis import meshes as vis_meshes

N_ENVS = 16
RES = (1280, 720)
FRAME_Z = 1.45  # above every robot: nothing between the camera and a frame drawn there


@pytest.fixture(scope="module")
def setup():
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=N_ENVS, env_spacing=(1.0, 1.0))
    rng = np.random.default_rng(3)
    q = np.tile(robot.tree.default_qpos, (N_ENVS, 1))
    q[:, :7] += rng.uniform(-0.5, 0.5, (N_ENVS, 7))
    robot.set_qpos(q)
    vis = Visualizer(scene, res=RES)
    scene.visualizer = vis
    try:
        first = vis.render()
    except RuntimeError as err:
        vis.close()
        skip_or_fail(f"no offscreen GL here: {err}")
    empty = engine.Scene()
    empty.build(n_envs=N_ENVS, env_spacing=(1.0, 1.0))
    empty.visualizer = Visualizer(empty, camera=vis.camera.copy())
    background = empty.visualizer.render()
    yield scene, robot, vis, first, background
    vis.close()
    empty.visualizer.close()


def link_pixels(scene, robot, vis, env: int) -> np.ndarray:
    """Projected pixels (n_links, 2) of one env's link origins, in its cell."""
    pos = robot.get_links_pos()[env] + scene.envs_offset()[env]
    return vis.camera.project(pos)


def window(img: np.ndarray, px, r: int = 4) -> np.ndarray:
    x, y = int(px[0]), int(px[1])
    return img[max(y - r, 0): y + r + 1, max(x - r, 0): x + r + 1].reshape(-1, 3).astype(int)


def test_image_shape_and_frame_from_render(setup):
    _, _, vis, first, _ = setup
    assert first.shape == (RES[1], RES[0], 3) and first.dtype == np.uint8
    assert vis.render() is not None and vis.render().shape == first.shape
    assert vis.lod == "decimated"  # 16 envs: decimated by default


def test_every_env_cell_shows_its_robot(setup):
    scene, robot, vis, _, background = setup
    img = vis.render()
    for env in range(N_ENVS):
        px = link_pixels(scene, robot, vis, env)
        assert np.all((px >= 0) & (px < RES)), f"env {env}: robot projects outside the image"
        changed = [np.abs(window(img, p) - window(background, p)).max(axis=1) > 40 for p in px]
        hits = sum(int(c.any()) for c in changed)
        assert hits >= len(px) - 2, f"env {env}: only {hits}/{len(px)} links show robot pixels"
    # far from every robot (the top image rows are sky) nothing changed
    np.testing.assert_array_equal(img[:20], background[:20])


def axis_tips(vis, T_world: np.ndarray, length: float) -> np.ndarray:
    """Pixels (3, 2) of points 80% along the x, y and z axes of a frame at T_world."""
    pts = T_world[:3, 3] + 0.8 * length * T_world[:3, :3].T
    return vis.camera.project(pts)


def dominant(img: np.ndarray, px, channel: int, r: int = 2) -> bool:
    pix = window(img, px, r)
    others = np.delete(pix, channel, axis=1)
    return bool(np.any(pix[:, channel] - others.max(axis=1) > 80))


def test_debug_frame_axes_appear_where_the_pose_projects_and_clear(setup):
    scene, _, vis, _, _ = setup
    before = vis.render()
    length = 0.3
    R = pose_to_matrix(np.zeros(3), [np.cos(0.3), 0.0, 0.0, np.sin(0.3)])  # turned 0.6 rad about z
    T = R.copy()
    T[:3, 3] = (0.0, 0.0, FRAME_Z)
    T_all = np.tile(T, (N_ENVS, 1, 1))
    handle = scene.draw_debug_frame(T_all, axis_length=length, axis_radius=0.012, origin_size=0.02)
    img = vis.render()
    offsets = scene.envs_offset()
    for env in range(N_ENVS):
        Tw = T.copy()
        Tw[:3, 3] += offsets[env]
        for axis, px in enumerate(axis_tips(vis, Tw, length)):
            assert dominant(img, px, axis), f"env {env}: axis {'xyz'[axis]} not drawn at pixel {px.round(1)}"
            assert not dominant(before, px, axis)
    scene.clear_debug_object(handle)
    assert not handle.is_drawn
    after = vis.render()
    np.testing.assert_array_equal(after, before)


def test_moved_handle_is_redrawn_without_rebuilding_meshes(setup):
    scene, _, vis, _, _ = setup
    T = np.eye(4)
    T[:3, 3] = (0.0, 0.0, FRAME_Z)
    handle = scene.draw_debug_frame(T, axis_length=0.3, axis_radius=0.012, env_idx=N_ENVS - 1)
    vis.render()
    n_meshes = len(vis._thread.gl.nodes)
    offset = scene.envs_offset()[N_ENVS - 1]
    T2 = T.copy()
    T2[:3, 3] += (0.0, 0.3, 0.0)
    handle.T = T2
    scene.update_debug_objects()
    img = vis.render()
    assert len(vis._thread.gl.nodes) == n_meshes  # same meshes, new instance poses
    Tw = T2.copy()
    Tw[:3, 3] += offset
    for axis, px in enumerate(axis_tips(vis, Tw, 0.3)):
        assert dominant(img, px, axis)
    scene.clear_debug_objects()


def test_tinted_env_changes_colour_and_untinting_restores_it(setup):
    scene, robot, vis, _, _ = setup
    before = vis.render()
    env, other = 5, 6
    vis.set_env_tint([env], (1.0, 0.0, 0.0, 1.0))
    img = vis.render()
    red = [dominant(img, p, 0, r=3) for p in link_pixels(scene, robot, vis, env)]
    assert sum(red) >= 5, f"tinted env {env}: only {sum(red)} links look red"
    for p in link_pixels(scene, robot, vis, env):
        assert not dominant(before, p, 0, r=3)
    other_px = link_pixels(scene, robot, vis, other)
    for p in other_px:
        np.testing.assert_array_equal(window(img, p), window(before, p))
    vis.set_env_tint(None, None)
    np.testing.assert_array_equal(vis.render(), before)


def test_set_env_tint_validates(setup):
    _, _, vis, _, _ = setup
    with pytest.raises(IndexError, match="envs_idx"):
        vis.set_env_tint([N_ENVS], (1, 0, 0))
    with pytest.raises(ValueError, match="rgba"):
        vis.set_env_tint([0], (2, 0, 0))
    with pytest.raises(ValueError, match="rgba"):
        vis.set_env_tint([0], (1, 0))


def test_renderer_runs_in_its_own_thread(setup):
    _, _, vis, _, _ = setup
    fut = vis.request_frame()
    img = fut.result(timeout=60)
    assert img.shape == (RES[1], RES[0], 3)
    assert vis.render_thread_id is not None and vis.render_thread_id != threading.get_ident()
    gl_thread = vis._thread.submit(lambda gl: threading.get_ident()).result(timeout=60)
    assert gl_thread == vis.render_thread_id
    # frames may be requested from another thread too (the GUI's)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("img", vis.request_frame().result(timeout=60)))
    t.start()
    t.join(60)
    np.testing.assert_array_equal(out["img"], img)


def test_projection_matches_a_rendered_sphere(setup):
    scene, _, vis, _, _ = setup
    cam = vis.camera
    before = vis.render()
    p = np.array([0.3, -0.2, FRAME_Z])
    handle = scene.draw_debug_sphere(p, radius=0.03, color=(0.0, 1.0, 1.0, 1.0), env_idx=0)
    img = vis.render()
    diff = np.abs(img.astype(int) - before.astype(int)).max(axis=2) > 40
    ys, xs = np.nonzero(diff)
    center = np.array([xs.mean() + 0.5, ys.mean() + 0.5])
    np.testing.assert_allclose(center, cam.project(p + scene.envs_offset()[0]), atol=1.5)
    scene.clear_debug_object(handle)


def test_camera_resolution_change_rerenders(setup):
    _, _, vis, _, _ = setup
    cam = vis.camera
    old = cam.res
    try:
        cam.res = (320, 181)
        assert vis.render().shape == (181, 320, 3)
    finally:
        cam.res = old
    assert vis.render().shape == (old[1], old[0], 3)


def test_lod_decimation_caps_faces():
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=5)  # 20480 faces
    small = vis_meshes.cluster_vertices(mesh, 1500)
    assert 300 < len(small.faces) <= 1500
    np.testing.assert_allclose(small.bounds, mesh.bounds, atol=0.1)
    assert len(vis_meshes.decimate(mesh, 2000).faces) <= 2000 * 1.1
    assert vis_meshes.decimate(mesh, 10**6) is mesh


def test_decimating_a_triangle_soup_keeps_its_surface():
    """An STL repeats every vertex per triangle: decimated as it is, quadric decimation collapsed its
    unshared edges into slivers (a tenth of the area left); its vertices are merged first."""
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=4)  # 5120 faces
    soup = trimesh.Trimesh(mesh.vertices[mesh.faces].reshape(-1, 3), np.arange(3 * len(mesh.faces)).reshape(-1, 3),
                           process=False)
    assert vis_meshes.repeats_vertices(soup) and not vis_meshes.repeats_vertices(mesh)
    out = vis_meshes.decimate(soup, 500)
    assert len(out.faces) <= 550
    assert abs(out.area / mesh.area - 1.0) < 0.05


def test_visualizer_rejects_bad_options(setup):
    scene = setup[0]
    with pytest.raises(ValueError, match="lod"):
        Visualizer(scene, lod="low")
    with pytest.raises(TypeError, match="camera"):
        Visualizer(scene, camera="front")
    with pytest.raises(ValueError, match="res"):
        Camera(res=(0, 10))


def test_closed_visualizers_leave_nothing_behind_in_pyopengl():
    """Guards engine/vis/renderer.py's patch of OpenGL.contextdata (context ids by address): a
    visualizer that is opened, draws and is closed adds nothing to PyOpenGL's per-context tables,
    and the process's memory stays flat over 60 such cycles (each leaked ~55 KB before, so ~0.8 MB
    in every block of 15). A leak grows every block; one-off growth (an allocator arena, a cache
    filling) does not, so the least growth of four blocks is what is judged, each block ended by a
    full garbage collection. Before it, what the closed scenes left (their trimesh meshes hold
    cycles) has waited for the engine's own collections only (engine.runtime.garbage, every 4
    closes): a block grew the memory by 0-3 MB (the first, 56-75 MB without them). In a fresh
    process, whose memory is the visualizers' alone."""
    r = in_fresh_process("test_vis_render", "visualizer_cycles")
    assert r["tables_after"] <= r["tables_before"], "PyOpenGL keeps data of closed GL contexts"
    assert r["ids_are_addresses"], "context ids are not addresses"
    growth = np.diff(r["rss"])
    assert growth.min() < 0.4, f"RSS grew in every block of 15 visualizer cycles: {np.round(growth, 2)} MB (a leak)"
    waiting = np.array(r["rss_uncollected"]) - np.array(r["rss"][:-1])
    assert waiting.max() < 20, f"RSS grew {np.round(waiting, 1)} MB in blocks of 15 cycles before a full collection"
    assert r["collections"] >= 60 // 4, r["collections"]  # the engine collected along the way (every 4 closes)


def visualizer_cycles() -> dict:
    """20 warm-up cycles of a visualizer opened, drawn and closed, then 4 blocks of 15: PyOpenGL's
    context tables before and after, the RSS (MiB) before each block and after the last (each block
    ended by a full collection), the RSS at the end of each block before that collection, and how
    many full collections the engine ran in the blocks."""
    import gc

    from OpenGL import contextdata

    from engine.runtime import garbage

    engine.init(backend="cpu", precision="32")

    def cycle():
        scene = engine.Scene()
        scene.add_entity(morphs.MJCF(file="panda"))
        scene.build(n_envs=4)
        scene.visualizer.render()
        scene.destroy()

    for _ in range(20):  # warm-up: meshes cached, allocator pools filled
        cycle()
    tables = sum(len(t) for t in contextdata.STORAGES)
    rss, collections, uncollected = [rss_mb()], [], []
    engine_let_go = garbage.let_go

    def counted(nbytes, close=True):  # the engine's own collections
        done = engine_let_go(nbytes, close)
        collections.extend([1] if done else [])
        return done

    garbage.let_go = counted
    for _ in range(4):
        for _ in range(15):
            cycle()
        uncollected.append(rss_mb())
        gc.collect()
        rss.append(rss_mb())
    return {"tables_before": tables, "tables_after": sum(len(t) for t in contextdata.STORAGES), "rss": rss,
            "rss_uncollected": uncollected, "collections": len(collections),
            "ids_are_addresses": all(isinstance(k, int) for t in contextdata.STORAGES for k in t)}


def test_a_tint_marks_the_robots_and_leaves_obstacles_their_colour(setup):
    """set_env_tint colours the robots of an env (the app's failure red, collision magenta); a fixed
    body in that env (an obstacle the answer may hit) is drawn in its own colour all the same."""
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    box = scene.add_entity(morphs.Box(pos=(0.0, -0.45, 0.2), size=(0.2, 0.2, 0.4), fixed=True))
    scene.build(n_envs=2, env_spacing=(1.5, 1.5))
    vis = Visualizer(scene, res=(640, 360))
    scene.visualizer = vis
    try:
        before = vis.render()
        vis.set_env_tint([1], (0.0, 0.0, 1.0, 1.0))
        img = vis.render()
        centre = box.get_pos()[1] + scene.envs_offset()[1]
        px = vis.camera.project(np.asarray(centre, float)[None])[0]
        assert 0 <= px[0] < 640 and 0 <= px[1] < 360
        np.testing.assert_array_equal(window(img, px), window(before, px))  # the box: as it was
        blue = [dominant(img, p, 2, r=3) for p in link_pixels(scene, robot, vis, 1)]
        assert sum(blue) >= 5, f"the robot of the tinted env: only {sum(blue)} links look blue"
    finally:
        scene.destroy()


def test_scenes_dropped_without_destroy_do_not_pile_up_render_threads():
    """A script that builds and draws scene after scene and never calls destroy(): each dropped
    scene's visualizer keeps its render thread, GL context and meshes until a garbage collection
    finds the scene's cycle, and the interpreter's own full collections came rarely (20 dropped
    scenes grew a process 130 -> 1138 MB). A new visualizer collects first once
    garbage.GC_AT_OPEN threads are open, so they stay bounded."""
    import gc

    from engine.runtime import garbage
    from engine.vis import renderer

    assert garbage.GC_AT_OPEN <= 8  # a few scenes' worth, not dozens
    gc.collect()
    before = renderer.open_threads()
    gc.disable()  # only the engine's collections may free them
    try:
        for _ in range(3 * garbage.GC_AT_OPEN):
            scene = engine.Scene()
            scene.add_entity(morphs.MJCF(file="panda"))
            scene.build(n_envs=2)
            scene.visualizer.render()
            del scene
            assert renderer.open_threads() <= max(before, garbage.GC_AT_OPEN) + 1
    finally:
        gc.enable()
