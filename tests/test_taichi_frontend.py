"""engine.runtime.frontend: the memo on taichi's source-position messages and source readers gives
what taichi's own functions give, and is in place on the pinned taichi."""

import inspect

import numpy as np
import pytest
import taichi as ti
from taichi.lang import kernel_impl
from taichi.lang.ast import ast_transformer_utils

import engine
from engine.runtime import frontend


@pytest.fixture(scope="module", autouse=True)
def cpu():
    engine.init(backend="cpu")


def test_installed_on_the_pinned_taichi():
    assert frontend.install()
    originals = frontend.originals()
    assert set(originals) == {"get_pos_info", "getsourcelines", "getsourcefile", "_inside_class", "textwrap"}
    assert kernel_impl._inside_class is not originals["_inside_class"]
    assert ast_transformer_utils.ASTTransformerContext.get_pos_info is not originals["get_pos_info"]
    assert kernel_impl.getsourcelines is not originals["getsourcelines"]


@ti.func
def _twice(x):
    y = x
    for _ in ti.static(range(2)):
        y = y + x
    return y


@ti.func
def _nested(x):
    s = 0.0
    for k in range(3):
        if k > 0 and (x > 0.5 or
                      x < -0.5):
            s += _twice(x) * k
        else:
            s -= _twice(
                x)
    return s


@ti.kernel
def _kernel(a: ti.types.ndarray(), out: ti.types.ndarray()):
    for i in range(a.shape[0]):
        v = _nested(a[i])
        for j in ti.static(range(3)):
            v += _twice(a[i]) * j
        out[i] = v


def _checked(messages: list):
    """A get_pos_info that returns the memo's message after checking it against taichi's own."""
    memo = ast_transformer_utils.ASTTransformerContext.get_pos_info
    own = frontend.originals()["get_pos_info"]

    def both(self, node):
        msg = memo(self, node)
        messages.append((msg, own(self, node)))
        return msg

    return memo, both


