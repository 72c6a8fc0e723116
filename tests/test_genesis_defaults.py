"""Every default of the Genesis API this engine covers, beside Genesis 1.4.5's value (read from
its published source: ``genesis/options/morphs.py``, ``options/solvers.py``, ``options/vis.py``,
``engine/entities/rigid_entity/rigid_entity.py``, ``engine/scene.py``).

Each row is ``(name, our value, Genesis' value, decision)``. ``SAME`` rows must agree; any other
decision is a difference written down on purpose (README, "Genesis compatibility", lists them),
and the row pins our value, so neither side can drift without this table changing.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import pytest

import engine as gs
from engine import morphs, options
from engine.entity import RigidEntity
from engine.scene import Scene
from engine.vis.visualizer import Visualizer

SAME = "same"
INF = math.inf


def field(cls, name):
    """A morph dataclass field's default."""
    f = {f.name: f for f in dataclasses.fields(cls)}[name]
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def arg(func, name):
    """A function argument's default."""
    return inspect.signature(func).parameters[name].default


def opt(cls, name):
    return cls.model_fields[name].default


def vec(value):
    return None if value is None else tuple(float(x) for x in value)


IK_DEFAULTS = {"pos": None, "quat": None, "local_point": None, "init_qpos": None, "respect_joint_limit": True,
               "max_samples": 50, "max_solver_iters": 20, "damping": 0.01, "pos_tol": 5e-4, "rot_tol": 5e-3,
               "pos_mask": (True, True, True), "rot_mask": (True, True, True), "max_step_size": 0.5, "seed": None,
               "dofs_idx_local": None, "return_error": False, "envs_idx": None}
MULTI = {"poss": None, "quats": None, "local_points": None}

