"""Datasets that can be trusted (issue 26): parts checked against the SHA-256 the manifest
records, inputs fingerprinted as read (the targets' bytes, obstacle and robot meshes, backend),
manifests validated, unique output columns, and input errors that name file, column and row.

A small robot (two hinges, a mesh collision geometry) and the generic solver keep each job to a
second or so; Panda jobs reuse the compiled per-robot solver that the other batch tests use.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _batch import read_sorted

import engine
import engine.batch
from engine.batch import manifest as mf
from engine.batch import targets as targets_mod
from engine.batch.verify import verify
from engine.errors import InvalidTypeError, InvalidValueError, StateError

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

REPO = Path(__file__).resolve().parent.parent
GENERIC = {"kernel": "generic", "max_samples": 4}

URDF = """<robot name="twohinge">
  <link name="base"/>
  <link name="upper"><collision><geometry><mesh filename="box.obj"/></geometry></collision></link>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="tip"/><origin xyz="0.5 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""


def _box_obj(path: Path, size: float = 0.1) -> None:
    import trimesh

    trimesh.creation.box(extents=[size] * 3).export(path)


@pytest.fixture(scope="module")
def robot_dir(tmp_path_factory):
    engine.init(backend="cpu")
    folder = tmp_path_factory.mktemp("twohinge")
    _box_obj(folder / "box.obj")
    (folder / "twohinge.urdf").write_text(URDF)
    return folder


