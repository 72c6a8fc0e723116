"""Vulkan kernels in taichi's disk cache without their SPIR-V debug names (engine.runtime.spirv_cache).

The guard of the rewrite of taichi's cache files: a fresh process writes a Vulkan kernel's file
(with names, as taichi makes it), the next process's ``engine.init`` drops the names, loads the
kernel from the rewritten file (taichi's own log says so, and says no load failed) and answers bit
for bit as the first process did. A taichi whose file format differs fails here. The rest feeds
the rewrite damaged and foreign files, which it must leave as they are.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _support import skip_or_fail

from engine.runtime import spirv_cache

REPO = Path(__file__).resolve().parent.parent
SCRIPT = """
import json, sys
import numpy as np
import engine
engine.init(backend="vulkan", precision="32", logging_level=sys.argv[1])
scene = engine.Scene()
robot = scene.add_entity(engine.morphs.URDF(file="erd:panda", fixed=True))
scene.build(n_envs=4)
q = np.random.default_rng(3).uniform(-1, 1, (4, robot.n_qs))
pos, quat = robot.forward_kinematics(q)
print("RESULT " + json.dumps([np.asarray(pos).tobytes().hex(), np.asarray(quat).tobytes().hex()]))
"""


def _names(path: Path) -> int:
    """How many OpName / OpMemberName instructions the SPIR-V modules of a kernel file hold."""
    data = path.read_bytes()
    at = len(spirv_cache.HEAD) + 4
    meta_size, src_size = struct.unpack_from("<QQ", data, at)
    src = data[at + 16 + meta_size:at + 16 + meta_size + src_size]
    total = 0
    for words in spirv_cache.spirv_modules(src):
        p = 5
        while p < len(words):
            total += int(words[p] & 0xFFFF) in spirv_cache.DEBUG_NAME_OPS
            p += int(words[p] >> 16)
    return total


def _vulkan_files(folder: Path) -> list[Path]:
    return [p for p in folder.glob("*.tic")
            if struct.unpack_from("<I", p.read_bytes(), len(spirv_cache.HEAD))[0] == spirv_cache.VULKAN_ARCH]


def _run(tmp_path: Path, cache: Path, level: str) -> tuple[list[str], str]:
    script = tmp_path / "fk_on_vulkan.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "TI_OFFLINE_CACHE_FILE_PATH": str(cache), "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, str(script), level], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):]), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def vulkan():
    from engine.runtime import devices

    if not devices.vulkan_devices():
        skip_or_fail("no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")


def test_a_fresh_process_loads_the_lean_kernels_and_answers_bit_for_bit(vulkan, tmp_path):
    cache = tmp_path / "cache"
    first, _ = _run(tmp_path, cache, "warn")
    files = _vulkan_files(cache)
    assert files and all(_names(p) > 0 for p in files), "taichi wrote no named Vulkan kernel: nothing is tested"
    second, log = _run(tmp_path, cache, "debug")
    assert second == first
    assert all(_names(p) == 0 for p in _vulkan_files(cache))
    assert "Load cache file" not in log, log[-3000:]  # taichi's line when a cache file does not load
    loaded = [line for line in log.splitlines() if "forward_kinematics" in line and "from cache" in line]
    assert loaded, log[-3000:]


def test_damaged_and_foreign_files_are_left_as_they_are(vulkan, tmp_path):
    cache = tmp_path / "cache"
    _run(tmp_path, cache, "warn")
    good = max(_vulkan_files(cache), key=lambda p: p.stat().st_size)
    data = good.read_bytes()
    lean = spirv_cache.lean_bytes(data)
    assert lean is not None and len(lean) < len(data) and spirv_cache.lean_bytes(lean) is None  # once only
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x10
    damaged = {"truncated": data[:len(data) // 2], "flipped": bytes(flipped), "empty": b"",
               "hash_cut": data[:-1], "head_only": data[:8], "cpu": data[:4] + struct.pack("<I", 0) + data[8:],
               **{f"head_{n}": data[:n] for n in range(1, 8)}}
    for name, content in damaged.items():
        (cache / f"{name}.tic").write_bytes(content)
    assert spirv_cache.drop_debug_names(cache) >= 1
    for name, content in damaged.items():
        assert (cache / f"{name}.tic").read_bytes() == content, name
    assert good.read_bytes() == lean
    index = json.loads((cache / spirv_cache.INDEX_NAME).read_text())
    assert index[good.name] == [good.stat().st_size, good.stat().st_mtime_ns]
    assert spirv_cache.drop_debug_names(cache) == 0  # looked at once
    assert spirv_cache.drop_debug_names(tmp_path / "no such folder") == 0 and spirv_cache.drop_debug_names(None) == 0


@pytest.mark.parametrize("index", ["[" * 100_000, "[1, 2]", "\udcff", "{\"a\": 1}", "not json"],
                         ids=["nested", "a_list", "not_utf8", "odd_values", "not_json"])
def test_a_damaged_index_or_odd_files_never_raise_nor_wait(tmp_path, index):
    """A nested, foreign or garbled index starts afresh; a FIFO named like a kernel file (whose
    open would wait for a writer) and a folder so named are passed over."""
    (tmp_path / spirv_cache.INDEX_NAME).write_text(index, errors="surrogateescape")
    os.mkfifo(tmp_path / "Tfifo.tic")
    (tmp_path / "Tfolder.tic").mkdir()
    (tmp_path / "Tshort.tic").write_bytes(b"TIC\0\n")
    assert spirv_cache.drop_debug_names(tmp_path) == 0
    assert isinstance(json.loads((tmp_path / spirv_cache.INDEX_NAME).read_text()), dict)


def test_a_module_keeps_every_instruction_but_its_names():
    words = np.array([spirv_cache.SPIRV_MAGIC, 0x10000, 0, 9, 0,
                      (3 << 16) | 5, 7, 0x00616161,        # OpName %7 "aaa"
                      (2 << 16) | 248, 7,                  # OpLabel %7
                      (4 << 16) | 6, 8, 1, 0x00000062,     # OpMemberName %8 1 "b"
                      (1 << 16) | 253], np.uint32)         # OpReturn
    np.testing.assert_array_equal(spirv_cache.without_names(words),
                                  [spirv_cache.SPIRV_MAGIC, 0x10000, 0, 9, 0, (2 << 16) | 248, 7, (1 << 16) | 253])
    broken = words.copy()
    broken[8] = (9 << 16) | 248  # an instruction running past the end: left as it is
    assert spirv_cache.without_names(broken) is broken
