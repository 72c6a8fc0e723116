"""Checking a job's output folder without solving anything (``ikstudio solve --verify OUT``).

Every part is read fully: its bytes' SHA-256 must be the one the manifest recorded when it was
written, and it must decode as Parquet with the rows its chunk holds. The manifest itself must
be whole (its shape and self-checksum; :mod:`engine.batch.manifest`). Nothing is written and no
lock is taken, so a finished job on read-only media can be checked.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidValueError
from . import manifest as mf
from .dataset import PART_RE
from .targets import pa_modules


@dataclass
class Verdict:
    """What :func:`verify` found. ``problems``: one line per part that is damaged, missing or
    unknown; ``complete``: every chunk has a sound part; ``ok``: complete and no problem."""

    out: str
    chunks: int
    rows: int
    parts_ok: int = 0
    rows_ok: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.parts_ok == self.chunks

    @property
    def ok(self) -> bool:
        return self.complete and not self.problems

    def line(self) -> str:
        state = "complete and intact" if self.ok else "NOT sound"
        return (f"{self.out}: {state}: {self.parts_ok} of {self.chunks} parts verified ({self.rows_ok:,} of "
                f"{self.rows:,} rows)" + (f"; {len(self.problems)} problems" if self.problems else ""))


def verify(out, label: str = "out") -> Verdict:
    """Check the job folder ``out`` (see the module docstring). A folder without a sound manifest
    raises :class:`InvalidValueError` naming it; part problems are listed in the verdict."""
    _, pq = pa_modules()
    path = Path(os.fspath(out))
    if not path.is_dir():
        raise InvalidValueError(f"{label}: '{path}' is not a folder; expected the output folder of a job")
    try:
        manifest = mf.read(path / mf.MANIFEST)
    except InvalidValueError as err:
        raise InvalidValueError(f"{label}: {err}") from None
    chunks, rows = manifest["chunks"], manifest["input"]["rows"]
    chunk = manifest["settings"]["chunk"]
    width = max(5, len(str(chunks - 1)))
    verdict = Verdict(str(path), chunks, rows)
    names = sorted(n for n in os.listdir(path) if PART_RE.match(n))
    for index in range(chunks):
        name = f"part-{index:0{width}d}.parquet"
        want_rows = min(chunk, rows - index * chunk)
        entry = manifest["parts"].get(name)
        if name not in names:
            verdict.problems.append(f"{name}: missing (chunk {index} not solved yet)")
            continue
        if entry is None:
            verdict.problems.append(f"{name}: not recorded in the manifest (written by a run that stopped before "
                                    "recording it); a rerun solves it again")
            continue
        try:
            data = (path / name).read_bytes()
        except OSError as err:
            verdict.problems.append(f"{name}: cannot be read: {err.strerror or err}")
            continue
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            verdict.problems.append(f"{name}: its bytes do not match the SHA-256 the manifest records (damaged); a "
                                    "rerun solves it again")
            continue
        try:
            import pyarrow as pa

            n = pq.read_table(pa.BufferReader(data), use_threads=False).num_rows
        except Exception as err:  # noqa: BLE001 - any decoding failure is a problem of this part
            verdict.problems.append(f"{name}: cannot be decoded: {str(err).splitlines()[0][:120]}")
            continue
        if n != want_rows:
            verdict.problems.append(f"{name}: {n} rows; chunk {index} has {want_rows}")
            continue
        verdict.parts_ok += 1
        verdict.rows_ok += n
    for name in names:
        index = int(PART_RE.match(name).group(1))
        if index >= chunks or name != f"part-{index:0{width}d}.parquet":
            verdict.problems.append(f"{name}: not a part of this job ({chunks} chunks)")
    return verdict
