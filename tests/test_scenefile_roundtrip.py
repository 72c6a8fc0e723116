"""save() then load() gives an equal spec; key order survives; paths resolve relative to the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import scenefile
from engine.scenefile import SceneSpec

REPO = Path(__file__).resolve().parent.parent
SCENES = sorted((REPO / "scenes").glob("*.yaml"))


@pytest.mark.parametrize("path", SCENES, ids=[p.stem for p in SCENES])
def test_save_then_load_is_equal(tmp_path, path):
    spec = scenefile.load(path)
    out = tmp_path / path.name
    scenefile.save(spec, out)
    again = scenefile.load(out)
    assert again == spec
    # the keys come back in the file's order
    original, saved = yaml.safe_load(path.read_text()), yaml.safe_load(out.read_text())
    assert list(saved) == list(original)
    assert list(saved["targets"][0]) == list(original["targets"][0])


def test_key_order_of_the_file_is_kept_not_the_models(tmp_path):
    text = ("targets:\n  - pos: [0.4, 0.0, 0.3]\n    link: hand\nenvs:\n  env_spacing: [2.0, 2.0]\n  n_envs: 2\n"
            "robot: panda\n")
    src = tmp_path / "a.yaml"
    src.write_text(text)
    spec = scenefile.load(src)
    spec.envs.n_envs = 3  # an edit keeps the order too
    scenefile.save(spec, tmp_path / "b.yaml")
    assert (tmp_path / "b.yaml").read_text() == text.replace("n_envs: 2", "n_envs: 3")


def test_only_given_keys_are_written():
    spec = SceneSpec(robot="panda", targets=[{"link": "hand", "pos": [0.4, 0.0, 0.3]}])
    assert scenefile.dumps(spec) == "robot: panda\ntargets:\n  - link: hand\n    pos: [0.4, 0.0, 0.3]\n"
    assert scenefile.loads(scenefile.dumps(spec)) == spec


def test_paths_resolve_relative_to_the_file_and_are_rebased_on_save(tmp_path):
    (tmp_path / "robots").mkdir()
    robot = tmp_path / "robots" / "arm.xml"
    robot.write_text((REPO / "assets" / "panda" / "panda.xml").read_text())
    (tmp_path / "scenes").mkdir()
    src = tmp_path / "scenes" / "s.yaml"
    src.write_text("robot: ../robots/arm.xml\ntargets:\n  - {link: hand, pos: [0.4, 0.0, 0.3]}\n"
                   "record: {output: ../videos/out.mp4}\n")
    spec = scenefile.load(src)
    assert spec.resolve_path(spec.robot.file) == robot.resolve()
    assert spec.resolve_path(spec.record.output) == (tmp_path / "videos" / "out.mp4").resolve()
    scene, runner = scenefile.build(spec, debug_frames=False)
    assert runner.robot.morph.file == robot.resolve()
    scene.destroy()
    # saved one folder up: the relative paths follow
    scenefile.save(spec, tmp_path / "moved.yaml")
    moved = scenefile.load(tmp_path / "moved.yaml")
    assert moved.robot.file == "robots/arm.xml" and moved.record.output == "videos/out.mp4"
    assert moved.resolve_path(moved.robot.file) == robot.resolve()


def test_equality_is_by_value():
    a = SceneSpec(robot="panda", envs={"n_envs": 2})
    b = SceneSpec.model_validate({"envs": {"n_envs": 2}, "robot": {"file": "panda"}})
    assert a == b
    assert a != SceneSpec(robot="panda", envs={"n_envs": 3})


# -- Hypothesis: valid specs survive the round trip -------------------------------------------------

# No subnormals: taichi's CPU backend turns on flush-to-zero in this process, so they do not survive parsing.
def fl(lo: float, hi: float):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


finite = fl(-2.0, 2.0)
vec3 = st.lists(finite, min_size=3, max_size=3)
quat = st.lists(finite, min_size=4, max_size=4).filter(lambda q: sum(x * x for x in q) > 1e-3)
mask = st.lists(st.booleans(), min_size=3, max_size=3)
rot_mask = mask.filter(lambda m: sum(m) != 2)
positive = fl(0.01, 10.0)
seed = st.integers(0, 2**31 - 1)


def _motion():
    circle = st.fixed_dictionaries({"type": st.just("circle")}, optional={
        "radius": positive, "center": vec3, "plane": st.sampled_from(["xy", "yz", "xz"]),
        "speed": st.tuples(finite, finite).map(sorted), "phase": finite, "seed": seed})
    offset = st.fixed_dictionaries({"type": st.just("offset"), "grid": st.lists(fl(0, 1), min_size=3,
                                                                                 max_size=3)})
    figure8 = st.fixed_dictionaries({"type": st.just("figure8")}, optional={
        "radius": positive, "period": positive, "env_phase": finite})
    keyframes = st.integers(1, 4).flatmap(lambda k: st.fixed_dictionaries({
        "type": st.just("keyframes"),
        "times": st.lists(fl(0, 10), min_size=k, max_size=k, unique=True).map(sorted).filter(
            lambda ts: all(b - a > 1e-6 for a, b in zip(ts, ts[1:]))),
        "poses": st.lists(st.fixed_dictionaries({"pos": vec3}, optional={"quat": quat}), min_size=k, max_size=k)
        .filter(lambda ps: len({"quat" in p for p in ps}) == 1)}, optional={"stagger": fl(0, 1)}))
    return st.one_of(circle, offset, figure8, keyframes)


def _obstacle():
    pose = {"pos": vec3, "quat": quat, "color": st.lists(fl(0, 1), min_size=3, max_size=4)}
    sizes = {"box": st.lists(positive, min_size=3, max_size=3), "sphere": positive,
             "cylinder": st.lists(positive, min_size=2, max_size=2)}
    kinds = [st.fixed_dictionaries({"kind": st.just(k), "size": size}, optional=pose) for k, size in sizes.items()]
    kinds.append(st.fixed_dictionaries({"kind": st.just("plane")}, optional=pose))
    kinds.append(st.fixed_dictionaries({"kind": st.just("mesh"), "file": st.just("meshes/axis.obj")},
                                       optional={**pose, "scale": st.one_of(positive, st.lists(positive, min_size=3,
                                                                                                max_size=3))}))
    return st.one_of(kinds)


target = st.fixed_dictionaries(
    {"link": st.sampled_from(["hand", "link7", "left_finger"]), "pos": vec3},
    optional={"quat": quat, "pos_mask": mask, "rot_mask": rot_mask, "motion": _motion()})

robot = st.one_of(st.just("panda"), st.fixed_dictionaries({"file": st.just("panda")},
                                                         optional={"pos": vec3, "quat": quat, "scale": positive}))
spec_dict = st.fixed_dictionaries(
    {"robot": robot},
    optional={
        "description": st.text(max_size=20),
        "envs": st.fixed_dictionaries({}, optional={"n_envs": st.integers(1, 64),
                                                    "env_spacing": st.lists(fl(0, 3), min_size=2, max_size=2)}),
        "solver": st.fixed_dictionaries({}, optional={"max_samples": st.integers(1, 100), "damping": positive,
                                                      "seed": seed, "respect_joint_limit": st.booleans(),
                                                      "avoid_collisions": st.booleans(),
                                                      "collision_margin": fl(0, 0.1)}),
        "targets": st.lists(target, max_size=3),
        "obstacles": st.lists(_obstacle(), max_size=3),
        "camera": st.fixed_dictionaries({"pos": st.just([3.0, 1.0, 2.0])}, optional={
            "lookat": vec3, "fov": fl(1, 179)}),
        "record": st.fixed_dictionaries({}, optional={"fps": fl(0.1, 1000.0), "frames": st.integers(1, 1000),
                                                      "resolution": st.tuples(st.integers(16, 4096),
                                                                              st.integers(16, 4096))}),
    })


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=spec_dict)
def test_valid_specs_round_trip(tmp_path, data):
    spec = SceneSpec.model_validate(data)
    path = tmp_path / "rt.yaml"
    scenefile.save(spec, path)
    assert scenefile.load(path, check=False) == spec
    assert scenefile.loads(scenefile.dumps(spec), check=False) == spec
