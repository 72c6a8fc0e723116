"""Frame rates of the live app: GUI frames/s and images/s, with IK, render and texture times;
and the time from the ``ikstudio`` command to the robots on screen, cold and warm.

    python bench/gui.py                 # start-up, then 16, 64 and 256 Panda envs, 1280x720 view, 6 s each
    python bench/gui.py --seconds 3 --envs 16 --no-startup

Runs the real dearpygui app (one window, under Xvfb when there is no display) on the default
scene (the seed's circling hands). The GUI thread only handles input, uploads finished images
and draws; the solver and the renderer run in their own threads (app.sim), so "frames/s" (GUI
frames) stays up when they are slow, and "images/s" (rendered images shown) is whatever the
renderer reaches. "view/image": the 3D view's size and its images' (smaller in software GL:
app.control.viewing). "IK" is the batched IK call per solved frame, "render" an image's time from
its request to its pixels, "texture" the upload of one image to dearpygui, "GUI frame" the GUI
thread's own work per frame (without the sleep that caps it at ``app.gui.window.MAX_FPS``). The load
average is printed too: other processes on the machine take CPU from all of these.

Start-up (``bench/startup.py``): ``ikstudio`` on the default scene, run as a user runs it, twice
with taichi's kernel cache in a new empty folder: cold (everything compiles), then warm (the
first run's cache loads). Each is timed from the command to the app's "robots on screen" and
"solving" lines.
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
    parser.add_argument("--seconds", type=float, default=6.0, help="measured seconds per env count")
    parser.add_argument("--envs", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--view", default="1280x720", help="3D view size WxH (default 1280x720)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-startup", action="store_true", help="skip the cold and warm start-up timing")
    which.add_argument("--startup-only", action="store_true", help="only the start-up timing")
    args = parser.parse_args()
    try:
        view_w, view_h = (int(x) for x in args.view.lower().split("x"))
    except ValueError:
        parser.error(f"--view: expected WIDTHxHEIGHT in pixels such as 1280x720, got {args.view!r}")
    if not (320 <= view_w <= 3840 and 240 <= view_h <= 2160):
        parser.error(f"--view: expected 320x240 to 3840x2160, got {args.view!r}")
    if not args.seconds > 0:
        parser.error(f"--seconds: expected a positive number of seconds, got {args.seconds}")
    bad = [n for n in args.envs if not 1 <= n <= 1024]
    if bad:
        parser.error(f"--envs: expected env counts from 1 to 1024, got {bad}")
    xvfb = None
    if not os.environ.get("DISPLAY"):
        from xvfbwrapper import Xvfb

        xvfb = Xvfb(width=view_w + 900, height=view_h + 400, colordepth=24)
        xvfb.start()
    try:
        if not args.no_startup:
            from startup import print_startup

            print_startup()
        if not args.startup_only:
            rates(args, view_w, view_h)
    finally:
        if xvfb is not None:
            xvfb.stop()


def rates(args, view_w: int, view_h: int) -> None:
    """Run the app in this process at each env count of ``args.envs`` and print its rates."""
    import engine as ik

    ik.init(backend="gpu")
    from app.gui import window as gui

    app = gui.App(size=(view_w + 2 * gui.SIDE_W + 40, view_h + gui.STATUS_H + 90))
    rows = []
    try:
        c = app.controller
        for n_envs in args.envs:
            while not (c.ready and c.worker.idle and c.last_frame is not None):  # built and solved once
                app.frame()
            if c.n_envs != n_envs:
                generation = c.view.generation
                if not c.set_n_envs(n_envs):
                    raise SystemExit(c.messages[-1][1])
                while c.view.generation == generation or c.last_frame is None:  # the GUI runs meanwhile
                    app.frame()
                    if c.messages and c.messages[-1][0] == "error":
                        raise SystemExit(c.messages[-1][1])
            t_warm = time.perf_counter()
            while time.perf_counter() - t_warm < 2.0:  # warm-up: kernels, meshes, the texture at its final size
                app.frame()
            ik_ms, render_ms, upload_ms, work_ms = [], [], [], []
            frames0, images0, load0, t0 = app.n_frames, app.n_images, os.getloadavg()[0], time.perf_counter()
            while time.perf_counter() - t0 < args.seconds:
                images = app.n_images
                app.frame()
                work_ms.append(app.work_ms)
                if c.metrics.last is not None:
                    ik_ms.append(c.metrics.last.ik_ms)
                render_ms.append(c.render_ms)
                if app.n_images > images:
                    upload_ms.append(app.view.upload_ms)
            wall = time.perf_counter() - t0
            rows.append((n_envs, f"{app.view.size[0]}x{app.view.size[1]}/{c.camera.width}x{c.camera.height}",
                         statistics.median(ik_ms or [0.0]),
                         statistics.median(render_ms), statistics.median(upload_ms or [0.0]),
                         statistics.median(work_ms), (app.n_frames - frames0) / wall,
                         (app.n_images - images0) / wall, max(load0, os.getloadavg()[0])))
    finally:
        app.controller.close()
        import dearpygui.dearpygui as dpg

        dpg.destroy_context()
    arch = ik.runtime.state.STATE.arch
    print(f"IK Studio app, Panda, backend {arch}, {os.cpu_count()} CPUs (median ms; rates per s)")
    print(f"{'envs':>5} {'view/image':>18} {'IK':>7} {'render':>8} {'texture':>8} {'GUI frame':>10} "
          f"{'frames/s':>9} {'images/s':>9} {'load avg':>9}")
    for r in rows:
        print(f"{r[0]:>5} {r[1]:>18} {r[2]:>7.2f} {r[3]:>8.1f} {r[4]:>8.2f} {r[5]:>10.2f} "
              f"{r[6]:>9.1f} {r[7]:>9.1f} {r[8]:>9.2f}")
    print("target: GUI >= 20 frames/s at 256 envs on 2 cores, software GL; images/s is what the renderer reaches")


if __name__ == "__main__":
    main()
