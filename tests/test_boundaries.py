"""Module boundaries of the engine package (docs/design.md, "Layers").

* The kinematics core (every ``engine`` module outside ``engine.vis`` and ``engine.scenefile``)
  imports neither of them, not even lazily inside a function. The package root ``engine/__init__.py``
  is where the default visualizer is wired in: it may name ``engine.vis`` inside a function only.
* ``engine.vis`` never imports ``engine.scenefile``; the scene file modules import each other
  without a cycle, and the pydantic models build and check nothing.
* ``engine.batch`` (batch jobs) is a layer above both the core and ``engine.scenefile`` (whose
  solver settings it uses): nothing below imports it, it never imports ``engine.vis``, and
  ``import engine`` loads neither it nor pyarrow or Ray.
* The visualizer seam: a scene makes its visualizer through the one registered factory, on first
  use only; a headless run (FK, IK, set_qpos, step, a scene file's runner) never makes one, and
  never imports engine.vis or a GL library.

The import graph is read from the source with ``ast``, so an import inside a function counts as
much as one at the top of a file.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _imports import cycles, imports, module_name

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "engine"
LAYERS = ("engine.vis", "engine.scenefile", "engine.batch")


def _graph() -> dict[str, list[tuple[str, int, bool]]]:
    return {module_name(p): imports(p, "engine") for p in sorted(ENGINE.rglob("*.py")) if "data" not in p.parts}


def _in(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def test_the_import_reader_sees_lazy_and_relative_imports():
    found = imports(ENGINE / "__init__.py", "engine")
    assert any(target == "engine.vis" and not top for target, _, top in found)  # the factory's lazy import
    assert any(target == "engine.runtime.backend" and top for target, _, top in found)
    runner = {target for target, _, _ in imports(ENGINE / "scenefile" / "runner.py", "engine")}
    assert {"engine.scenefile.io", "engine.scenefile.models", "engine.scene", "engine.vis"} <= runner


def test_the_core_never_imports_the_visualizer_or_scene_files():
    bad = []
    for module, found in _graph().items():
        if module == "engine" or any(_in(module, layer) for layer in LAYERS):
            continue
        bad += [f"{module}:{line} imports {target}" for target, line, _ in found
                if any(_in(target, layer) for layer in LAYERS)]
    assert not bad, "the kinematics core reaches up into a layer above it:\n" + "\n".join(bad)


def test_the_package_root_names_the_visualizer_only_inside_its_factory():
    found = imports(ENGINE / "__init__.py", "engine")
    eager = [f"line {line}: {target}" for target, line, top in found
             if top and any(_in(target, layer) for layer in LAYERS)]
    assert not eager, "import engine must not load engine.vis or engine.scenefile: " + ", ".join(eager)
    assert not [t for t, _, _ in found if _in(t, "engine.scenefile")]


def _third_party_imports(path: Path) -> set[str]:
    """Top-level names of every non-engine module ``path`` imports (at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_only_the_viewer_opens_windows():
    """tkinter (the viewer window) is imported by engine.vis.viewer alone; no engine module imports a
    GUI toolkit of the app's (dearpygui) or a windowing library of its own."""
    windowing = {"tkinter", "dearpygui", "pyglet", "glfw", "PyQt5", "PySide6", "wx"}
    found = {}
    for path in sorted(ENGINE.rglob("*.py")):
        if "data" not in path.parts:
            used = _third_party_imports(path) & windowing
            if used:
                found[module_name(path)] = used
    assert found == {"engine.vis.viewer": {"tkinter"}}, found


def test_the_visualizer_never_imports_scene_files():
    bad = [f"{module}:{line} imports {target}" for module, found in _graph().items() if _in(module, "engine.vis")
           for target, line, _ in found if _in(target, "engine.scenefile")]
    assert not bad, "\n".join(bad)


def test_scenefile_modules_form_no_import_cycle():
    graph = _graph()
    edges = {module: {target for target, _, _ in found if _in(target, "engine.scenefile") and target != module}
             for module, found in graph.items() if _in(module, "engine.scenefile")}
    edges.pop("engine.scenefile")  # the package re-exports its modules; they never import it back:
    assert not [m for m, targets in edges.items() if "engine.scenefile" in targets]
    assert cycles(edges) == []
    assert edges["engine.scenefile.values"] <= {"engine.scenefile.errors", "engine.scenefile.patterns"}
    assert edges["engine.scenefile.models"] <= {"engine.scenefile.errors", "engine.scenefile.patterns",
                                                "engine.scenefile.values"}


def test_batch_jobs_are_a_layer_above_scene_files_and_never_draw():
    graph = _graph()
    below = [f"{module}:{line} imports {target}" for module, found in graph.items()
             if not _in(module, "engine.batch") for target, line, _ in found if _in(target, "engine.batch")
             and not (module == "engine" and target == "engine.batch")]
    assert not below, "\n".join(below)
    root = [top for target, _, top in imports(ENGINE / "__init__.py", "engine") if target == "engine.batch"]
    assert root == [False], "the package root names engine.batch only inside its lazy __getattr__"
    drawing = [f"{module}:{line} imports {target}" for module, found in graph.items() if _in(module, "engine.batch")
               for target, line, _ in found if _in(target, "engine.vis")]
    assert not drawing, "\n".join(drawing)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = ("import sys, engine; before = sorted(m for m in sys.modules if m.startswith(('engine.batch', 'pyarrow', "
            "'ray'))); engine.batch; print(before, 'engine.batch.runner' in sys.modules, 'ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["[]", "True", "False"], out.stdout


def test_scene_spec_models_hold_data_only():
    from engine.scenefile import SceneSpec

    for name in ("build", "check"):
        assert not hasattr(SceneSpec, name), f"SceneSpec.{name}: building and checking live in runner / io"


def test_the_cycle_finder_findscycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


# -- the visualizer seam ----------------------------------------------------------------------------

HEADLESS = r"""
import json, sys
import numpy as np
import engine
from engine import scenefile

engine.init(backend="cpu")
scene = engine.Scene()
robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
scene.build(n_envs=4)
hand = robot.get_link("hand")
q = robot.inverse_kinematics(link=hand, pos=np.tile([0.4, -0.2, 0.25], (4, 1)), quat=[0, 1, 0, 0],
                             rot_mask=[False, False, True], max_samples=2, kernel="generic")
robot.set_qpos(q)
robot.forward_kinematics(q)
robot.get_jacobian(link=hand)
robot.control_dofs_position(q)
scene.step()
scene.update_debug_objects()  # nothing drawn: nothing to do, and no visualizer made for it
scene.clear_debug_objects()
scene.reset()
bodies = engine.Scene(sim_options=engine.options.SimOptions(dt=0.02), show_viewer=False,
                      viewer_options=engine.options.ViewerOptions(camera_pos=(0, -2, 1.5)),
                      vis_options=engine.options.VisOptions(show_link_frame=True))
bodies.add_entity(engine.morphs.Plane())
box = bodies.add_entity(engine.morphs.Box(size=(0.1, 0.1, 0.1)), material=engine.materials.Kinematic(),
                        surface=engine.surfaces.Default(color=(1, 0, 0)))
marker = bodies.add_entity(engine.morphs.Mesh(file="meshes/axis.obj", scale=0.15))
bodies.build(n_envs=2)
box.set_qpos(np.array([0.1, 0.2, 0.3, 1, 0, 0, 0]))
marker.inverse_kinematics(link=marker.links[0], pos=[0.4, -0.2, 0.25], quat=[0, 1, 0, 0], max_samples=2)
bodies.step()
spec = scenefile.load(sys.argv[1])
file_scene, runner = scenefile.build(spec, n_envs=2)  # debug_frames on: drawn only into a visualizer
runner.run(2)
print(json.dumps({
    "has_visualizer": [scene.has_visualizer, file_scene.has_visualizer, bodies.has_visualizer],
    "made": [scene._visualizer is not None, file_scene._visualizer is not None, bodies._visualizer is not None],
    "modules": sorted(m for m in sys.modules if m == "engine.vis"
                      or m.startswith(("engine.vis.", "pyrender", "OpenGL", "imageio", "tkinter"))),
}))
"""


def test_a_headless_run_never_makes_a_visualizer_nor_imports_the_renderer():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", HEADLESS, str(REPO / "scenes" / "batched_panda.yaml")],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["has_visualizer"] == [False] * 3 and report["made"] == [False] * 3
    assert report["modules"] == [], f"a headless run imported {report['modules']}"


class _FakeVisualizer:
    """Stands in for engine.vis.Visualizer behind the seam: records what the scene passes through."""

    def __init__(self, scene):
        self.scene = scene
        self.calls: list = []
        self.closed = False

    def close(self):
        self.closed = True

    def take_over(self, previous):
        self.calls.append(("take_over", previous))
        previous.close()

    def __getattr__(self, name):
        if not name.startswith(("draw_debug_", "update_debug", "clear_debug")):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs)) or len(self.calls)


