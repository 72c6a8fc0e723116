"""The "smooth" switch in the real window (issue 30, item 3), under Xvfb with the real mouse: a target
that jumps back and forth is followed within the velocity limit while the switch is on (the
readouts' worst joint step stays under the limit and envs show as lagging), jumps to it once the
switch is clicked off, and is followed within the limit again once it is clicked back on. The
figures are read from the readouts the window draws, as a user reads them."""

from __future__ import annotations

import re
import time

V = 0.5  # rad/s, the scene's max_joint_velocity
MAX_DT = 0.25  # s: the app's longest frame (app.sim.loop.MAX_DT); a frame moves a joint at most V * MAX_DT
JUMP_RAD = 0.3  # a frame moving a joint this far is a jump (the target's jump needs ~0.6 rad of the base joint)

SCENE = f"""\
robot: panda
envs:
  n_envs: 4
solver:
  seed: 0
  track: true
  max_joint_velocity: {V}
targets:
  - link: hand
    pos: [0.45, 0.1, 0.4]
    quat: [0.0, 1.0, 0.0, 0.0]
    motion:
      type: keyframes
      loop: true
      times: [0.0, 1.5, 1.52, 3.0, 3.02]
      poses:
        - {{pos: [0.45, 0.1, 0.4]}}
        - {{pos: [0.45, 0.1, 0.4]}}
        - {{pos: [0.45, -0.25, 0.4]}}
        - {{pos: [0.45, -0.25, 0.4]}}
        - {{pos: [0.45, 0.1, 0.4]}}
"""

STEP = re.compile(r"worst step\s+([0-9.]+)\s+rad \(last 2 s\)\s+lagging\s+(\d+)")  # the largest over 2 s


def _watch(app, seconds: float) -> tuple[float, int, int]:
    """(largest worst step, largest lagging count, readouts read) over ``seconds`` of play."""
    worst, lagging, seen = 0.0, 0, 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        r = app.wait_frames(1)
        found = STEP.search(r.get("readouts") or "")
        if found:
            worst, lagging, seen = max(worst, float(found.group(1))), max(lagging, int(found.group(2))), seen + 1
    return worst, lagging, seen


def test_the_smooth_switch_in_the_window(launch, tmp_path):
    scene = tmp_path / "jumps.yaml"
    scene.write_text(SCENE)
    app = launch(scene_path=str(scene))
    r = app.wait_report(lambda r: r["images"] >= 2 and r["state"]["playing"] and "solver_track" in r["widgets"]
                        and STEP.search(r.get("readouts") or ""), timeout=240)
    assert r["state"]["smooth"], "a scene with solver.track starts smooth"

    worst, lagging, seen = _watch(app, 7.0)  # two jumps of the target
    assert seen >= 3, "the readouts never showed the joint step"
    assert worst <= V * MAX_DT + 1e-3, f"smooth on, a frame moved a joint {worst} rad"
    assert lagging >= 1, "the jumps never made an env lag: the limit never bound"

    app.click_widget("solver_track")
    app.wait_report(lambda r: not r["state"]["smooth"], timeout=30)
    worst, _, seen = _watch(app, 7.0)
    assert seen >= 3 and worst > JUMP_RAD, f"smooth off, the target's jumps should be jumps: worst {worst} rad"

    app.click_widget("solver_track")
    app.wait_report(lambda r: r["state"]["smooth"], timeout=30)
    _watch(app, 2.5)  # the frames solved before the click have left the readouts' 2 s
    worst, lagging, seen = _watch(app, 7.0)
    assert seen >= 3 and worst <= V * MAX_DT + 1e-3 and lagging >= 1, (worst, lagging)
    assert r["status"][0] != "error", r["status"]
