"""IK Studio engine: batched forward kinematics, Jacobians and inverse kinematics in taichi.

    import engine as ik
    ik.init(backend="gpu")
    scene = ik.Scene()
    robot = scene.add_entity(ik.morphs.MJCF(file="assets/panda/panda.xml"))
    scene.build(n_envs=16)
"""

# isort: off
from .runtime import backend  # first: sets taichi's environment before anything imports taichi
# isort: on
from . import assets, errors, materials, model, morphs, options, surfaces, tools, utils
from .entity import RigidEntity
from .errors import IKStudioError
from .genesis_names import destroy
from .ik import IKResult, limits, tasks
from .runtime.backend import init
from .scene import Scene
from .scene import set_visualizer_factory as _set_visualizer_factory


def _make_visualizer(scene):
    """The default visualizer seam (engine.scene): engine.vis is imported only when a scene first
    needs a visualizer, so a headless run never loads the renderer."""
    from .vis import Visualizer

    return Visualizer(scene)


_set_visualizer_factory(_make_visualizer)


def __getattr__(name: str):
    """``engine.batch`` (datasets of IK solutions, a layer above the core) on first use, so that
    ``import engine`` loads neither it nor pyarrow."""
    if name == "batch":
        import importlib

        return importlib.import_module("engine.batch")
    from .genesis_names import module_attribute  # gs.device, gs.tc_float, ...: Genesis' runtime names

    return module_attribute(name)

# backend names as attributes, as Genesis scripts write them: ik.init(backend=ik.gpu)
gpu, cuda, vulkan, cpu = "gpu", "cuda", "vulkan", "cpu"

__all__ = ["IKResult", "IKStudioError", "RigidEntity", "Scene", "assets", "backend", "cpu", "cuda", "destroy", "errors",
           "gpu", "init", "limits", "materials", "model", "morphs", "options", "surfaces", "tasks", "tools", "utils",
           "vulkan"]
