"""Taichi's Python front end, made cheaper where it repeats itself.

Every kernel launch that is new to a process runs taichi's Python front end: it walks the
kernel's source (and every ``ti.func`` it calls, once per call site and per unrolled
``ti.static`` iteration) and builds taichi's IR, whose hash is the offline cache's key. That walk
runs even when the compiled kernel then comes from the disk cache, so it is most of a warm start:
loading the generic IK solver from the cache took ~1.9 s of which ~1.3 s was this walk, on a
2-core CPU.

Half of the walk was one thing: taichi 1.7.4 attaches a source-position message (file, line and
the source line with a ``^^^`` marker, wrapped by ``textwrap`` to 80 columns) to most statements
it builds, through ``ASTTransformerContext.get_pos_info(node)``. It builds the same message anew
each time the same source node is walked again, ~40 000 times for the generic solver, from a few
thousand distinct nodes. :func:`install` memoises that method: the message depends only on the
function's source (its file, first line and text), the node's position and kind, and the first
line of the node's body; the memo keys on exactly those, so every message is the one taichi would have
built (``tests/test_taichi_frontend.py`` checks this against taichi's own method on the solver
kernels). IR, cache keys and error messages are unchanged.

A process still builds each distinct message once (~5 800 for the default scene's first frame, ~0.3 s
of CPU in the IK child, whose start the first answers wait on). :func:`remember_messages` (called by
``engine.init`` with taichi's offline-cache folder) reads the messages earlier processes built from
a file in that folder, and writes back, at exit, those this process built anew: a warm start builds
none. The file holds only messages keyed as above (by the source they come from, so code edits only
add new keys); past :data:`MAX_SAVED` messages it is rewritten with this process's alone. An
unreadable file is ignored (the messages are built as before).

The walk also reads each ``ti.func``'s source anew at each call site (``inspect.getsourcelines``
tokenises the whole function each time, ~10 % of the walk). :func:`install` memoises taichi's two
source readers per function object too: a function's source does not change while it lives.

Before each walk taichi re-wraps every line of the function's source (``textwrap.fill``) and
dedents it (``textwrap.dedent``), at every call site again: ~0.2 s of CPU to load the generic
solver. :func:`install` gives taichi's ``kernel_impl`` a ``textwrap`` whose ``fill`` and ``dedent``
remember their answers (pure functions of their arguments: the same text comes out).

Defining a ``ti.func`` or ``ti.kernel`` asks whether it is defined in a class body: taichi reads
the statement its decorator stands in (``inspect.getframeinfo``). Where that frame has no source
file (``<frozen importlib._bootstrap>``: most module-level definitions), ``inspect`` looks the file
up by scanning every module in ``sys.modules``, and then answers "no source", so taichi's answer
is "not in a class". That scan ran ~120 times per ``import engine`` and ~30 more for the kernels a
scene defines: ~0.25 s of CPU in each process's start (the app and each IK child, on a busy 2-core
machine). :func:`install` answers such frames at once, as taichi does, and leaves every other frame
to taichi's own function; the ~90 definitions made while taichi itself is imported, before this
module can be installed, are answered through inspect's own file table
(:mod:`engine.runtime.backend`).

This reaches into taichi's internals: taichi is pinned to 1.7.4 (pyproject). On any other version,
or if the method is missing, :func:`install` changes nothing and says so by returning False.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import inspect
import linecache
import marshal
import sys
import textwrap
import weakref
from pathlib import Path

import taichi

from ..cache_root import write_whole

_ORIGINALS: dict = {}  # taichi's own functions the memos wrap, by name, once installed
_DIGEST = "_ikstudio_source_digest"  # the attribute a context keeps its source's digest in
TAICHI_VERSION = (1, 7, 4)
MAX_SAVED = 30_000  # messages kept in the cache folder's file (~6 MB; ~5 800 for the default scene's IK)
_SAVED: dict = {}  # messages read from that file and not used yet by this process
_STORE: dict = {"path": None, "built": 0, "exit_hook": False, "memo": None}  # the file; messages built
# here since it was read; the memo once installed


def _context_class():
    from taichi.lang.ast import ast_transformer_utils

    return getattr(ast_transformer_utils, "ASTTransformerContext", None)


def _source_digest(ctx) -> bytes:
    """A digest of the function source ``ctx`` walks, computed once per context (taichi makes one
    per function call site)."""
    digest = ctx.__dict__.get(_DIGEST)
    if digest is None:
        digest = hashlib.blake2b("\n".join(ctx.src).encode(), digest_size=16).digest()
        setattr(ctx, _DIGEST, digest)
    return digest


def _key(ctx, node) -> tuple:
    """What ``get_pos_info(node)`` reads: the source (its file, first line and text), the function's
    name and indent, the node's kind and span, and (for a multi-line statement) its body's first line."""
    body = getattr(node, "body", None)
    body_line = body[0].lineno if isinstance(body, list) and body and hasattr(body[0], "lineno") else None
    return (ctx.file, ctx.lineno_offset, _source_digest(ctx), ctx.func.func.__name__, ctx.indent,
            type(node).__name__, node.lineno, node.end_lineno, node.col_offset, node.end_col_offset, body_line)


def _memo_per_function(read):
    """``read(func)`` remembered per function object (weakly: a function that goes is forgotten)."""
    memo = weakref.WeakKeyDictionary()

    def remembered(obj):
        try:
            return memo[obj]
        except (KeyError, TypeError):  # TypeError: an object without weak references
            pass
        value = read(obj)
        try:
            memo[obj] = value
        except TypeError:
            pass
        return value

    remembered.__doc__ = read.__doc__
    return remembered


class _RememberingTextwrap:
    """The ``textwrap`` module, with ``fill`` and ``dedent`` remembered per argument (see the module doc)."""

    def __init__(self):
        self.fill = functools.lru_cache(maxsize=1 << 16)(textwrap.fill)
        self.dedent = functools.lru_cache(maxsize=1 << 12)(textwrap.dedent)

    def __getattr__(self, name):
        return getattr(textwrap, name)


def _quick_class_probe(original):
    """Taichi's ``_inside_class(level)``, answered without ``inspect`` where the frame has no source
    file (see the module doc): its answer there is always False."""

    def _inside_class(level_of_class_stackframe):
        frame = inspect.currentframe()  # this call's: taichi counts the levels from its own function's
        for _ in range(level_of_class_stackframe):
            frame = frame.f_back if frame is not None else None
        if frame is None:
            return False  # taichi's own: any failure is "not in a class"
        name = frame.f_code.co_filename
        if name.startswith("<") and name.endswith(">") and name not in linecache.cache:
            return False  # inspect finds no source for it, and taichi says False
        return original(level_of_class_stackframe + 1)  # (one frame deeper: this one)

    _inside_class.__doc__ = original.__doc__
    return _inside_class


def install() -> bool:
    """Memoise taichi's source-position messages (see the module doc). Idempotent; returns whether the
    memo is in place (False on a taichi other than :data:`TAICHI_VERSION`)."""
    if "get_pos_info" in _ORIGINALS:
        return True
    cls = _context_class()
    original = getattr(cls, "get_pos_info", None) if cls is not None else None
    if tuple(taichi.__version__) != TAICHI_VERSION or original is None:
        return False
    memo: dict = {}

    def get_pos_info(self, node):
        try:
            key = _key(self, node)
        except (AttributeError, TypeError):  # a node or context this memo does not know: taichi's own way
            return original(self, node)
        msg = memo.get(key)
        if msg is None:
            msg = _SAVED.pop(key, None)
            if msg is None:
                msg = original(self, node)
                _STORE["built"] += 1
            memo[key] = msg
        return msg

    get_pos_info.__doc__ = original.__doc__
    get_pos_info.memo = _STORE["memo"] = memo
    cls.get_pos_info = get_pos_info
    _ORIGINALS["get_pos_info"] = original
    from taichi.lang import kernel_impl

    for name in ("getsourcelines", "getsourcefile"):  # the names kernel_impl reads sources through
        reader = getattr(kernel_impl, name, None)
        if callable(reader):
            _ORIGINALS[name] = reader
            setattr(kernel_impl, name, _memo_per_function(reader))
    if getattr(kernel_impl, "textwrap", None) is textwrap:
        _ORIGINALS["textwrap"] = textwrap
        kernel_impl.textwrap = _RememberingTextwrap()
    probe = getattr(kernel_impl, "_inside_class", None)
    if callable(probe):
        _ORIGINALS["_inside_class"] = probe
        kernel_impl._inside_class = _quick_class_probe(probe)
    return True


def messages_file(folder) -> Path:
    """The file in taichi's cache folder ``folder`` that keeps the messages (per taichi and Python:
    marshal's format is Python's own)."""
    version = ".".join(map(str, TAICHI_VERSION))
    return Path(folder) / f"ikstudio-taichi-messages-{version}-py{sys.version_info[0]}{sys.version_info[1]}.marshal"


def _read_messages(path: Path) -> dict:
    """The messages saved in ``path``, or {} when there are none or it cannot be read as such."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or not all(isinstance(k, tuple) and isinstance(v, str) for k, v in data.items()):
        return {}
    return data