@pytest.fixture
def scene():
    import engine

    engine.init(backend="cpu")
    s = engine.Scene()
    s.add_entity(engine.morphs.MJCF(file="panda"))
    s.build()
    yield s
    s.destroy()


def test_the_scene_makes_its_visualizer_once_through_the_registered_factory(scene, monkeypatch):
    import engine.scene as scene_mod

    made = []
    monkeypatch.setattr(scene_mod, "_visualizer_factory", lambda s: made.append(_FakeVisualizer(s)) or made[-1])
    assert not scene.has_visualizer
    scene.update_debug_objects()
    scene.clear_debug_objects()
    assert made == []  # nothing drawn: nothing made
    with pytest.raises(ValueError, match="not drawn in this scene"):
        scene.clear_debug_object(object())
    assert made == [] and not scene.has_visualizer

    handle = scene.draw_debug_frame("T", 0.2, env_idx=1)  # Genesis' names pass everything through
    scene.draw_debug_sphere("p", radius=0.1)
    scene.update_debug_objects()
    scene.clear_debug_object(handle)
    scene.clear_debug_objects()
    (vis,) = made
    assert scene.has_visualizer and scene.visualizer is vis
    assert vis.calls == [("draw_debug_frame", ("T", 0.2), {"env_idx": 1}),
                         ("draw_debug_sphere", ("p",), {"radius": 0.1}), ("update_debug_objects", (), {}),
                         ("clear_debug_object", (1,), {}), ("clear_debug_objects", (), {})]

    other = _FakeVisualizer(scene)
    scene.visualizer = other  # a replacement adopts the old one's drawings and closes it
    assert scene.visualizer is other and other.calls == [("take_over", vis)] and vis.closed
    with pytest.raises(TypeError, match="made for this scene"):
        scene.visualizer = _FakeVisualizer(object())
    assert scene.visualizer is other
    scene.destroy()
    assert other.closed


def test_without_a_factory_a_visualizer_is_a_clear_error(scene, monkeypatch):
    import engine.scene as scene_mod

    monkeypatch.setattr(scene_mod, "_visualizer_factory", None)
    with pytest.raises(RuntimeError, match="no visualizer factory"):
        scene.draw_debug_sphere([0, 0, 0])
    assert not scene.has_visualizer
    with pytest.raises(TypeError, match="callable"):
        scene_mod.set_visualizer_factory("engine.vis")


def test_the_default_factory_makes_an_engine_vis_visualizer(scene):
    vis = scene.visualizer
    assert type(vis).__module__ == "engine.vis.visualizer" and vis.scene is scene
    assert scene.visualizer is vis