def _targets(n: int, seed: int = 0) -> pa.Table:
    """Tip positions on the arm's reachable annulus (z = 0), no orientation."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-2.5, 2.5, n), rng.uniform(-2.5, 2.5, n)
    x = 0.5 * np.cos(a) + 0.0 * b
    y = 0.5 * np.sin(a)
    return pa.table({"x": x, "y": y, "z": np.zeros(n), "id": np.arange(n)})


def _solve(robot_dir, src, out, **kwargs):
    kwargs.setdefault("chunk", 50)
    return engine.batch.solve(str(robot_dir / "twohinge.urdf"), src, "upper", out, rot_mask=[0, 0, 0],
                              solver=kwargs.pop("solver", GENERIC), **kwargs)


@pytest.fixture()
def job(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(300), src)
    out = tmp_path / "out"
    _solve(robot_dir, src, out)
    return src, out, read_sorted(out)


# -- 1. parts are checked fully, not just their footer -----------------------------------------------------------


@pytest.mark.parametrize("damage", ["zeros_in_the_middle", "one_bit"])
def test_a_part_damaged_in_its_middle_is_named_and_solved_again(job, robot_dir, damage):
    src, out, reference = job
    part = out / "part-00004.parquet"
    data = bytearray(part.read_bytes())
    if damage == "one_bit":
        data[len(data) // 3] ^= 0x10
    else:
        data[200:200 + min(3000, len(data) - 400)] = bytes(min(3000, len(data) - 400))
    part.write_bytes(bytes(data))
    verdict = verify(out)
    assert not verdict.ok and any("part-00004.parquet: its bytes do not match" in p for p in verdict.problems)
    notes = []
    again = _solve(robot_dir, src, out, log=notes.append)
    assert again.chunks_solved == 1 and again.chunks_skipped == 5
    assert any("part-00004.parquet': its bytes do not match the SHA-256 the manifest records (damaged)" in n
               for n in notes), notes
    assert read_sorted(out).equals(reference)
    assert verify(out).ok


def test_a_part_renamed_to_another_index_is_named_as_such(job, robot_dir):
    src, out, reference = job
    os.unlink(out / "part-00003.parquet")
    os.rename(out / "part-00001.parquet", out / "part-00003.parquet")
    notes = []
    again = _solve(robot_dir, src, out, log=notes.append)
    assert again.chunks_solved == 2
    assert any("part-00003.parquet': it holds the bytes of part-00001.parquet (renamed or copied over)" in n
               for n in notes), notes
    assert read_sorted(out).equals(reference)


def test_a_part_the_manifest_never_recorded_is_solved_again(job, robot_dir):
    """A kill between a part's rename and the manifest's update leaves a part without a record."""
    src, out, reference = job
    data = json.loads((out / mf.MANIFEST).read_text())
    del data["parts"]["part-00002.parquet"]
    mf.write(out / mf.MANIFEST, data, "out")
    notes = []
    assert _solve(robot_dir, src, out, log=notes.append).chunks_solved == 1
    assert any("part-00002.parquet': the manifest has no record of it" in n for n in notes), notes
    assert read_sorted(out).equals(reference)


# -- 2, 3, 5. what was solved is fingerprinted ----------------------------------------------------------------------


def test_the_input_is_hashed_as_read_not_as_it_is_afterwards(tmp_path, robot_dir, monkeypatch):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(300), src)
    old_sha = hashlib.sha256(src.read_bytes()).hexdigest()
    replacement = tmp_path / "t2.parquet"
    pq.write_table(_targets(300, seed=9), replacement)
    real = targets_mod.pa_modules

    class ReplacingPq:  # the file is replaced right after the rows are read
        def __getattr__(self, name):
            return getattr(real()[1], name)

        @staticmethod
        def read_table(*args, **kwargs):
            table = real()[1].read_table(*args, **kwargs)
            shutil.copyfile(replacement, src)
            return table

    monkeypatch.setattr(targets_mod, "pa_modules", lambda: (real()[0], ReplacingPq()))
    out = tmp_path / "out"
    _solve(robot_dir, src, out)
    monkeypatch.undo()
    manifest = json.loads((out / mf.MANIFEST).read_text())
    assert manifest["input"]["sha256"] == old_sha  # the bytes that were solved
    with pytest.raises(InvalidValueError, match=r"holds another job's parts: the input .* read from"):
        _solve(robot_dir, src, out)  # the new file: refused, not resumed into a mixed dataset


def test_a_changed_obstacle_mesh_or_robot_mesh_refuses_the_resume_naming_the_file(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(100), src)
    robot = tmp_path / "robot"
    shutil.copytree(robot_dir, robot)
    _box_obj(tmp_path / "wall.obj", 0.2)
    scene = tmp_path / "obstacles.yaml"
    scene.write_text("robot: panda\nobstacles:\n  - {kind: mesh, file: wall.obj, pos: [2, 2, 0]}\n")
    out = tmp_path / "out"
    _solve(robot, src, out, obstacles=scene)
    settings = json.loads((out / mf.MANIFEST).read_text())["settings"]
    assert set(settings["files"]) == {"robot:box.obj", "obstacles:wall.obj"}
    _box_obj(tmp_path / "wall.obj", 0.3)
    with pytest.raises(InvalidValueError, match=r"the file obstacles:wall.obj \(sha256 \w+ there, \w+ now\)"):
        _solve(robot, src, out, obstacles=scene)
    _box_obj(tmp_path / "wall.obj", 0.2)
    _box_obj(robot / "box.obj", 0.15)
    with pytest.raises(InvalidValueError, match=r"the file robot:box.obj \(sha256 \w+ there, \w+ now\)"):
        _solve(robot, src, out, obstacles=scene)
    _box_obj(robot / "box.obj", 0.1)
    assert _solve(robot, src, out, obstacles=scene).chunks_skipped == 2  # the same files again: resumed


def _cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "app", "solve", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_a_cpu_job_cannot_be_resumed_on_another_backend(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(100), src)
    out = tmp_path / "out"
    _solve(robot_dir, src, out)
    assert json.loads((out / mf.MANIFEST).read_text())["settings"]["backend"] == "cpu"
    done = _cli(str(robot_dir / "twohinge.urdf"), "--link", "upper", "--rot-mask", "0,0,0", "--targets", str(src),
                "--out", str(out), "--chunk", "50", "--kernel", "generic", "--max-samples", "4", "--backend", "vulkan",
                "--no-progress")
    assert done.returncode == 1, done.stderr
    assert "holds another job's parts: backend ('cpu' there, 'vulkan' now)" in done.stderr


# -- 4. unique output columns -------------------------------------------------------------------------------------


def test_two_joints_that_would_share_a_column_are_refused_by_name(tmp_path):
    xml = tmp_path / "clash.xml"
    xml.write_text("""<mujoco><worldbody><body name="a"><freejoint name="b"/><geom size=".1"/>
      <body name="c" pos="0 0 .2"><joint name="b_x" type="hinge"/><geom size=".1"/></body></body>
      </worldbody></mujoco>""")
    with pytest.raises(InvalidValueError, match=r"joints 'b' and 'b_x' .* both map to the output column 'q_b_x'"):
        engine.batch.solve(str(xml), _targets(10), "c", tmp_path / "out", rot_mask=[0, 0, 0])
    assert not (tmp_path / "out").exists()


# -- 6, 7. manifests: a stale temporary file, a wrong shape, damage --------------------------------------------------


def test_a_stale_manifest_temporary_file_does_not_wedge_the_folder(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(100), src)
    out = tmp_path / "out"
    out.mkdir()
    (out / "._ikstudio_solve.json.tmp-12345").write_text('{"format": "ikstud')  # a disk-full write's leftover
    assert _solve(robot_dir, src, out).chunks_solved == 2
    assert not list(out.glob("._ikstudio_solve.json.tmp-*"))


@pytest.mark.parametrize("edit, key", [
    (lambda m: m.pop("input"), "input"),
    (lambda m: m.__setitem__("input", ["a"]), "input"),
    (lambda m: m["input"].__setitem__("rows", "300"), "input.rows"),
    (lambda m: m["settings"].__setitem__("chunk", None), "settings.chunk"),
    (lambda m: m["settings"].__setitem__("robot", "x"), "settings.robot"),
    (lambda m: m.__setitem__("parts", []), "parts"),
    (lambda m: m.__setitem__("parts", {"part-00000.parquet": "abc"}), "parts.part-00000.parquet"),
    (lambda m: m.__setitem__("chunks", 0), "chunks"),
])
def test_a_manifest_of_the_wrong_shape_is_refused_naming_the_key(job, robot_dir, edit, key):
    src, out, _ = job
    data = json.loads((out / mf.MANIFEST).read_text())
    edit(data)
    (out / mf.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(InvalidValueError) as err:
        _solve(robot_dir, src, out)
    assert f"manifest '{out / mf.MANIFEST}'" in str(err.value) and f"key {key} " in str(err.value), str(err.value)
    with pytest.raises(InvalidValueError, match=f"key {key} "):
        verify(out)


@pytest.mark.parametrize("content", ["[]", '"text"', "null", "{"])
def test_a_manifest_that_is_no_object_is_refused_naming_it(job, robot_dir, content):
    src, out, _ = job
    (out / mf.MANIFEST).write_text(content)
    with pytest.raises(InvalidValueError, match=r"manifest '.*_ikstudio_solve.json': (expected a JSON object|not "
                                                r"valid JSON)"):
        _solve(robot_dir, src, out)


def test_an_edited_manifest_fails_its_checksum(job, robot_dir):
    src, out, _ = job
    data = json.loads((out / mf.MANIFEST).read_text())
    data["input"]["rows"] = 301
    (out / mf.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(InvalidValueError, match="its checksum does not match its contents: the file is damaged"):
        _solve(robot_dir, src, out)


# -- 15, 16, 20. input errors that say what and where ----------------------------------------------------------------


def test_a_target_beyond_the_float32_range_is_refused_at_input_naming_file_column_and_row(tmp_path, robot_dir):
    table = _targets(9500)
    x = table.column("x").to_numpy().copy()
    x[9000] = 1e39
    src = tmp_path / "t.parquet"
    pq.write_table(table.set_column(0, "x", pa.array(x)), src)
    with pytest.raises(InvalidValueError, match=rf"{src}: column 'x': 1e\+39 in row 9000 is beyond the engine's "
                                                r"float range"):
        _solve(robot_dir, src, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_uint64_column_past_2_63_is_read_as_its_value():
    table = _targets(3).set_column(0, "x", pa.array(np.array([1, 2, 2**63 + 5], np.uint64)))
    data = targets_mod.load_targets(table, ["upper"], [True], [False], set())
    assert data.pos[0][2, 0] == float(2**63 + 5)


@pytest.mark.parametrize("n", [40_000, 150_000])  # within pyarrow's first block (a text column) / past it
def test_a_bad_value_deep_in_a_csv_names_column_and_row(tmp_path, n):
    lines = ["x,y,z"] + [f"{i * 1e-5:.5f},0.1,0.2" for i in range(n)]
    lines[1 + 31_234 + (n - 40_000)] = "0.1,oops,0.2"
    src = tmp_path / "t.csv"
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidValueError, match=rf"t.csv: column 'y': 'oops' in row {31_234 + n - 40_000} is not a "
                                                "number"):
        targets_mod.load_targets(str(src), ["upper"], [True], [False], set())


def test_numpy_integers_are_integers_and_out_none_is_named(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(100), src)
    summary = _solve(robot_dir, src, tmp_path / "out", chunk=np.int64(50), seed=np.int64(5))
    assert summary.chunks == 2
    assert json.loads((tmp_path / "out" / mf.MANIFEST).read_text())["settings"]["seed"] == 5
    with pytest.raises(InvalidTypeError, match="out: expected the path of the output folder, got None"):
        _solve(robot_dir, src, None)


def test_an_out_path_through_a_file_names_the_option_and_the_path(tmp_path, robot_dir):
    src = tmp_path / "t.parquet"
    pq.write_table(_targets(100), src)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(OSError, match=rf"--out: cannot make the output folder '{tmp_path / 'afile' / 'sub'}': Not a "
                                      "directory"):
        _solve(robot_dir, src, tmp_path / "afile" / "sub", labels={"out": "--out"})


# -- 21. IK before build() and after destroy() -----------------------------------------------------------------------


def test_ik_before_build_and_after_destroy_is_one_clear_error(robot_dir):
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.URDF(file=robot_dir / "twohinge.urdf", fixed=True))
    calls = [lambda: robot.inverse_kinematics("tip", pos=[0.5, 0, 0]),
             lambda: robot.inverse_kinematics_multilink(["tip"], poss=[[0.5, 0, 0]]),
             lambda: robot.solve_ik([])]
    for call in calls:
        with pytest.raises(StateError, match=r"the scene is not built: call scene.build\(\) first"):
            call()
    scene.build()
    assert robot.inverse_kinematics("tip", pos=[0.5, 0.5, 0], rot_mask=[0, 0, 0], kernel="generic").shape == (2,)
    scene.destroy()
    for call in calls:
        with pytest.raises(StateError, match=r"the scene was destroyed"):
            call()
