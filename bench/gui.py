"""Frame-time breakdown of the live app: IK, scene update, render, texture upload, frames/s.

    python bench/gui.py                 # 16 and 64 Panda envs, 1280x720 view, 120 frames each
    python bench/gui.py --frames 60 --envs 16

Runs the real dearpygui app (one window, under Xvfb when there is no display) on the default
scene (the seed's circling hands). Per GUI frame: the batched IK call, the visualizer's scene
update (pose upload) and rasterising (in its own thread), and the texture upload to dearpygui.
"frames/s" counts GUI frames; "images/s" the rendered images shown (the renderer runs beside the
GUI thread, so a slow render lowers images/s, not the GUI's responsiveness).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=120)
    parser.add_argument("--envs", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--view", default="1280x720", help="3D view size WxH (default 1280x720)")
    args = parser.parse_args()
    view_w, view_h = (int(x) for x in args.view.split("x"))
    xvfb = None
    if not os.environ.get("DISPLAY"):
        from xvfbwrapper import Xvfb

        xvfb = Xvfb(width=view_w + 900, height=view_h + 400, colordepth=24)
        xvfb.start()
    import engine as ik

    ik.init(backend="gpu")
    from app import gui

    app = gui.App(size=(view_w + 2 * gui.SIDE_W + 40, view_h + gui.STATUS_H + 90))
    rows = []
    try:
        for n_envs in args.envs:
            c = app.controller
            if not c.set_n_envs(n_envs):
                raise SystemExit(c.messages[-1][1])
            for _ in range(20):  # warm-up: kernels, meshes, the texture at its final size
                app.frame()
            c.wait_frame()
            ik_ms, scene_ms, raster_ms, upload_ms, frame_ms = [], [], [], [], []
            images0, t0 = app.n_images, time.perf_counter()
            for _ in range(args.frames):
                f0 = time.perf_counter()
                app.frame()
                frame_ms.append((time.perf_counter() - f0) * 1e3)
                if c.metrics.last is not None:
                    ik_ms.append(c.metrics.last.ik_ms)
                timing = c.visualizer.last_timing
                scene_ms.append(timing.get("scene_ms", 0.0) + timing.get("upload_ms", 0.0))
                raster_ms.append(timing.get("raster_ms", 0.0))
                upload_ms.append(app.view.upload_ms)
            wall = time.perf_counter() - t0
            rows.append((n_envs, f"{app.view.size[0]}x{app.view.size[1]}", statistics.median(ik_ms),
                         statistics.median(scene_ms), statistics.median(raster_ms), statistics.median(upload_ms),
                         statistics.median(frame_ms), args.frames / wall, (app.n_images - images0) / wall))
    finally:
        app.controller.close()
        import dearpygui.dearpygui as dpg

        dpg.destroy_context()
        if xvfb is not None:
            xvfb.stop()
    print(f"IK Studio app frame times (median ms), Panda, backend {ik.backend.STATE.arch}, {os.cpu_count()} CPUs")
    print(f"{'envs':>5} {'view':>10} {'IK':>7} {'scene':>7} {'render':>7} {'texture':>8} {'GUI frame':>10} "
          f"{'frames/s':>9} {'images/s':>9}")
    for r in rows:
        print(f"{r[0]:>5} {r[1]:>10} {r[2]:>7.2f} {r[3]:>7.2f} {r[4]:>7.2f} {r[5]:>8.2f} {r[6]:>10.2f} "
              f"{r[7]:>9.1f} {r[8]:>9.1f}")
    print("target: >= 15 frames/s at 16 envs, 1280x720, software GL")


if __name__ == "__main__":
    main()
