"""engine.vis.shaders: the renderer's shaders live in the engine's cache folder, once per machine
and version (a temp folder per process left one folder behind per killed process), and in a temp
folder of the process's where that cache cannot be written."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.vis import shaders

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """No folder chosen yet in this process, the cache in ``tmp_path / "cache"``, temp folders in
    ``tmp_path / "tmp"``."""
    monkeypatch.setattr(shaders, "_DIR", None)
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path


def test_the_shaders_are_written_once_into_the_cache_folder(fresh):
    paths = shaders.shader_paths()
    assert set(paths) == {"mesh.vert", "mesh.frag"}
    for name, path in paths.items():
        path = Path(path)
        assert path.parent.parent == fresh / "cache" / "shaders"
        assert path.read_text() == {"mesh.vert": shaders.MESH_VERT, "mesh.frag": shaders.MESH_FRAG}[name]
    assert not list((fresh / "tmp").iterdir()), "a temp folder was made beside a writable cache"
    # another process (which ends at once, as a killed one would) finds them there and leaves nothing
    code = "from engine.vis import shaders; print(shaders.shader_paths()['mesh.vert'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TMPDIR": str(fresh / "tmp")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == paths["mesh.vert"]
    assert not list((fresh / "tmp").iterdir())
    assert len(list((fresh / "cache" / "shaders").iterdir())) == 1


def test_a_damaged_shader_file_is_written_again(fresh, monkeypatch):
    path = Path(shaders.shader_paths()["mesh.frag"])
    path.write_text("#version 330 core\nvoid main() {")  # cut short
    monkeypatch.setattr(shaders, "_DIR", None)  # (as in a new process)
    assert Path(shaders.shader_paths()["mesh.frag"]).read_text() == shaders.MESH_FRAG


def test_an_unwritable_cache_falls_back_to_a_temp_folder(fresh):
    (fresh / "cache").write_text("a file where the cache folder would be")
    paths = shaders.shader_paths()
    folder = Path(paths["mesh.vert"]).parent
    assert folder.parent == fresh / "tmp" and folder.name.startswith("ikstudio-shaders-")
    assert Path(paths["mesh.frag"]).read_text() == shaders.MESH_FRAG
