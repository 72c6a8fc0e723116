"""Malformed scene files: each gives one precise message naming the file, the key path and the line.

Also: several problems are reported together, file-level failures (missing, a folder, not UTF-8),
and Hypothesis-made garbage (random YAML data, mutated valid specs, random text) never makes the
loader raise anything but SceneFileError.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import scenefile
from engine.scenefile import SceneFileError

REPO = Path(__file__).resolve().parent.parent
TARGET = "targets:\n  - link: hand\n    pos: [0.4, 0.0, 0.3]\n"

# (name, file text, the one expected message after "<file>: ")
CASES = [
    ("missing robot", "targets: []\n",
     "robot: missing (required)"),
    ("unknown robot, suggestion", "robot: pnda\n",
     "robot: unknown robot 'pnda'; did you mean 'panda'? (line 1)"),
    ("unknown robot in long form", "robot:\n  file: ur55\n",
     "robot.file: unknown robot 'ur55'; did you mean 'ur5'? (line 2)"),
    ("missing robot file", "robot: ./nothere.urdf\n",
     "robot: no such robot file: './nothere.urdf' (looked for {dir}/nothere.urdf) (line 1)"),
    ("fixed on an MJCF robot", "robot: {file: panda, fixed: false}\n",
     "robot.fixed: fixed applies to URDF robots only; an MJCF robot's base joint (a <freejoint/>) is set in "
     "its file (line 1)"),
    ("n_envs 0", "robot: panda\nenvs:\n  n_envs: 0\n",
     "envs.n_envs: expected an integer in [1, 1024], got 0 (line 3)"),
    ("n_envs -1", "robot: panda\nenvs:\n  n_envs: -1\n",
     "envs.n_envs: expected an integer in [1, 1024], got -1 (line 3)"),
    ("n_envs 'x'", "robot: panda\nenvs:\n  n_envs: x\n",
     "envs.n_envs: expected an integer in [1, 1024], got 'x' (line 3)"),
    ("n_envs 2.5", "robot: panda\nenvs: {n_envs: 2.5}\n",
     "envs.n_envs: expected an integer in [1, 1024], got 2.5 (line 2)"),
    ("unknown top-level key", "robot: panda\nenvz: {n_envs: 2}\n",
     "envz: unknown key; did you mean 'envs'? (line 2)"),
    ("unknown target key", "robot: panda\ntargets:\n  - link: hand\n    poss: [0, 0, 0]\n",
     "targets[0].poss: unknown key; did you mean 'pos' or 'pos_mask'? (line 4)"),
    ("rot_mask of length 2", "robot: panda\n" + TARGET + "  - link: hand\n    pos: [0.4, 0.0, 0.3]\n"
     "    rot_mask: [true, false]\n",
     "targets[1].rot_mask: expected 3 booleans, got 2 (line 7)"),
    ("rot_mask with two true", "robot: panda\n" + TARGET + "    rot_mask: [true, true, false]\n",
     "targets[0].rot_mask: [true, true, false] has two true axes; two aligned axes fix the third, so use all "
     "three (full orientation), one (align that axis) or none (orientation free) (line 5)"),
    ("pos_mask not booleans", "robot: panda\n" + TARGET + "    pos_mask: [yes, no, maybe]\n",
     "targets[0].pos_mask: expected 3 booleans, got [true, false, 'maybe'] (line 5)"),
    ("zero quaternion", "robot: panda\ntargets:\n  - link: hand\n    quat: [0, 0, 0, 0]\n",
     "targets[0].quat: expected a non-zero (w, x, y, z) quaternion, got [0.0, 0.0, 0.0, 0.0] (line 4)"),
    ("quaternion of length 3", "robot: panda\ntargets:\n  - link: hand\n    quat: [0, 0, 1]\n",
     "targets[0].quat: expected 4 numbers (w, x, y, z), got 3 (line 4)"),
    ("quat and rpy", "robot: panda\n" + TARGET + "    quat: [1, 0, 0, 0]\n    rpy: [0, 0, 0]\n",
     "targets[0].rpy: give quat or rpy, not both (line 6)"),
    ("target constrains nothing", "robot: panda\ntargets:\n  - link: hand\n",
     "targets[0]: expected pos, quat or rpy (a target with none of them constrains nothing) (line 3)"),
    ("unknown link, suggestion", "robot: panda\ntargets:\n  - link: hnd\n    pos: [0.4, 0.0, 0.3]\n",
     "targets[0].link: no link 'hnd' in the robot; did you mean 'hand'? (line 3)"),
    ("negative circle radius", "robot: panda\n" + TARGET + "    motion: {type: circle, radius: -1}\n",
     "targets[0].motion.radius: expected a positive number, got -1 (line 5)"),
    ("unknown motion type", "robot: panda\n" + TARGET + "    motion: {type: circel}\n",
     "targets[0].motion: unknown type 'circel'; did you mean 'circle'? (expected one of circle, offset, "
     "figure8, keyframes) (line 5)"),
    ("motion without type", "robot: panda\n" + TARGET + "    motion: {radius: 0.1}\n",
     "targets[0].motion: missing key 'type' (line 5)"),
    ("unknown motion key", "robot: panda\n" + TARGET + "    motion: {type: circle, radus: 0.1}\n",
     "targets[0].motion.radus: unknown key; did you mean 'radius'? (line 5)"),
    ("speed range min > max", "robot: panda\n" + TARGET + "    motion: {type: circle, speed: [10, -10]}\n",
     "targets[0].motion.speed: expected [min, max] with min <= max, got [10, -10] (line 5)"),
    ("bad circle plane", "robot: panda\n" + TARGET + "    motion: {type: circle, plane: xw}\n",
     "targets[0].motion.plane: expected one of xy, yz, xz, got 'xw' (line 5)"),
    ("offset without a spread", "robot: panda\n" + TARGET + "    motion: {type: offset}\n",
     "targets[0].motion: expected exactly one of offsets, grid or random, got none (line 5)"),
    ("offsets count != n_envs", "robot: panda\nenvs: {n_envs: 4}\n" + TARGET
     + "    motion: {type: offset, offsets: [[0, 0, 0]]}\n",
     "targets[0].motion.offsets: expected 4 offsets (one per env; n_envs is 4), got 1 (line 6)"),
    ("figure8 zero period", "robot: panda\n" + TARGET + "    motion: {type: figure8, period: 0}\n",
     "targets[0].motion.period: expected a positive number, got 0 (line 5)"),
    ("keyframe times not increasing", "robot: panda\ntargets:\n  - link: hand\n    motion:\n      type: keyframes\n"
     "      times: [0, 1, 1]\n      poses: [{pos: [0, 0, 0]}, {pos: [0, 0, 1]}, {pos: [1, 0, 0]}]\n",
     "targets[0].motion.times: expected strictly increasing times, got [0.0, 1.0, 1.0] (line 6)"),
    ("keyframe counts differ", "robot: panda\ntargets:\n  - link: hand\n    motion:\n      type: keyframes\n"
     "      times: [0, 1]\n      poses: [{pos: [0, 0, 0]}]\n",
     "targets[0].motion.times: expected as many times as poses, got 2 times and 1 poses (line 6)"),
    ("masks differ within a group", "robot: panda\ntargets:\n"
     "  - {link: left_finger, group: f, pos: [0.4, 0.0, 0.3]}\n"
     "  - {link: right_finger, group: f, pos: [0.4, 0.0, 0.3], pos_mask: [true, true, false]}\n",
     "targets[1].pos_mask: [true, true, false] differs from targets[0].pos_mask [true, true, true] in group 'f'; "
     "a group is one IK call, which shares its masks (line 4)"),
    ("same link twice in a group", "robot: panda\ntargets:\n"
     "  - {link: hand, group: g, pos: [0.4, 0.0, 0.3]}\n  - {link: hand, group: g, pos: [0.4, 0.0, 0.4]}\n",
     "targets[1].link: link 'hand' is already a target of group 'g' (targets[0]) (line 4)"),
    ("YAML syntax error", "robot: panda\ntargets:\n  - link: hand\n   pos: [0.4, 0, 0.3]\n",
     "YAML syntax error: expected <block end>, but found '<block mapping start>' (while parsing a block "
     "collection) at line 4, column 4"),
    ("unclosed bracket", "robot: panda\ntargets: [\n",
     "YAML syntax error: expected the node content, but found '<stream end>' (while parsing a flow node) at "
     "line 3, column 1"),
    ("duplicate key", "robot: panda\nrobot: ur5\n",
     "robot: duplicate key (first given at line 1) (line 2)"),
    ("record: seconds and frames", "robot: panda\nrecord:\n  seconds: 2\n  frames: 10\n",
     "record.frames: give seconds or frames, not both (line 4)"),
    ("negative fps", "robot: panda\nrecord:\n  fps: -30\n",
     "record.fps: expected a number in [0.1, 1000], got -30 (line 3)"),
    ("resolution of one number", "robot: panda\nrecord:\n  resolution: [1280]\n",
     "record.resolution: expected [width, height] (2 integers), got [1280] (line 3)"),
    ("resolution of zero width", "robot: panda\nrecord:\n  resolution: [0, 720]\n",
     "record.resolution: expected [width, height] with each in [16, 8192] pixels, got [0, 720] (line 3)"),
    ("camera fov out of range", "robot: panda\ncamera:\n  fov: 190\n",
     "camera.fov: expected a number in (0, 180), got 190 (line 3)"),
    ("solver seed negative", "robot: panda\nsolver:\n  seed: -1\n",
     "solver.seed: expected an integer in [0, 2147483647], got -1 (line 3)"),
    ("unknown solver kernel", "robot: panda\nsolver:\n  kernel: fast\n",
     "solver.kernel: expected one of 'auto', 'per_robot' or 'generic', got 'fast' (line 3)"),
    ("targets is a mapping", "robot: panda\ntargets: {link: hand}\n",
     "targets: expected a list, got {link: 'hand'} (line 2)"),
    ("empty file", "", "the file is empty; expected a mapping with at least a robot key"),
    ("top level is a list", "- robot\n- panda\n",
     "expected a mapping (robot: ..., targets: ...) at the top level, got list ['robot', 'panda']"),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_file_gives_its_message(tmp_path, text, expected):
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(SceneFileError) as info:
        scenefile.load(path)
    assert str(info.value) == f"{path}: " + expected.replace("{dir}", str(tmp_path))
    assert info.value.file == str(path)
    assert len(info.value.issues) == 1
    assert "Traceback" not in str(info.value)


def test_several_problems_are_reported_together(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text("robot: pnda\nenvs: {n_envs: -1}\ntargets:\n  - {link: hand, pos: [0, 0], "
                    "rot_mask: [true, true, false]}\n")
    with pytest.raises(SceneFileError) as info:
        scenefile.load(path)
    lines = str(info.value).splitlines()
    assert lines[0] == f"{path}: robot: unknown robot 'pnda'; did you mean 'panda'? (line 1)"
    assert lines[1] == f"{path}: envs.n_envs: expected an integer in [1, 1024], got -1 (line 2)"
    assert lines[2] == f"{path}: targets[0].pos: expected 3 numbers, got 2 (line 4)"
    assert lines[3].startswith(f"{path}: targets[0].rot_mask: [true, true, false] has two true axes")
    assert len(lines) == 4 == len(info.value.issues)


def test_relative_path_is_named_as_given(tmp_path, monkeypatch):
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "x.yaml").write_text("robot: panda\n" + TARGET + "    rot_mask: [true, false]\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SceneFileError, match=r"^scenes/x\.yaml: targets\[0\]\.rot_mask: expected 3 booleans, "
                                             r"got 2 \(line 5\)$"):
        scenefile.load("scenes/x.yaml")


def test_file_level_failures(tmp_path):
    with pytest.raises(SceneFileError, match=r"nope\.yaml: no such file$"):
        scenefile.load(tmp_path / "nope.yaml")
    with pytest.raises(SceneFileError, match="is a folder"):
        scenefile.load(tmp_path)
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"robot: caf\xe9\n")
    with pytest.raises(SceneFileError, match="not UTF-8 text"):
        scenefile.load(bad)


def test_unknown_key_lists_allowed_keys_when_nothing_is_close(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text("robot: panda\nzzzzzz: 1\n")
    with pytest.raises(SceneFileError) as info:
        scenefile.load(path)
    assert str(info.value) == (f"{path}: zzzzzz: unknown key (allowed: description, robot, envs, solver, targets, "
                               "obstacles, camera, record) (line 2)")


def test_spec_made_in_code_is_checked_at_build():
    spec = scenefile.SceneSpec(robot="panda", targets=[{"link": "hnd", "pos": [0.4, 0.0, 0.3]}])
    with pytest.raises(SceneFileError, match=r"^<spec>: targets\[0\]\.link: no link 'hnd' in the robot; did you "
                                             r"mean 'hand'\?$"):
        scenefile.build(spec)


# -- Hypothesis: nothing but SceneFileError ----------------------------------------------------------

VALID = {**yaml.safe_load((REPO / "scenes" / "batched_panda.yaml").read_text()),
         "obstacles": [*yaml.safe_load((REPO / "scenes" / "panda_clutter.yaml").read_text())["obstacles"],
                       {"kind": "mesh", "file": "meshes/axis.obj", "scale": 0.2}]}
KEYS = ["robot", "envs", "n_envs", "targets", "link", "pos", "quat", "rpy", "rot_mask", "pos_mask", "group",
        "motion", "type", "circle", "offset", "figure8", "keyframes", "times", "poses", "speed", "radius", "record",
        "fps", "frames", "seconds", "resolution", "camera", "fov", "solver", "seed", "grid", "random", "offsets",
        "obstacles", "kind", "size", "color", "file", "scale", "box", "mesh", "plane", "avoid_collisions",
        "collision_margin"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8), st.sampled_from(KEYS))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=6)), inner,
                                                 max_size=5)), max_leaves=20)


def _load_data(tmp_path: Path, data) -> None:
    path = tmp_path / "h.yaml"
    try:
        text = yaml.safe_dump(data, sort_keys=False)
    except (yaml.YAMLError, ValueError, RecursionError):
        return
    path.write_text(text)
    try:
        spec = scenefile.load(path)
    except SceneFileError as err:
        assert str(err).startswith(str(path) + ": ")
        assert err.issues
        return
    assert isinstance(spec, scenefile.SceneSpec)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(st.sampled_from(KEYS), values, max_size=6))
def test_random_dicts_raise_only_scene_file_errors(tmp_path, data):
    _load_data(tmp_path, data)


@st.composite
def mutated_valid(draw):
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        # walk to a random container inside the valid spec
        node = data
        for _depth in range(draw(st.integers(0, 4))):
            children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
            children = [(k, v) for k, v in children if isinstance(v, dict | list) and v]
            if not children:
                break
            node = draw(st.sampled_from(children))[1]
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "replace":
            node[key] = draw(values)
        elif action == "delete":
            del node[key]
        elif isinstance(node, dict):
            node[draw(st.sampled_from(KEYS))] = draw(values)
        else:
            node.append(draw(values))
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=mutated_valid())
def test_mutated_valid_specs_raise_only_scene_file_errors(tmp_path, data):
    _load_data(tmp_path, data)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("robt: panda[]{}-,\n #&*!|>'\"0123456789.xyz\t")), max_size=80))
def test_random_text_raises_only_scene_file_errors(text):
    try:
        scenefile.loads(text, file="t.yaml")
    except SceneFileError as err:
        assert str(err).startswith("t.yaml: ")
