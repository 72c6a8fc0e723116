"""MJCF -> KinematicTree: compiled by ``mujoco`` (includes, defaults, childclass, angle units and
meshdir behave as MuJoCo defines them), then read back from the compiled ``MjModel``.

A link's body frame is the MuJoCo body frame. Its mass and centre of mass are the compiled
``body_mass`` / ``body_ipos``: an ``<inertial>`` element's, or, for a body without one, what MuJoCo's
compiler infers from the body's geoms (``inertiafromgeom``: each geom's ``mass``, or its ``density``,
1000 kg/m^3 by default, times its volume, meshes included; the centre is the mass-weighted mean of
the geoms' centres). No second dependency: the file is compiled by mujoco in any case.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..transforms import quat_mul, quat_rotate
from .errors import ModelLoadError
from .tree import Joint, KinematicTree, Link, Mimic, Visual

# mujoco enums, spelled out to keep this module importable for docs without mujoco.
_JOINT_KIND = {0: "free", 1: "ball", 2: "prismatic", 3: "revolute"}
_GEOM_KIND = {2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box", 7: "mesh"}
_EQ_JOINT = 2
VELOCITY_NUMERIC_PREFIX = "velocity_limit/"


def compile_mjcf(path: Path):
    """Compile an MJCF file with mujoco; errors become :class:`ModelLoadError` naming the file."""
    import mujoco

    try:
        return mujoco.MjModel.from_xml_path(str(path))
    except ValueError as err:
        raise ModelLoadError(f"{path}: {str(err).strip()}") from None


def _visual_geoms(model) -> np.ndarray:
    visual_only = (model.geom_contype == 0) & (model.geom_conaffinity == 0)
    return visual_only if visual_only.any() else np.ones(model.ngeom, dtype=bool)


def geom_visual(model, g: int, scale: float) -> Visual | None:
    kind = _GEOM_KIND.get(int(model.geom_type[g]))
    if kind is None:
        return None
    size = model.geom_size[g].copy() * scale
    if kind == "box":
        size = 2.0 * size
    elif kind in ("capsule", "cylinder"):
        size = np.array([size[0], 2.0 * size[1]])
    elif kind == "sphere":
        size = size[:1]
    mesh_data = None
    if kind == "mesh":
        m = int(model.geom_dataid[g])
        v0, nv = model.mesh_vertadr[m], model.mesh_vertnum[m]
        f0, nf = model.mesh_faceadr[m], model.mesh_facenum[m]
        mesh_data = (model.mesh_vert[v0:v0 + nv].astype(float), model.mesh_face[f0:f0 + nf].astype(np.int64))
        size = np.full(3, scale)
    return Visual(kind, size, model.geom_pos[g] * scale, model.geom_quat[g].copy(),
                  model.geom_rgba[g].astype(float), mesh_data=mesh_data)


def _velocity_limits(model) -> dict[str, float]:
    limits = {}
    for i in range(model.nnumeric):
        name = model.numeric(i).name
        if name.startswith(VELOCITY_NUMERIC_PREFIX) and model.numeric_size[i] >= 1:
            limits[name[len(VELOCITY_NUMERIC_PREFIX):]] = float(model.numeric_data[model.numeric_adr[i]])
    return limits


def load_mjcf(morph) -> KinematicTree:
    """Build the tree of a :class:`engine.morphs.MJCF` (its file, base pose and scale)."""
    import mujoco

    path = Path(morph.file)
    model = compile_mjcf(path)
    scale = morph.scale
    visual_mask = _visual_geoms(model)
    links: list[Link] = []
    for b in range(1, model.nbody):
        parent = int(model.body_parentid[b]) - 1
        pos, quat = model.body_pos[b] * scale, model.body_quat[b].copy()
        if parent < 0:
            pos, quat = morph.pos + quat_rotate(morph.quat, pos), quat_mul(morph.quat, quat)
        geoms = [g for g in range(model.body_geomadr[b], model.body_geomadr[b] + model.body_geomnum[b])
                 if visual_mask[g]]
        visuals = [v for v in (geom_visual(model, g, scale) for g in geoms) if v is not None]
        links.append(Link(model.body(b).name or _free_name(model, "body", b), parent, pos, quat, visuals,
                          float(model.body_mass[b]), model.body_ipos[b] * scale))

    velocity = _velocity_limits(model)
    joints: list[Joint] = []
    for j in range(model.njnt):
        kind = _JOINT_KIND[int(model.jnt_type[j])]
        name = model.joint(j).name or _free_name(model, "joint", j)
        linear = scale if kind == "prismatic" else 1.0
        lower, upper = -np.inf, np.inf
        if kind in ("revolute", "prismatic") and model.jnt_limited[j]:
            lower, upper = (float(x) * linear for x in model.jnt_range[j])
        ref = float(model.qpos0[model.jnt_qposadr[j]]) * linear if kind in ("revolute", "prismatic") else 0.0
        joints.append(Joint(name, kind, int(model.jnt_bodyid[j]) - 1, model.jnt_pos[j] * scale,
                            model.jnt_axis[j].copy(), lower, upper,
                            velocity.get(name, np.inf) * linear, ref))
    for e in range(model.neq):
        if model.eq_type[e] != _EQ_JOINT or model.eq_obj2id[e] < 0:
            continue
        follower, leader = joints[model.eq_obj1id[e]], int(model.eq_obj2id[e])
        c0, c1 = (float(c) for c in model.eq_data[e][:2])
        lin = scale if follower.type == "prismatic" else 1.0
        follower.mimic = Mimic(leader, c1, follower.ref + c0 * lin - c1 * joints[leader].ref)

    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, "home")
    qpos = (model.key_qpos[key] if key >= 0 else model.qpos0).astype(float).copy()
    for joint, j in zip(joints, range(model.njnt)):
        a = model.jnt_qposadr[j]
        if joint.type == "prismatic":
            qpos[a] *= scale
        elif joint.type == "free":
            qpos[a:a + 3] = morph.pos + quat_rotate(morph.quat, qpos[a:a + 3] * scale)
            qpos[a + 3:a + 7] = quat_mul(morph.quat, qpos[a + 3:a + 7])
    return KinematicTree(path.stem, path, links, joints, qpos)


def _free_name(model, kind: str, index: int) -> str:
    """A name for unnamed body/joint ``index``: ``body3`` unless the file names another one so,
    then ``body3_``, ``body3__`` ... (two links of one name would make get_link ambiguous)."""
    count = model.nbody if kind == "body" else model.njnt
    taken = {(model.body(i) if kind == "body" else model.joint(i)).name for i in range(count)}
    name = f"{kind}{index}"
    while name in taken:
        name += "_"
    return name
