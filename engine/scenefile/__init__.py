"""Scene files: YAML descriptions of a robot, its envs, IK targets and their motion, camera and recording.

Layers, each importing only those before it: ``errors`` and ``patterns`` (no engine), ``models``
(pydantic data and validation), ``io`` (YAML, checks that need the robot), ``runner`` (building a
scene from a spec and playing it). The engine core never imports this package.

    from engine import scenefile
    spec = scenefile.load("scenes/batched_panda.yaml")   # SceneFileError names file, key path, problem
    scene, runner = scenefile.build(spec)                # n_envs=, debug_frames= optional
    frame = runner.step()                                # one batched IK call per target group
    scenefile.save(spec, "copy.yaml")
"""

from .errors import Issue, SceneFileError
from .io import check_spec, dumps, load, loads, save, spec_issues, to_dict
from .models import (
    BoxObstacle,
    CameraSpec,
    CapsuleObstacle,
    CircleMotion,
    CylinderObstacle,
    EnvsSpec,
    Figure8Motion,
    KeyframesMotion,
    KeyPose,
    MeshObstacle,
    OffsetMotion,
    PlaneObstacle,
    RecordSpec,
    RobotSpec,
    SceneSpec,
    SolverSpec,
    SphereObstacle,
    TargetSpec,
)
from .runner import Runner, RunnerFrame, build

__all__ = ["BoxObstacle", "CameraSpec", "CapsuleObstacle", "CircleMotion", "CylinderObstacle", "EnvsSpec",
           "Figure8Motion", "Issue", "KeyPose", "KeyframesMotion", "MeshObstacle", "OffsetMotion", "PlaneObstacle",
           "RecordSpec", "RobotSpec", "Runner", "RunnerFrame", "SceneFileError", "SceneSpec", "SolverSpec",
           "SphereObstacle", "TargetSpec", "build", "check_spec", "dumps", "load", "loads", "save", "spec_issues",
           "to_dict"]