ROWS = [
    # -- morphs (genesis/options/morphs.py) --
    ("URDF.fixed", field(morphs.URDF, "fixed"), False, SAME),
    ("URDF.scale", field(morphs.URDF, "scale"), 1.0, SAME),
    ("URDF.pos", vec(field(morphs.URDF, "pos")), (0.0, 0.0, 0.0), SAME),
    ("URDF.quat", field(morphs.URDF, "quat"), None, SAME),
    ("URDF.euler", field(morphs.URDF, "euler"), None, SAME),
    ("URDF.merge_fixed_links (a field?)", "merge_fixed_links" in {f.name for f in dataclasses.fields(morphs.URDF)},
     True,
     "difference: links joined by fixed joints stay separate links here (Genesis merges them); the argument is "
     "a TypeError"),
    ("URDF.requires_jac_and_IK", field(morphs.URDF, "requires_jac_and_IK"), "<deprecated, ignored>",
     "difference: only True is accepted (IK always works here); Genesis 1.4.5 warns and ignores any value"),
    ("MJCF.pos", vec(field(morphs.MJCF, "pos")), None,
     "equivalent: Genesis' None keeps the file's own frame, as the zero offset does here"),
    ("MJCF.quat", field(morphs.MJCF, "quat"), None, SAME),
    ("MJCF.scale", field(morphs.MJCF, "scale"), 1.0, SAME),
    ("Primitive.fixed", field(morphs.Box, "fixed"), False, SAME),
    ("Primitive.visualization", field(morphs.Box, "visualization"), True, SAME),
    ("Primitive.collision", field(morphs.Box, "collision"), True, SAME),
    ("Primitive.batch_fixed_verts", field(morphs.Box, "batch_fixed_verts"), True, SAME),
    ("Primitive.contype", field(morphs.Box, "contype"), 0xFFFF, SAME),
    ("Primitive.conaffinity", field(morphs.Box, "conaffinity"), 0xFFFF, SAME),
    ("Primitive.requires_jac_and_IK", field(morphs.Box, "requires_jac_and_IK"), "<deprecated, ignored>",
     "difference: a field here (False, Genesis' old default), accepted either way; IK and Jacobians always work"),
    ("Box.size", field(morphs.Box, "size"), None, SAME),
    ("Box.lower", field(morphs.Box, "lower"), None, SAME),
    ("Sphere.radius", field(morphs.Sphere, "radius"), 0.5, SAME),
    ("Cylinder.radius", field(morphs.Cylinder, "radius"), 0.5, SAME),
    ("Cylinder.height", field(morphs.Cylinder, "height"), 1.0, SAME),
    ("Plane.fixed", field(morphs.Plane, "fixed"), True, SAME),
    ("Plane.batch_fixed_verts", field(morphs.Plane, "batch_fixed_verts"), False, SAME),
    ("Plane.normal", vec(field(morphs.Plane, "normal")), (0.0, 0.0, 1.0), SAME),
    ("Plane.plane_size", vec(field(morphs.Plane, "plane_size")), (1e3, 1e3), SAME),
    ("Plane.tile_size", vec(field(morphs.Plane, "tile_size")), (1.0, 1.0), SAME),
    ("Mesh.scale", field(morphs.Mesh, "scale"), 1.0, SAME),
    ("Mesh.fixed", field(morphs.Mesh, "fixed"), False, SAME),
    ("Mesh.decimate", field(morphs.Mesh, "decimate"), None, SAME),
    ("Mesh.decimate_face_num", field(morphs.Mesh, "decimate_face_num"), 500, SAME),
    ("Mesh.decimate_aggressiveness", field(morphs.Mesh, "decimate_aggressiveness"), 2, SAME),
    ("Mesh.convexify", field(morphs.Mesh, "convexify"), None, SAME),
    ("Mesh.decompose_object_error_threshold", field(morphs.Mesh, "decompose_object_error_threshold"), 0.15, SAME),
    ("Mesh.decompose_robot_error_threshold", field(morphs.Mesh, "decompose_robot_error_threshold"), INF, SAME),
    ("Mesh.coacd_options", field(morphs.Mesh, "coacd_options"), None, SAME),
    ("Mesh.recompute_inertia", field(morphs.Mesh, "recompute_inertia"), False, SAME),
    ("Mesh.batch_fixed_verts", field(morphs.Mesh, "batch_fixed_verts"), False, SAME),
    ("Mesh.group_by_material", field(morphs.Mesh, "group_by_material"), False, SAME),
    ("Mesh.merge_submeshes_for_collision", field(morphs.Mesh, "merge_submeshes_for_collision"), False, SAME),
    # -- options (genesis/options/solvers.py, vis.py) --
    ("SimOptions.dt", opt(options.SimOptions, "dt"), 1e-2, SAME),
    ("SimOptions.substeps", opt(options.SimOptions, "substeps"), 1, SAME),
    ("SimOptions.gravity", opt(options.SimOptions, "gravity"), (0.0, 0.0, -9.81), SAME),
    ("SimOptions.floor_height", opt(options.SimOptions, "floor_height"), 0.0, SAME),
    ("SimOptions.requires_grad", opt(options.SimOptions, "requires_grad"), False, SAME),
    ("RigidOptions.dt", opt(options.RigidOptions, "dt"), None, SAME),
    ("RigidOptions.enable_collision", opt(options.RigidOptions, "enable_collision"), True, SAME),
    ("RigidOptions.enable_joint_limit", opt(options.RigidOptions, "enable_joint_limit"), True, SAME),
    ("RigidOptions.enable_self_collision", opt(options.RigidOptions, "enable_self_collision"), True, SAME),
    ("RigidOptions.enable_adjacent_collision", opt(options.RigidOptions, "enable_adjacent_collision"), False, SAME),
    ("RigidOptions.max_collision_pairs", opt(options.RigidOptions, "max_collision_pairs"), 150, SAME),
    ("RigidOptions.IK_max_targets", opt(options.RigidOptions, "IK_max_targets"), 6, SAME),
    ("RigidOptions.constraint_solver", opt(options.RigidOptions, "constraint_solver"), "Newton", SAME),
    ("RigidOptions.integrator", opt(options.RigidOptions, "integrator"), "approximate_implicitfast", SAME),
    ("RigidOptions.iterations", opt(options.RigidOptions, "iterations"), 25, SAME),
    ("RigidOptions.tolerance", opt(options.RigidOptions, "tolerance"), None, SAME),
    ("RigidOptions.ls_iterations", opt(options.RigidOptions, "ls_iterations"), 50, SAME),
    ("RigidOptions.ls_tolerance", opt(options.RigidOptions, "ls_tolerance"), 1e-2, SAME),
    ("RigidOptions.sparse_solve", opt(options.RigidOptions, "sparse_solve"), None, SAME),
    ("RigidOptions.constraint_timeconst", opt(options.RigidOptions, "constraint_timeconst"), 0.01, SAME),
    ("RigidOptions.use_hibernation", opt(options.RigidOptions, "use_hibernation"), False, SAME),
    ("RigidOptions.hibernation_thresh_vel", opt(options.RigidOptions, "hibernation_thresh_vel"), None, SAME),
    ("RigidOptions.use_gjk_collision", opt(options.RigidOptions, "use_gjk_collision"), None, SAME),
    ("RigidOptions.max_contacts", opt(options.RigidOptions, "max_contacts"), None, SAME),
    ("RigidOptions.multiplier_collision_broad_phase", opt(options.RigidOptions, "multiplier_collision_broad_phase"),
     8, SAME),
    ("RigidOptions.noslip_iterations", opt(options.RigidOptions, "noslip_iterations"), 0, SAME),
    ("RigidOptions.noslip_tolerance", opt(options.RigidOptions, "noslip_tolerance"), 1e-6, SAME),
    ("RigidOptions.contact_pruning_tolerance", opt(options.RigidOptions, "contact_pruning_tolerance"), 0.02, SAME),
    ("RigidOptions.enable_neutral_collision", opt(options.RigidOptions, "enable_neutral_collision"), False, SAME),
    ("RigidOptions.hibernation_thresh_acc", opt(options.RigidOptions, "hibernation_thresh_acc"), "<not in 1.4.5>",
     "kept: an earlier release's field, accepted so older scripts run"),
    ("ViewerOptions.res", opt(options.ViewerOptions, "res"), None, SAME),
    ("ViewerOptions.refresh_rate", opt(options.ViewerOptions, "refresh_rate"), 60, SAME),
    ("ViewerOptions.max_FPS", opt(options.ViewerOptions, "max_FPS"), None,
     "difference: 60 caps scene.step() while a window is open (Genesis 1.4.5 paces by realtime_factor; its max_FPS "
     "is a deprecated alias of refresh_rate)"),
    ("ViewerOptions.realtime_factor", opt(options.ViewerOptions, "realtime_factor"), 1.0, SAME),
    ("ViewerOptions.camera_pos", opt(options.ViewerOptions, "camera_pos"), (3.5, 0.5, 2.5), SAME),
    ("ViewerOptions.camera_lookat", opt(options.ViewerOptions, "camera_lookat"), (0.0, 0.0, 0.5), SAME),
    ("ViewerOptions.camera_up", opt(options.ViewerOptions, "camera_up"), (0.0, 0.0, 1.0), SAME),
    ("ViewerOptions.camera_fov", opt(options.ViewerOptions, "camera_fov"), 40.0, SAME),
    ("ViewerOptions.enable_gui", opt(options.ViewerOptions, "enable_gui"), False, SAME),
    ("VisOptions.show_world_frame", opt(options.VisOptions, "show_world_frame"), False, SAME),
    ("VisOptions.world_frame_size", opt(options.VisOptions, "world_frame_size"), 1.0, SAME),
    ("VisOptions.show_link_frame", opt(options.VisOptions, "show_link_frame"), False, SAME),
    ("VisOptions.link_frame_size", opt(options.VisOptions, "link_frame_size"), 0.2, SAME),
    ("VisOptions.background_color", opt(options.VisOptions, "background_color"), (0.04, 0.08, 0.12), SAME),
    ("VisOptions.ambient_light", opt(options.VisOptions, "ambient_light"), (0.1, 0.1, 0.1), SAME),
    ("VisOptions.rendered_envs_idx", opt(options.VisOptions, "rendered_envs_idx"), None, SAME),
    ("VisOptions.split_envs", opt(options.VisOptions, "split_envs"), False, SAME),
    # -- scene (genesis/engine/scene.py) --
    ("Scene.show_viewer", arg(Scene.__init__, "show_viewer"), None,
     "equivalent: False here; Genesis' None means no viewer unless it is asked for"),
    ("Scene.show_FPS", arg(Scene.__init__, "show_FPS"), None,
     "equivalent: True here; Genesis' None logs the FPS (its logger's default)"),
    ("Scene.add_entity.material", arg(Scene.add_entity, "material"), None, SAME),
    ("Scene.add_entity.surface", arg(Scene.add_entity, "surface"), None, SAME),
    ("Scene.add_entity.visualize_contact", arg(Scene.add_entity, "visualize_contact"), False, SAME),
    ("Scene.add_entity.vis_mode", arg(Scene.add_entity, "vis_mode"), None, SAME),
    ("Scene.build.n_envs", arg(Scene.build, "n_envs"), 0,
     "equivalent: None here; 0 and None both mean one env with no env axis"),
    ("Scene.build.env_spacing", tuple(arg(Scene.build, "env_spacing")), (0.0, 0.0),
     "difference: (1.0, 1.0) m lays envs out side by side on screen (Genesis draws them on top of each other); "
     "poses are env-local either way"),
    ("Scene.step.update_visualizer", arg(Scene.step, "update_visualizer"), True, SAME),
    ("Scene.step.refresh_visualizer", arg(Scene.step, "refresh_visualizer"), True, SAME),
    ("Scene.reset.state", arg(Scene.reset, "state"), None, SAME),
    ("Scene.update_debug_objects.objs", arg(Scene.update_debug_objects, "objs"), "<required>",
     "difference: optional here, so the older no-argument form keeps working"),
    ("draw_debug_frame.axis_length", arg(Visualizer.draw_debug_frame, "axis_length"), 1.0, SAME),
    ("draw_debug_frame.origin_size", arg(Visualizer.draw_debug_frame, "origin_size"), 0.015, SAME),
    ("draw_debug_frame.axis_radius", arg(Visualizer.draw_debug_frame, "axis_radius"), 0.01, SAME),
    ("draw_debug_sphere.radius", arg(Visualizer.draw_debug_sphere, "radius"), 0.01, SAME),
    ("draw_debug_sphere.color", arg(Visualizer.draw_debug_sphere, "color"), (1.0, 0.0, 0.0, 0.5), SAME),
    ("draw_debug_spheres.radius", arg(Visualizer.draw_debug_spheres, "radius"), 0.01, SAME),
    ("draw_debug_line.radius", arg(Visualizer.draw_debug_line, "radius"), 0.002, SAME),
    ("draw_debug_arrow.vec", arg(Visualizer.draw_debug_arrow, "vec"), (0, 0, 1), SAME),
    ("draw_debug_arrow.radius", arg(Visualizer.draw_debug_arrow, "radius"), 0.01, SAME),
    ("visualizer.update.force", arg(Visualizer.update, "force"), True, SAME),
    ("visualizer.update.auto", arg(Visualizer.update, "auto"), None, SAME),
    # -- entity methods (rigid_entity.py) --
    *[(f"inverse_kinematics.{k}", arg(RigidEntity.inverse_kinematics, k), v, SAME) for k, v in IK_DEFAULTS.items()],
    *[(f"inverse_kinematics_multilink.{k}", arg(RigidEntity.inverse_kinematics_multilink, k), v, SAME)
      for k, v in {**MULTI, **{k: v for k, v in IK_DEFAULTS.items()
                              if k not in ("pos", "quat", "local_point")}}.items()],
    ("get_jacobian.local_point", arg(RigidEntity.get_jacobian, "local_point"), None, SAME),
    ("forward_kinematics.qs_idx_local", arg(RigidEntity.forward_kinematics, "qs_idx_local"), None, SAME),
    ("set_qpos.zero_velocity", arg(RigidEntity.set_qpos, "zero_velocity"), True, SAME),
    ("set_qpos.skip_forward", arg(RigidEntity.set_qpos, "skip_forward"), False, SAME),
    ("set_dofs_position.zero_velocity", arg(RigidEntity.set_dofs_position, "zero_velocity"), True, SAME),
    ("set_pos.relative", arg(RigidEntity.set_pos, "relative"), True, SAME),
    ("set_pos.zero_velocity", arg(RigidEntity.set_pos, "zero_velocity"), True, SAME),
    ("set_quat.relative", arg(RigidEntity.set_quat, "relative"), True, SAME),
    ("set_quat.zero_velocity", arg(RigidEntity.set_quat, "zero_velocity"), True, SAME),
    ("get_links_vel.relative", arg(RigidEntity.get_links_vel, "relative"), True, SAME),
    ("set_dofs_velocity.velocity", arg(RigidEntity.set_dofs_velocity, "velocity"), None, SAME),
    ("get_contacts.with_entity", arg(RigidEntity.get_contacts, "with_entity"), None, SAME),
    ("get_contacts.exclude_self_contact", arg(RigidEntity.get_contacts, "exclude_self_contact"), False, SAME),
    # -- motion planning (genesis/engine/entities/rigid_entity/rigid_entity.py, plan_path) --
    *[(f"plan_path.{k}", arg(RigidEntity.plan_path, k), v, SAME) for k, v in {
        "qpos_start": None, "max_nodes": 2000, "resolution": 0.05, "timeout": None, "max_retry": 1,
        "smooth_path": True, "num_waypoints": 300, "ignore_collision": False, "planner": "RRTConnect",
        "envs_idx": None, "return_valid_mask": False, "ee_link_name": None, "with_entity": None}.items()],
    ("Scene.draw_debug_path.link_idx", arg(Visualizer.draw_debug_path, "link_idx"), -1, SAME),
    ("Scene.draw_debug_path.density", arg(Visualizer.draw_debug_path, "density"), 0.3, SAME),
    ("Scene.draw_debug_path.frame_scaling", arg(Visualizer.draw_debug_path, "frame_scaling"), 1.0, SAME),
    ("control_dofs_force.dofs_idx_local", arg(RigidEntity.control_dofs_force, "dofs_idx_local"), None, SAME),
    ("set_dofs_kp.envs_idx", arg(RigidEntity.set_dofs_kp, "envs_idx"), None, SAME),
    # -- init (genesis/__init__.py) --
    ("init.precision", arg(gs.init, "precision"), "32", SAME),
    ("init.seed", arg(gs.init, "seed"), None, SAME),
    ("init.debug", arg(gs.init, "debug"), False, SAME),
    ("init.backend", arg(gs.init, "backend"), "<gs.gpu>", "equivalent: 'gpu' here is gs.gpu"),
]

