"""The collision fits shipped with the package (:mod:`engine.collision.fit_store`,
``python -m engine.collision.prefit``): every catalog robot has a current one, a fresh fit in a
fresh process gives the shipped arrays bit for bit, a fresh machine reads them without fitting,
and a damaged or stale file is never taken for an answer.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from engine.assets import list_robots
from engine.collision import fit_store
from engine.collision import spheres as spheres_mod
from engine.collision.cover import DEFAULT_TOLERANCE
from engine.collision.geometry import collision_geometry
from engine.collision.pieces import pieces_file_name, robot_pieces
from engine.collision.spheres import fit_name, sphere_model
from engine.model import load
from engine.model.errors import ModelLoadError
from engine.morphs import MJCF, URDF


def _morph(entry):
    return URDF(file=str(entry.path), fixed=True) if entry.format == "urdf" else MJCF(file=str(entry.path))


def _sphere_name(morph) -> tuple[str, object, object]:
    """The file name of the default model's spheres for ``morph``, its tree and its geometry."""
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    return fit_name(tree, geometry, None, DEFAULT_TOLERANCE), tree, geometry


def test_every_catalog_robot_has_a_current_shipped_fit():
    shipped = set(fit_store.shipped_names())
    missing, checked = [], 0
    for entry in list_robots():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the catalog's own complaints (mimic joints, ...)
                morph = _morph(entry)
                name, tree, geometry = _sphere_name(morph)
        except ModelLoadError:
            continue  # a catalog file that does not load has nothing to check
        checked += 1
        if name not in shipped:
            missing.append(entry.name)
        if pieces_file_name(tree, geometry, float(morph.scale)) not in shipped:
            missing.append(f"{entry.name} (pieces)")
    assert checked > 60
    assert not missing, (f"no current shipped fit for {missing}: run `python -m engine.collision.prefit` "
                         "(after a change of the fitting or of the robot files)")


def test_a_fresh_fit_in_a_fresh_process_is_the_shipped_one(tmp_path):
    code = textwrap.dedent(f"""
        import numpy as np
        from engine.collision import fit_store
        fit_store.SHIPPED = fit_store.SHIPPED / "none"   # fit afresh
        from engine.collision.geometry import collision_geometry
        from engine.collision.spheres import sphere_model
        from engine.model import load
        from engine.morphs import URDF
        morph = URDF(file="erd:ur5", fixed=True)
        tree = load(morph)
        m = sphere_model(tree, collision_geometry(tree, morph), None)
        np.savez({str(tmp_path / "fresh.npz")!r}, link=m.link, centers=m.centers, radii=m.radii)
    """)
    env = {**os.environ, "IKSTUDIO_CACHE_DIR": str(tmp_path / "cache"), "PYTHONHASHSEED": "123"}  # another hash seed
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)
    name, _, _ = _sphere_name(URDF(file="erd:ur5", fixed=True))
    fresh = np.load(tmp_path / "fresh.npz")
    with np.load(fit_store.SHIPPED / name) as held:
        for field in ("link", "centers", "radii"):
            np.testing.assert_array_equal(fresh[field], held[field], err_msg=field)


def test_a_fresh_machine_reads_the_shipped_fit_without_fitting(tmp_path, monkeypatch):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))  # an empty cache

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted, though a shipped fit exists")

    monkeypatch.setattr(spheres_mod, "_fit_link", no_fit)
    morph = URDF(file="erd:panda", fixed=True)
    name, tree, geometry = _sphere_name(morph)
    model = sphere_model(tree, geometry, None)
    with np.load(fit_store.SHIPPED / name) as held:
        np.testing.assert_array_equal(model.radii, held["radii"])
    assert not (tmp_path / "collision").exists() or not list((tmp_path / "collision").iterdir())


def test_a_fresh_machine_reads_the_shipped_pieces_and_a_fresh_cut_is_the_same(tmp_path, monkeypatch):
    """The exact tier's pieces ship too (a fresh machine cut hyq's for 12 s, xArm7's for 28 s, in
    each test process): read without cutting from an empty cache, and bit for bit what a fresh
    cut in another process (another hash seed) makes."""
    from engine.collision import pieces as pieces_mod

    morph = URDF(file="erd:panda", fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    code = textwrap.dedent(f"""
        import numpy as np
        from engine.collision import fit_store
        fit_store.SHIPPED = fit_store.SHIPPED / "none"   # cut afresh
        from engine.collision.geometry import collision_geometry
        from engine.collision.pieces import pack, robot_pieces
        from engine.model import load
        from engine.morphs import URDF
        morph = URDF(file="erd:panda", fixed=True)
        tree = load(morph)
        np.savez({str(tmp_path / "fresh.npz")!r}, **pack(robot_pieces(tree, collision_geometry(tree, morph))))
    """)
    env = {**os.environ, "IKSTUDIO_CACHE_DIR": str(tmp_path / "cache"), "PYTHONHASHSEED": "321"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=600)

    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path / "empty"))

    def no_cut(*args, **kwargs):
        raise AssertionError("cut, though shipped pieces exist")

    monkeypatch.setattr(pieces_mod, "link_pieces", no_cut)
    held = pieces_mod.pack(robot_pieces(tree, geometry))
    with np.load(tmp_path / "fresh.npz") as fresh:
        for field, value in held.items():
            np.testing.assert_array_equal(fresh[field], value, err_msg=field)
    assert sum(held["per_link"]) >= tree.n_links - 2  # a piece per link with geometry at least


@pytest.mark.parametrize("damage", ["truncated", "not npz", "fields missing"])
def test_a_damaged_fit_is_fitted_again_and_replaced(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fit_store, "SHIPPED", tmp_path / "shipped")  # nothing shipped: the cache decides
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("""<robot name="arm"><link name="base"><collision><geometry><box size="0.1 0.1 0.05"/></geometry>
      </collision></link><link name="arm"><collision><origin xyz="0 0 0.15"/><geometry><box size="0.05 0.06 0.3"/>
      </geometry></collision></link><joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
      <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""")
    morph = URDF(file=str(urdf), fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    first = sphere_model(tree, geometry, None, tolerance=0.01)
    (path,) = (tmp_path / "collision").glob("spheres_*.npz")
    good = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(good[:len(good) // 2])
    elif damage == "not npz":
        path.write_text("hello")
    else:
        np.savez(path, link=first.link)
    again = sphere_model(tree, geometry, None, tolerance=0.01)
    np.testing.assert_array_equal(first.radii, again.radii)
    np.testing.assert_array_equal(first.centers, again.centers)
    with np.load(path) as data:  # the cache holds a whole fit again
        np.testing.assert_array_equal(data["radii"], first.radii)


def test_prefit_names_a_robot_it_cannot_fit_and_fails(capsys):
    """``python -m engine.collision.prefit`` with a name the catalog does not hold: exit 1, the
    name in the message, and the shipped folder left as it was."""
    from engine.collision import prefit

    before = fit_store.shipped_names()
    assert prefit.main(["no_such_robot"]) == 1
    assert "no_such_robot: FAILED" in capsys.readouterr().err
    assert fit_store.shipped_names() == before