def remember_messages(folder) -> int:
    """Take the messages saved in taichi's cache folder ``folder`` (see the module doc), and save the
    ones this process builds when it exits (:func:`save_messages`). Returns how many were read; 0
    without the memo."""
    memo = _STORE["memo"]
    if memo is None:
        return 0
    path = messages_file(folder)
    if _STORE["path"] is not None and _STORE["path"] != path:
        save_messages()  # (another folder: the messages built so far belong to the old one)
    _STORE["path"] = path
    saved = _read_messages(path)
    _SAVED.clear()
    _SAVED.update((k, v) for k, v in saved.items() if k not in memo)
    if not _STORE["exit_hook"]:
        atexit.register(save_messages)
        _STORE["exit_hook"] = True
    return len(saved)


def save_messages() -> bool:
    """Write the messages this process used, merged with the file's, if it built any anew since
    the file was read; returns whether it wrote. A failed write leaves the file as it was."""
    path, memo = _STORE["path"], _STORE["memo"]
    if path is None or memo is None or not _STORE["built"]:
        return False
    merged = {**_read_messages(path), **memo}
    if len(merged) > MAX_SAVED:
        merged = dict(memo)
    try:
        data = marshal.dumps(merged)
    except ValueError:  # a value marshal cannot write
        return False
    if not write_whole(path, data):  # whole or not at all, whoever else writes it
        return False
    _STORE["built"] = 0
    return True


def stats() -> dict:
    """How many messages this process built itself since the file was last read or written
    (``built``), and how many saved ones it has not used (``unused_saved``): for the tests."""
    return {"built": _STORE["built"], "unused_saved": len(_SAVED)}


def originals() -> dict:
    """Taichi's own functions the memos wrap, by name (``get_pos_info``, ``getsourcelines``,
    ``getsourcefile``, ``_inside_class``, ``textwrap``); empty before :func:`install`: for the tests."""
    return dict(_ORIGINALS)
