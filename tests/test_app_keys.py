"""Keys belong to the text field being edited (issue 17, item 1): typing digits and letters that
are shortcuts into every kind of field of the real window runs no shortcut, and the same keys are
shortcuts again once no field has the keyboard."""

from __future__ import annotations

import numpy as np
import pytest
from _appwindow import inside_left

# Every shortcut letter and digit, and a space: each one would move the camera, pause, reset the
# scene or the targets, flip the gizmo axes, switch manual mode or follow, save a screenshot, or
# open the help, if it reached the shortcuts.
TYPED = "1234 fgmrtlpn"


def state(r: dict) -> tuple:
    return (r["state"], r["camera"], r["targets"], r["shortcuts"])


@pytest.fixture
def app(launch, tmp_path):
    app = launch(screenshot_dir=str(tmp_path))
    app.wait_report(lambda r: r["images"] >= 2 and "t0_group" in r["widgets"], timeout=180)
    app.xdotool("key", "space")  # pause, so that the targets stay still
    app.wait_report(lambda r: r["shortcuts"] == ["toggle_play"] and not r["state"]["playing"])
    app.wait_frames(3)
    return app


FIELDS = ("robot_filter", "record_path", "t0_group", "n_envs", "solver_max_samples", "solver_damping",
          "spacing", "t0_pos")  # text, text, text, int, int, double, two floats, three floats


def test_typing_into_each_kind_of_field_runs_no_shortcut(app, tmp_path):
    before = app.read()
    for tag in FIELDS:
        r = app.read()
        app.click_widget(tag, at=inside_left)
        r = app.wait_frames(2)
        assert r["keyboard_owner"] is not None, f"clicking {tag} did not give it the keyboard"
        app.type(TYPED)
        r = app.wait_frames(3)
        assert r["keyboard_owner"] is not None, f"{tag} lost the keyboard while typing"
        app.xdotool("key", "Escape")  # leave the field without applying what was typed
        r = app.wait_report(lambda r: r["keyboard_owner"] is None)
        r = app.wait_frames(2)
        assert state(r) == state(before), f"typing into {tag} ran {r['shortcuts'][1:]}: {r['state']}"
        assert not list(tmp_path.glob("ikstudio-*.png")), f"typing into {tag} saved a screenshot"

    # the file dialog's name field: nothing typed while it is open is a shortcut, Escape closes it
    app.xdotool("key", "ctrl+o")
    r = app.wait_report(lambda r: r["keyboard_owner"] == "open_scene_dialog")
    app.type(TYPED)
    app.wait_frames(3)
    app.xdotool("key", "Escape")
    r = app.wait_report(lambda r: r["keyboard_owner"] is None)
    assert r["shortcuts"] == ["toggle_play", "open_scene"], r["shortcuts"]
    assert (r["state"], r["camera"], r["targets"]) == (before["state"], before["camera"], before["targets"])

    # with no field focused, the same keys are shortcuts again
    app.xdotool("key", "2")
    r = app.wait_report(lambda r: r["shortcuts"][-1:] == ["preset_side"])
    assert np.allclose(r["camera"][:2], [-90.0, 0.0])
    app.xdotool("key", "l")
    r = app.wait_report(lambda r: r["state"]["space"] == "local")
    assert "Traceback" not in app.log(), app.log()
