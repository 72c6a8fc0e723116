"""A built wheel carries what a user needs: the catalog's robots, the scene files, the marker mesh.

The wheel is built from a copy of the repository (``pip wheel``, as ``pip install .`` does) and
installed into a fresh virtual environment, which is lent the dependencies installed for the
Python running the tests, since the tests have no network: ``--system-site-packages`` where that
Python is the system's, and where it runs in a venv itself (whose packages a nested venv's
``--system-site-packages`` does not see: it sees the base interpreter's), a ``.pth`` file listing
this Python's package folders (plain folders: no ``.pth`` of theirs runs, so this checkout's
editable install is not lent). The wheel itself goes into the venv with ``--ignore-installed``,
and its folder comes first, so this checkout cannot answer for it. The venv's own
``ikstudio record`` then runs on the default scene, resolving ``panda`` from the packaged catalog
(and ``meshes/axis.obj`` from the packaged assets), and every path it reports is inside the venv.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import imageio.v2 as iio

REPO = Path(__file__).resolve().parent.parent


def test_a_wheel_install_records_the_default_scene_with_the_packaged_panda(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "tests", "__pycache__", "build", "*.egg-info", "*.mp4", ".ruff_cache", ".pytest_cache"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path / "dist"),
                            str(src)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = glob.glob(str(tmp_path / "dist" / "ikstudio-*.whl"))
    assert len(wheel) == 1
    with zipfile.ZipFile(wheel[0]) as z:
        names = set(z.namelist())
    for needed in ("engine/data/assets/panda/panda.xml", "engine/data/assets/dual_arm/dual_arm.xml",
                   "engine/data/meshes/axis.obj", "app/scenes/batched_panda.yaml"):
        assert needed in names, f"the wheel lacks {needed}"
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-2000:]
    python, ikstudio = venv / "bin" / "python", venv / "bin" / "ikstudio"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                                "--ignore-installed", wheel[0]], capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, timeout=60).stdout.strip())
    assert site.is_relative_to(venv)
    lend = [p for p in sys.path if p and Path(p).is_dir() and {"site-packages", "dist-packages"} & set(Path(p).parts)
            and not Path(p).resolve().is_relative_to(REPO.resolve())]
    (site / "_lent_by_the_tests.pth").write_text("".join(f"{p}\n" for p in lend))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = tmp_path / "demo.mp4"
    probe = "import engine, app.cli.commands as c; from engine import assets; " \
            "print(engine.__file__); print(c.DEFAULT_SCENE); print(assets.resolve('panda').path); " \
            "print(engine.morphs.Mesh(file='meshes/axis.obj').file)"
    where = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=300)
    assert where.returncode == 0, where.stderr[-2000:]
    engine_file, default_scene, panda, marker = where.stdout.split()[-4:]
    for path in (engine_file, default_scene, panda, marker):
        assert Path(path).is_relative_to(site), f"{path} does not come from the wheel installed in the venv"
    assert ikstudio.exists(), "the wheel installs no ikstudio command"
    run = subprocess.run([str(ikstudio), "record", default_scene, "-o", str(out), "--frames", "3", "--size", "64x48",
                          "--no-progress", "--backend", "cpu"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    with iio.get_reader(str(out)) as reader:
        assert reader.count_frames() == 3
