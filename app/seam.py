"""The seam between the GUI side of the app (the controller, its editors and the panels, in the
GUI thread) and the engine side (:class:`app.sim.loop.Sim`, in the sim thread), named in one place.

The GUI thread never calls the engine (docs/design.md, "Threads"): it edits the spec under the
controller's ``edit_lock`` and uses the sim only through :data:`SIM_MEMBERS`; the sim reads
the controller only through :data:`CONTROLLER_FIELDS`. ``tests/test_app_seam.py`` reads the code
with ``ast`` and holds both lists, and that the GUI modules import no engine module that runs
kernels. A new crossing is a line here, so it is a decision, not an accident.
"""

from __future__ import annotations

# what the GUI side uses of the Sim (app/control/controller.py and its mixins, app/gui/window.py)
SIM_MEMBERS = frozenset({
    "install",            # post: build a scene from a spec (sim thread)
    "tick",               # one sim-thread tick: solve if due, ask for an image
    "reset", "set_joint", "show_spheres", "show_target_frames", "sync_spec",  # posted engine actions
    "request_frame", "wait_image", "latest_image", "collect",  # images (recording, tests)
    "first_answers_image",  # the first image of solved answers ("solving" is said once it is drawn)
    "image_is_current",  # the newest image shows the state last published (the report, for tests)
    "kernels_prepared", "kernels_prepared_since",  # kernels compiled in the window's process (the report)
    "published",          # the snapshot the sim published last (qpos, link poses, the last frame)
    "solved_edits",       # how many GUI edits the last solve took in
    "stage", "startup_note",  # what the sim is busy with, for the status line
    "robot", "runner", "scene", "visualizer",  # read by the recorder and the placement, under the sim's lock
    "close",
})

# what the Sim reads (or, for ``playing``, writes) of the controller
CONTROLLER_FIELDS = frozenset({
    "spec", "edit_lock", "edit_count",       # the spec the GUI edits, its lock and edit counter
    "playing", "speed", "manual", "step_requests", "render_requests", "always_render",  # the clock
    "camera_params", "camera_generation", "view_laid_out", "lod",  # how to draw
    "pacing",  # the window's image pacing: frames drawn, frames per image (app.control.image_pacing)
    "show_spheres", "recorder", "metrics",   # what else to draw and record, where readouts go
    "selected_env",                          # whose planned path to draw (solver.plan)
    "error", "resolve",                      # the status line
})

# engine modules that launch kernels or hold the scene: only the sim side imports them
# (the GUI may read data: scene-file models, the catalog, the camera's and the meshes' plain maths)
ENGINE_CALLING = ("engine.ik.api", "engine.ik.run", "engine.ik.solve", "engine.ik.avoiding", "engine.collision",
                  "engine.kernels", "engine.scene", "engine.entity", "engine.runtime.launch", "engine.vis.visualizer",
                  "engine.vis.renderer", "engine.vis.viewer", "engine.vis.recorder")
