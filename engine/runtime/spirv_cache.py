"""Vulkan kernels in taichi's disk cache without their debug names, so that they load in seconds.

Taichi 1.7.4 names nearly every value of the SPIR-V it generates (``OpName``: a third of a solver's
instructions), and when it loads a kernel it reflects the shader with SPIRV-Reflect, whose lookup
of each name's target is a linear search over every instruction: quadratic. For the dual arm's
per-robot solver (~100k instructions) that was 10 of the 12 s a warm process spent before its first
solve on lavapipe; the shader compile itself was under 2 s. The names are debug information only.

:func:`drop_debug_names` rewrites the Vulkan files of a cache folder without ``OpName`` and
``OpMemberName``. Taichi writes a kernel's file when its program ends (``ti.reset``, the end of
the process), so this runs before each runtime's first kernel reads the cache (``engine.init``)
and after the engine resets taichi: the first process pays the names once, later runtimes do not.

The file format is taichi's (``compiled_kernel_data.cpp``, pinned with taichi): the head
``TIC\\0``, the arch (u32), the metadata's and the source's sizes (u64 each), the metadata (JSON),
the source (u64 size of itself, u64 count of SPIR-V modules, then each module as a u64 count of
words and the words), and the SHA-256 of metadata and source as 64 hex digits. A file that does not
parse exactly so, or whose hash does not match (another process may be writing it), is left as it
is; a rewrite replaces the file in one step, so a reader sees the old file or the new one.
``tests/test_spirv_cache.py`` guards it: a fresh process loads the rewritten kernels and answers bit
for bit as the first did.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import struct
from pathlib import Path
from stat import S_ISREG

import numpy as np

from ..cache_root import write_whole

HEAD = b"TIC\0"
VULKAN_ARCH = 10  # taichi 1.7.4's Arch::vulkan
SPIRV_MAGIC = 0x07230203
DEBUG_NAME_OPS = (5, 6)  # OpName, OpMemberName
HASH_LEN = 64
INDEX_NAME = ".ikstudio-spirv-lean.json"  # files already looked at: {file name: [size, mtime_ns]}


def drop_debug_names(folder) -> int:
    """Rewrite the Vulkan kernel files of taichi's cache ``folder`` without SPIR-V debug names;
    returns how many files were rewritten. Files looked at before (same size and time) are skipped
    through an index beside them. Never raises: a cache it cannot read or write stays as it is."""
    if folder is None:
        return 0
    folder = Path(folder)
    index_path = folder / INDEX_NAME
    try:
        seen = json.loads(index_path.read_text())
        if not isinstance(seen, dict):
            seen = {}
    except Exception:  # unreadable, not UTF-8, not JSON, nested past the recursion limit: start afresh
        seen = {}
    rewritten, changed = 0, False
    try:
        files = [p for p in folder.iterdir() if p.suffix == ".tic"]
    except OSError:
        return 0
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        if not S_ISREG(stat.st_mode):  # a folder, a FIFO (whose open would wait for a writer): not taichi's
            continue
        if seen.get(path.name) == [stat.st_size, stat.st_mtime_ns]:
            continue
        try:
            lean = _lean_file(path)
        except Exception:  # a format this reader does not expect: the file stays as taichi wrote it
            lean = None
        if lean is not None and write_whole(path, lean):
            rewritten += 1
            with contextlib.suppress(OSError):
                stat = path.stat()
        seen[path.name] = [stat.st_size, stat.st_mtime_ns]
        changed = True
    if changed:
        present = {p.name for p in files}
        write_whole(index_path, json.dumps({k: v for k, v in seen.items() if k in present}).encode())
    return rewritten


def _lean_file(path: Path) -> bytes | None:
    """The file at ``path`` without debug names, or None when it is not a Vulkan kernel file of
    the known format, does not check, or has no names to drop."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(HEAD) + 4)
            if len(head) < len(HEAD) + 4 or head[:len(HEAD)] != HEAD or \
                    struct.unpack_from("<I", head, len(HEAD))[0] != VULKAN_ARCH:
                return None
            data = head + f.read()
    except OSError:
        return None
    return lean_bytes(data)


def lean_bytes(data: bytes) -> bytes | None:
    """A Vulkan kernel file's bytes (taichi's format: the module docstring) without debug names,
    or None when they do not parse, do not check, or hold no names."""
    at = len(HEAD) + 4
    if len(data) < at + 16:
        return None
    meta_size, src_size = struct.unpack_from("<QQ", data, at)
    meta_at = at + 16
    src_at = meta_at + meta_size
    if src_at + src_size + HASH_LEN != len(data):
        return None
    meta, src, digest = data[meta_at:src_at], data[src_at:src_at + src_size], data[src_at + src_size:]
    if hashlib.sha256(meta + src).hexdigest().encode() != digest:
        return None
    modules = spirv_modules(src)
    if modules is None:
        return None
    lean = [without_names(words) for words in modules]
    if all(len(a) == len(b) for a, b in zip(lean, modules)):
        return None
    body = struct.pack("<Q", len(lean)) + b"".join(struct.pack("<Q", len(w)) + w.tobytes() for w in lean)
    new_src = struct.pack("<Q", 8 + len(body)) + body
    return (data[:at] + struct.pack("<QQ", meta_size, len(new_src)) + meta + new_src
            + hashlib.sha256(meta + new_src).hexdigest().encode())


def spirv_modules(src: bytes) -> list[np.ndarray] | None:
    """The SPIR-V modules (uint32 words each) of a kernel file's source, or None when the source is
    not exactly a size, a count and that many word vectors, each a SPIR-V module."""
    if len(src) < 16 or struct.unpack_from("<Q", src, 0)[0] != len(src):
        return None
    count = struct.unpack_from("<Q", src, 8)[0]
    at, out = 16, []
    for _ in range(count):
        if at + 8 > len(src):
            return None
        n = struct.unpack_from("<Q", src, at)[0]
        at += 8
        if n < 5 or at + 4 * n > len(src):
            return None
        words = np.frombuffer(src, np.uint32, n, at)
        if words[0] != SPIRV_MAGIC:
            return None
        out.append(words)
        at += 4 * n
    return out if at == len(src) else None


def without_names(words: np.ndarray) -> np.ndarray:
    """A SPIR-V module's words without its OpName / OpMemberName instructions (the module itself
    when an instruction's length does not fit: left as it is)."""
    starts, p, n = [], 5, len(words)
    lengths = words >> 16
    while p < n:
        starts.append(p)
        step = int(lengths[p])
        if step == 0:
            return words
        p += step
    if p != n:
        return words
    starts = np.asarray(starts)
    ops = words[starts] & 0xFFFF
    named = np.isin(ops, DEBUG_NAME_OPS)
    if not named.any():
        return words
    keep = np.ones(n, bool)
    for s, length in zip(starts[named], lengths[starts[named]]):
        keep[s:s + int(length)] = False
    return words[keep]

