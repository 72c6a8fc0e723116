"""Scripts written in the style of Genesis' IK examples (``tests/genesis_scripts/``) run unchanged
on this engine: each has ``import engine as gs`` as its only engine import, runs headless, and
checks every IK answer by forward kinematics itself (an ``assert`` fails the script).

What they cover between them: options (SimOptions, RigidOptions, ViewerOptions, VisOptions),
Plane, Mesh and Box targets moved by ``set_qpos``, surfaces and materials, ``return_error``,
``dofs_idx_local`` (other dofs kept bit-identical), batched and unbatched scenes, multilink IK,
a free body driven by IK through its first link, a hand URDF loaded without ``fixed=`` (a free
base, as in Genesis; its answers also judged by Pinocchio), targets made with
``engine.utils.geom`` shown by ``update_debug_objects(objs, poses)``, and a mesh found by a
Genesis asset path in a stand-in assets folder.
"""

from __future__ import annotations

import ast
import contextlib
import io
import runpy
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

SCRIPTS = Path(__file__).resolve().parent / "genesis_scripts"
NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py"))
MARKER = Path(__file__).resolve().parent.parent / "engine" / "data" / "meshes" / "axis.obj"


def test_the_scripts_are_there():
    expected = {"ik_panda_target", "ik_panda_batched", "ik_fingers_multilink", "ik_dofs_subset", "ik_free_body",
                "ik_hand_free_base", "ik_geom_debug_frames", "ik_genesis_asset_mesh", "ik_plan_grasp"}
    assert expected <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_genesis_style_script_imports_engine_as_gs_only(name):
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text(encoding="utf-8"))
    imports = [(alias.name, alias.asname) for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)], "no `from ... import` in a script"
    assert ("engine", "gs") in imports
    assert {name for name, _ in imports} <= {"engine", "numpy", "sys", "engine.utils.geom"}
    assert all(alias == "gu" for name, alias in imports if name == "engine.utils.geom")  # Genesis' spelling
    top = [n for n in tree.body if isinstance(n, ast.Import)]
    assert top == [n for n in tree.body[: len(top) + 1] if isinstance(n, ast.Import)], "imports come first"


def stand_in_assets(folder: Path) -> Path:
    """A stand-in for Genesis' assets folder, holding the project's own files under Genesis' paths
    (so CI needs no Genesis): ``meshes/duck.obj`` is the project's axis marker."""
    (folder / "meshes").mkdir(parents=True)
    shutil.copy(MARKER, folder / "meshes" / "duck.obj")
    return folder


def run_script(name: str, monkeypatch, tmp_path) -> dict:
    """Run one script as __main__ with $GENESIS_ASSETS on a stand-in folder; returns its globals."""
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS / f"{name}.py")])
    monkeypatch.setenv("GENESIS_ASSETS", str(stand_in_assets(tmp_path / "genesis_assets")))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        script_globals = runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="__main__")
    assert out.getvalue().strip().splitlines()[-1].startswith("ok:"), out.getvalue()
    return script_globals


@pytest.mark.parametrize("name", NAMES)
def test_a_genesis_style_script_runs_and_reaches_every_target(name, monkeypatch, tmp_path):
    run_script(name, monkeypatch, tmp_path)


def test_the_free_based_hand_answers_hold_by_pinocchio(monkeypatch, tmp_path):
    """The hand script's answers, judged by Pinocchio's FK of the same URDF: the free base's pose
    (qpos[:7]) composed with Pinocchio's fixed-base link poses puts each fingertip on its target."""
    from pinref import PinReference

    g = run_script("ik_hand_free_base", monkeypatch, tmp_path)
    hand, tips = g["hand"], g["tips"]
    assert hand.morph.fixed is False and len(g["answers"]) == 3
    ref = PinReference(hand.tree)
    for q, targets in g["answers"]:
        q = np.asarray(q, float)
        rots, poss = ref.link_poses(q)
        base_R = Rotation.from_quat(q[[4, 5, 6, 3]]).as_matrix()
        for tip, target in zip(tips, targets, strict=True):
            world = q[:3] + base_R @ poss[tip.idx_local]
            assert np.linalg.norm(world - target) < 1e-3, (tip.name, world, target)


def test_the_geom_scripts_answers_hold_by_mujoco(monkeypatch, tmp_path):
    """The debug-frame script's answers, judged by MuJoCo's FK of the same MJCF: the hand sits on
    the pose each frame was moved to with ``update_debug_objects(objs, poses)``."""
    import mujoco

    g = run_script("ik_geom_debug_frames", monkeypatch, tmp_path)
    m = mujoco.MjModel.from_xml_path(str(g["robot"].morph.file))
    d = mujoco.MjData(m)
    hand = m.body("hand").id
    assert len(g["answers"]) == 4
    for q, T in g["answers"]:
        d.qpos[:] = q
        mujoco.mj_kinematics(m, d)
        assert np.linalg.norm(d.xpos[hand] - T[:3, 3]) < 1e-3
        R = Rotation.from_quat(d.xquat[hand][[1, 2, 3, 0]]).as_matrix()
        assert np.linalg.norm(Rotation.from_matrix(T[:3, :3].T @ R).as_rotvec()) < 1e-2


def test_the_genesis_asset_mesh_answers_hold_by_its_free_joint(monkeypatch, tmp_path):
    """A free body's pose is its qpos (position, then the (w, x, y, z) quaternion): each answer is
    its target, read from qpos alone, and the mesh came from the stand-in assets folder."""
    g = run_script("ik_genesis_asset_mesh", monkeypatch, tmp_path)
    assert g["duck"].morph.file == (tmp_path / "genesis_assets" / "meshes" / "duck.obj").resolve()
    assert len(g["answers"]) == 3
    for q, pos, quat in g["answers"]:
        assert np.linalg.norm(q[:3] - pos) < 1e-3
        assert abs(np.dot(q[3:7] / np.linalg.norm(q[3:7]), quat)) > 1 - 1e-5