PINNED = {  # our value in each row that is not SAME (so a change of ours shows here too)
    "URDF.merge_fixed_links (a field?)": False, "URDF.requires_jac_and_IK": True,
    "MJCF.pos": (0.0, 0.0, 0.0), "Primitive.requires_jac_and_IK": False, "RigidOptions.hibernation_thresh_acc": 1e-2,
    "ViewerOptions.max_FPS": 60, "Scene.show_viewer": False, "Scene.show_FPS": True, "Scene.build.n_envs": None,
    "Scene.build.env_spacing": (1.0, 1.0), "Scene.update_debug_objects.objs": None, "init.backend": "gpu",
}


def _value(x):
    return tuple(x) if isinstance(x, list) else x


@pytest.mark.parametrize(("name", "ours", "genesis", "decision"), ROWS, ids=[r[0] for r in ROWS])
def test_default_beside_genesis(name, ours, genesis, decision):
    if decision == SAME:
        assert _value(ours) == _value(genesis), f"{name}: ours {ours!r}, Genesis 1.4.5 {genesis!r}"
    else:
        assert decision.split(":")[0] in ("difference", "equivalent", "kept"), decision
        assert name in PINNED, f"{name}: a written decision needs our value pinned"
        assert _value(ours) == _value(PINNED[name]), f"{name}: ours is now {ours!r}; update the decision"


def test_every_written_decision_is_in_the_table():
    assert set(PINNED) == {r[0] for r in ROWS if r[3] != SAME}


if __name__ == "__main__":  # python tests/test_genesis_defaults.py prints the table
    for row in ROWS:
        print(f"{row[0]:48s} {row[1]!r:>28s} {row[2]!r:>28s}  {row[3]}")
