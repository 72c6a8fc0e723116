"""Capture the README's images: the app on the default scene, and a gizmo drag as a sequence.

Needs a display (Xvfb) and xdotool; screens are grabbed with Pillow. Not run by the tests.

    Xvfb :77 -screen 0 1920x1080x24 &  DISPLAY=:77 python docs/capture_drag.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "media"
SIZE = (1600, 900)


def shot(path: Path) -> None:
    from PIL import ImageGrab

    ImageGrab.grab(bbox=(0, 0, *SIZE), xdisplay=os.environ["DISPLAY"]).convert("RGB").save(path)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    report = OUT / "report.json"
    report.unlink(missing_ok=True)
    code = ("import engine as ik; ik.init(backend='cpu'); from app import gui; "
            f"gui.run(frames=900, report={str(report)!r}, size={SIZE})")
    here = Path(tempfile.gettempdir()) / "ikstudio-demo"  # the record field shows this folder, not the checkout's
    here.mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(OUT.parent.parent),
                                                                    os.environ.get("PYTHONPATH")])))
    app = subprocess.Popen([sys.executable, "-c", code], cwd=here, env=env)
    while not report.exists() or json.loads(report.read_text())["images"] < 5:
        time.sleep(0.3)
    time.sleep(2.0)
    shot(OUT / "app.png")
    r = json.loads(report.read_text())
    ox, oy = r["view_origin"]

    def xdo(*args) -> None:
        subprocess.run(["xdotool", *map(str, args)], check=True)

    front = max(range(len(r["env_px"])), key=lambda e: r["env_px"][e][1])  # the env nearest the viewer
    ex, ey = r["env_px"][front]
    xdo("mousemove", int(ox + ex), int(oy + ey))
    xdo("click", 1)  # a click that does not drag selects that env: its cell gets the gizmo
    time.sleep(3.0)
    r = json.loads(report.read_text())
    h = next(h for h in r["handles"] if h["target"] == 0 and h["kind"] == "axis" and h["axis"] == 0)
    a, b = np.array(h["points_px"][0]), np.array(h["points_px"][1])
    metres = np.linalg.norm(np.subtract(h["points"][1], h["points"][0]))
    per_metre = (b - a) / metres  # px per metre along +x, near the gizmo
    grab = a + 0.9 * (b - a) + (ox, oy)
    xdo("mousemove", int(grab[0]), int(grab[1]))
    time.sleep(0.5)
    xdo("mousedown", 1)
    for k in range(5):  # -5 cm per frame along x: toward the robot
        p = grab - 0.05 * k * per_metre
        xdo("mousemove", int(p[0]), int(p[1]))
        time.sleep(2.5)
        shot(OUT / f"drag_{k}.png")
    far = grab + 0.9 * per_metre  # out of reach: the target stays there, the robots turn red
    xdo("mousemove", int(far[0]), int(far[1]))
    time.sleep(3.0)
    shot(OUT / "unreachable.png")
    xdo("mouseup", 1)
    app.terminate()
    app.wait(timeout=60)
    report.unlink(missing_ok=True)
    from PIL import Image

    frames = [OUT / f"drag_{k}.png" for k in range(5)]
    images = [Image.open(f).resize((SIZE[0] // 2, SIZE[1] // 2), Image.LANCZOS) for f in frames]
    images[0].save(OUT / "drag.gif", save_all=True, append_images=images[1:], duration=800, loop=0)
    for f in frames:
        f.unlink()


if __name__ == "__main__":
    os.environ.setdefault("DISPLAY", ":77")
    main()
