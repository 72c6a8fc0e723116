"""Capture the README's images: the app on the default scene, and a gizmo drag as a sequence.

Needs a display (Xvfb), xdotool and xwd + ImageMagick's ``convert``; not run by the tests.

    Xvfb :77 -screen 0 1920x1080x24 &  DISPLAY=:77 python docs/capture_drag.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "media"
SIZE = (1600, 900)


def shot(path: Path) -> None:
    xwd = subprocess.run(["xwd", "-root", "-silent"], capture_output=True, check=True).stdout
    subprocess.run(["convert", "xwd:-", "-crop", f"{SIZE[0]}x{SIZE[1]}+0+0", str(path)], input=xwd, check=True)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    report = OUT / "report.json"
    report.unlink(missing_ok=True)
    code = ("import engine as ik; ik.init(backend='cpu'); from app import gui; "
            f"gui.run(frames=900, report={str(report)!r}, size={SIZE})")
    app = subprocess.Popen([sys.executable, "-c", code], cwd=OUT.parent.parent)
    while not report.exists() or json.loads(report.read_text())["images"] < 5:
        time.sleep(0.3)
    time.sleep(2.0)
    shot(OUT / "app.png")
    r = json.loads(report.read_text())
    ox, oy = r["view_origin"]
    h = next(h for h in r["handles"] if h["target"] == 0 and h["kind"] == "plane" and h["axis"] == 2)
    grab = np.mean(h["points_px"], axis=0) + (ox, oy)
    path = [grab + np.array([-14.0 * k, 6.0 * k]) for k in range(5)]

    def xdo(*args) -> None:
        subprocess.run(["xdotool", *map(str, args)], check=True)

    xdo("mousemove", int(grab[0]), int(grab[1]))
    time.sleep(0.5)
    xdo("mousedown", 1)
    for k, p in enumerate(path):
        xdo("mousemove", int(p[0]), int(p[1]))
        time.sleep(2.5)
        shot(OUT / f"drag_{k}.png")
    far = grab + np.array([-260.0, 90.0])  # out of reach: the target stays, the robots turn red
    xdo("mousemove", int(far[0]), int(far[1]))
    time.sleep(3.0)
    shot(OUT / "unreachable.png")
    xdo("mouseup", 1)
    app.terminate()
    app.wait(timeout=60)
    report.unlink(missing_ok=True)
    frames = [str(OUT / f"drag_{k}.png") for k in range(5)]
    subprocess.run(["convert", "-delay", "80", "-loop", "0", *frames, "-resize", "50%", str(OUT / "drag.gif")],
                   check=True)
    for f in frames:
        Path(f).unlink()


if __name__ == "__main__":
    os.environ.setdefault("DISPLAY", ":77")
    main()