def test_memoised_messages_are_taichis_own(monkeypatch):
    frontend.install()
    messages: list = []
    memo, both = _checked(messages)
    monkeypatch.setattr(ast_transformer_utils.ASTTransformerContext, "get_pos_info", both)
    a = np.linspace(-1, 1, 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    _kernel(a, out)
    # the same solve, in plain numpy (the kernel's IR was built from the memo's messages)
    expected = np.array([sum((3 * x * k if (k > 0 and abs(x) > 0.5) else -3 * x) for k in range(3))
                         + 3 * x * 3 for x in a], np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert len(messages) > 50
    repeats = len(messages) - len({m for m, _ in messages})
    assert repeats > 10, "the test kernel should walk the same nodes again (static loops, repeated calls)"
    for mine, theirs in messages:
        assert mine == theirs
    assert any("^" in m and "\n" in m.split("\n", 1)[1] for m, _ in messages)  # source lines with markers


def test_the_ik_solver_kernels_get_taichis_own_messages(monkeypatch):
    frontend.install()
    messages: list = []
    _, both = _checked(messages)
    monkeypatch.setattr(ast_transformer_utils.ASTTransformerContext, "get_pos_info", both)
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.URDF(file="erd:ur5", fixed=True))
    scene.build(n_envs=3)
    link = robot.get_link("ee_link") if any(lk.name == "ee_link" for lk in robot.links) else robot.links[-1]
    result = robot.inverse_kinematics(link, np.tile([0.3, 0.2, 0.4], (3, 1)), None, kernel="per_robot",
                                      return_info=True, seed=1)
    assert np.asarray(result.success).all()
    assert len(messages) > 1000
    assert all(mine == theirs for mine, theirs in messages)


def test_source_readers_give_inspects_answers():
    frontend.install()
    for fn in (_checked, test_source_readers_give_inspects_answers):
        assert kernel_impl.getsourcelines(fn) == inspect.getsourcelines(fn)
        assert kernel_impl.getsourcelines(fn) is kernel_impl.getsourcelines(fn)  # remembered
        assert kernel_impl.getsourcefile(fn) == inspect.getsourcefile(fn)


def test_taichis_textwrap_answers_as_textwrap_and_remembers():
    import textwrap

    frontend.install()
    wrap = kernel_impl.textwrap
    assert wrap is not textwrap and wrap.TextWrapper is textwrap.TextWrapper
    src = inspect.getsource(_nested)
    for line in src.splitlines() + ["\tx = 1  # a tab", "    y = " + "a + " * 40 + "b"]:
        assert wrap.fill(line, tabsize=4, width=9999) == textwrap.fill(line, tabsize=4, width=9999)
    indented = textwrap.indent(src, "    ")
    assert wrap.dedent(indented) == textwrap.dedent(indented) == src
    assert wrap.dedent(indented) is wrap.dedent(indented)  # remembered


def test_a_compile_error_still_points_at_its_source_line():
    frontend.install()

    @ti.kernel
    def broken(out: ti.types.ndarray()):
        for i in range(out.shape[0]):
            out[i] = undefined_name_here  # noqa: F821

    with pytest.raises(ti.TaichiCompilationError) as info:
        broken(np.zeros(2, np.float32))
    text = str(info.value)
    assert "undefined_name_here" in text
    assert "test_taichi_frontend.py" in text and "^" in text


def test_the_class_probe_gives_taichis_answers_and_skips_inspect_without_a_source(monkeypatch):
    """Taichi asks, for every ti.func and ti.kernel defined, whether the frame ``level`` up runs a
    class statement; the quick probe answers as taichi's own, from real files and from code
    without a source file (there without ``inspect``, whose module scan was the cost)."""
    quick, own = kernel_impl._inside_class, frontend.originals()["_inside_class"]
    pairs = []

    class Holder:  # noqa: F841  (this function's frame runs "class Holder:" meanwhile)
        for level in range(1, 4):
            pairs.append((quick(level), own(level)))

    assert [q for q, _ in pairs] == [o for _, o in pairs] and pairs[1] == (True, True), pairs
    looked_up = []
    real = inspect.getframeinfo
    monkeypatch.setattr(inspect, "getframeinfo", lambda *a, **k: looked_up.append(a) or real(*a, **k))
    found = {}
    exec(compile("found['quick'] = quick(1)\nclass C:\n    found['own'] = own(2)\n", "<generated>", "exec"),
         {"quick": quick, "own": own, "found": found})
    assert found == {"quick": False, "own": False}
    assert len(looked_up) == 1  # taichi's own looked it up; the quick probe did not


def test_the_memos_are_in_place_once_the_engine_is_imported():
    """Installed with ``import engine``, before its kernels are defined (not first at engine.init)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)  # this checkout's engine, not an installed one
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    code = ("import engine; from taichi.lang import kernel_impl; from engine.runtime import frontend; "
            "print(kernel_impl._inside_class is not frontend.originals()['_inside_class'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.stdout.split()[-1:] == ["True"], out.stdout + out.stderr


def _new_kernel():
    """A new kernel object of the same source at each call: taichi walks its source anew."""

    @ti.kernel
    def nested_and_twice(a: ti.types.ndarray(), out: ti.types.ndarray()):
        for i in range(a.shape[0]):
            out[i] = _nested(a[i]) + _twice(a[i])

    return nested_and_twice


@pytest.fixture
def fresh_memo(monkeypatch):
    """The message memo emptied, as in a new process, and nothing saved anywhere yet (restored after)."""
    frontend.install()
    memo = frontend._STORE["memo"]
    kept = dict(memo)
    memo.clear()
    monkeypatch.setattr(frontend, "_SAVED", {})
    monkeypatch.setattr(frontend, "_STORE", {**frontend._STORE, "path": None, "built": 0, "exit_hook": True})
    yield memo
    memo.clear()
    memo.update(kept)


def test_a_later_process_builds_none_of_the_messages_an_earlier_one_saved(fresh_memo, tmp_path, monkeypatch):
    a = np.linspace(-1, 1, 8).astype(np.float32)
    first, again = np.zeros(8, np.float32), np.zeros(8, np.float32)
    assert frontend.remember_messages(tmp_path) == 0  # nothing saved in this cache folder yet
    _new_kernel()(a, first)
    built = frontend.stats()["built"]
    assert built > 20
    assert frontend.save_messages() and frontend.messages_file(tmp_path).is_file()
    fresh_memo.clear()  # the next process
    assert frontend.remember_messages(tmp_path) == built
    messages: list = []
    _, both = _checked(messages)
    monkeypatch.setattr(ast_transformer_utils.ASTTransformerContext, "get_pos_info", both)
    _new_kernel()(a, again)
    assert frontend.stats() == {"built": 0, "unused_saved": 0}  # every message came from the file
    assert len(messages) > built and all(mine == theirs for mine, theirs in messages)  # taichi's own
    np.testing.assert_array_equal(again, first)
    assert not frontend.save_messages()  # nothing new: the file is left as it is


def test_a_bad_or_full_messages_file_is_replaced_not_trusted(fresh_memo, tmp_path, monkeypatch):
    path = frontend.messages_file(tmp_path)
    path.write_bytes(b"not marshal data")
    assert frontend.remember_messages(tmp_path) == 0
    out = np.zeros(4, np.float32)
    _new_kernel()(np.ones(4, np.float32), out)
    assert frontend.save_messages() and frontend.remember_messages(tmp_path) == len(fresh_memo)
    others = {("elsewhere.py", k): "another program's message" for k in range(10)}
    import marshal

    path.write_bytes(marshal.dumps({**others, **fresh_memo}))
    monkeypatch.setattr(frontend, "MAX_SAVED", len(fresh_memo) + 5)  # room for this process's, not all
    fresh_memo.clear()
    frontend.remember_messages(tmp_path)
    _new_kernel()(np.ones(4, np.float32), out)
    frontend._STORE["built"] += 1  # (as if one message were new: a write is due)
    assert frontend.save_messages()
    assert set(marshal.loads(path.read_bytes())) == set(fresh_memo)  # this process's only


def test_inspect_answers_for_importlibs_frozen_frames_as_before():
    """engine.runtime.backend tells inspect at once that importlib's frozen code has no module (it
    scanned every module loaded to find that out): the answers stay "no source"."""
    import sys

    from engine.runtime import backend

    frames = []

    class Finder:  # a meta path hook runs inside importlib's frozen frames: keep one
        @staticmethod
        def find_spec(name, path=None, target=None):
            frames.append(sys._getframe(1))

    sys.meta_path.insert(0, Finder)
    try:
        import ikstudio_no_such_module  # noqa: F401
    except ImportError:
        pass
    finally:
        sys.meta_path.remove(Finder)
    frame = frames[0]
    assert frame.f_code.co_filename in backend.FROZEN_IMPORTLIB
    assert inspect.getmodule(frame) is None and inspect.getmodule(frame.f_code) is None
    assert inspect.getsourcefile(frame) is None
    assert inspect.getframeinfo(frame).code_context is None  # what taichi reads: no statement
    with pytest.raises(OSError):
        inspect.findsource(frame)
