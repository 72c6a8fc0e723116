"""Reading a job's targets: Parquet, ``.npz`` or ``.csv`` files, or a table in memory.

Columns, one row per target: ``x, y, z`` (m, world) and ``qw, qx, qy, qz`` (a unit quaternion,
w first) for a one-link job; for several links the same names prefixed ``LINK.`` (``hand.x``,
``left_finger.qw``). A one-link job takes the prefixed names too. A link whose position is
masked out entirely needs no ``x, y, z``; one whose orientation is free needs no quaternion.
Every other column is *carried*: copied unchanged into each output row (an id, a label).

Every problem is one :class:`~engine.errors.InvalidValueError` line naming the file and the
column or the row: a missing column, a non-numeric one, a missing (null), NaN or infinite
value, a zero or non-unit quaternion (norm 1 within :data:`QUAT_TOL`), a carried column whose
name an output column takes. Rows are numbered from 0, as in the output's ``target`` column.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError, MissingFileError

POS_COLUMNS = ("x", "y", "z")
QUAT_COLUMNS = ("qw", "qx", "qy", "qz")
QUAT_TOL = 1e-3
MAX_VALUE = float(np.finfo(np.float32).max)  # a target's number beyond this is refused (inf in float32)
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".npz": "npz", ".csv": "csv"}


def pa_modules():
    """``(pyarrow, pyarrow.parquet)``, or an error saying how to install them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("batch jobs need pyarrow: pip install 'ikstudio[batch]' (or pip install pyarrow)") from None
    return pa, pq


@dataclass
class Targets:
    """A job's validated targets.

    ``pos[i]`` ``(n, 3)`` float64 m, or None (link i takes no position target); ``quat[i]``
    ``(n, 4)`` float64 wxyz (unit within :data:`QUAT_TOL`, as given), or None; ``carried``: a
    pyarrow Table of the other columns (``n`` rows); ``source``: the file (or ``"<table>"``) for
    messages; ``sha256``: of the input file's bytes (of the table's Arrow stream for one in memory).
    """

    n_rows: int
    pos: list
    quat: list
    carried: object
    source: str
    sha256: str

    def chunk(self, start: int, stop: int) -> tuple[list, list]:
        """Rows ``start:stop`` of every link's targets: ``(pos list, quat list)``, None where absent."""
        return ([None if p is None else p[start:stop] for p in self.pos],
                [None if q is None else q[start:stop] for q in self.quat])

    def rows(self, rows: np.ndarray) -> tuple[list, list]:
        """The rows ``rows`` (input indices, any order) of every link's targets, as :meth:`chunk`."""
        return ([None if p is None else p[rows] for p in self.pos], [None if q is None else q[rows] for q in self.quat])


def _hash_table(table) -> str:
    pa, _ = pa_modules()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(memoryview(sink.getvalue())).hexdigest()


def _read_bytes(path: Path, label: str) -> tuple[list[tuple[Path, bytes]], str]:
    """The bytes of the input file (every data file of a Parquet folder, in name order) and their
    SHA-256, read once: the table is parsed from these very bytes, so the hash is of what was
    solved even if the file is replaced while the job runs."""
    try:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_")))
            blobs = [(f, f.read_bytes()) for f in files]
            digest = hashlib.sha256()
            for f, data in blobs:
                digest.update(str(f.relative_to(path)).encode() + b"\0" + hashlib.sha256(data).hexdigest().encode())
            return blobs, digest.hexdigest()
        data = path.read_bytes()
    except OSError as err:
        raise InvalidValueError(f"{label}: cannot read '{getattr(err, 'filename', None) or path}': "
                                f"{err.strerror or err}") from None
    return [(path, data)], hashlib.sha256(data).hexdigest()


def read_table(source, label: str = "targets"):
    """``(table, name, sha256)`` for a file path (.parquet / .pq / a Parquet folder, .npz, .csv), a
    pyarrow Table, a pandas DataFrame or a mapping of column name -> 1-D array; ``label`` names
    the argument in errors."""
    pa, pq = pa_modules()
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        name = os.fspath(source)
        if not path.exists():
            raise MissingFileError(f"{label}: no such file: '{name}'")
        kind = "parquet" if path.is_dir() else SUFFIXES.get(path.suffix.lower())
        if kind is None:
            raise InvalidValueError(f"{label}: {name}: expected a .parquet, .npz or .csv file, got suffix "
                                    f"{path.suffix or '(none)'!r}")
        blobs, sha = _read_bytes(path, label)
        try:
            # single-threaded: reading is a small part of a job, and pyarrow's thread pool would
            # stay in the process beside the solver's (its threads' malloc arenas grew the memory
            # of later work, e.g. the renderer's, by 10-60 MB in a test process)
            if kind == "parquet":
                tables = [pq.read_table(pa.BufferReader(data), use_threads=False) for _, data in blobs]
                table = tables[0] if len(tables) == 1 else pa.concat_tables(tables, promote_options="default")
            elif kind == "csv":
                table = _csv_table(blobs[0][1], name)
            else:
                table = _npz_table(io.BytesIO(blobs[0][1]), name)
        except (InvalidValueError, InvalidTypeError):
            raise
        except Exception as err:  # a damaged or foreign file
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InvalidValueError(f"{name}: cannot read as {kind}: {first}") from None
        return table, name, sha
    if isinstance(source, pa.Table):
        return source, "<table>", _hash_table(source)
    if type(source).__name__ == "DataFrame":  # pandas, without importing it
        table = pa.Table.from_pandas(source, preserve_index=False)
        return table, "<DataFrame>", _hash_table(table)
    if isinstance(source, dict):
        try:
            table = pa.table({str(k): np.asarray(v) if not isinstance(v, pa.Array) else v for k, v in source.items()})
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as err:
            raise InvalidValueError(f"{label}: cannot make a table of the mapping: {err}") from None
        return table, "<mapping>", _hash_table(table)
    raise InvalidTypeError(f"{label}: expected a file path, a pyarrow Table, a pandas DataFrame or a mapping of "
                           f"columns, got {type(source).__name__}")


_CSV_COLUMN = re.compile(r"In CSV column #(\d+): (.*)")


def _csv_table(data: bytes, name: str):
    """A CSV file's table; a value that does not fit its column's type is named by column and row
    (pyarrow names the column only: the column is read again as text to find the row)."""
    pa, _ = pa_modules()
    from pyarrow import csv

    try:
        return csv.read_csv(pa.BufferReader(data), read_options=csv.ReadOptions(use_threads=False))
    except pa.ArrowInvalid as err:
        m = _CSV_COLUMN.search(str(err))
        if m is None:
            raise
        index, reason = int(m.group(1)), m.group(2)
    import csv as text_csv

    header = next(text_csv.reader([data.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")]), [])
    column = header[index] if index < len(header) else f"#{index}"
    strings = csv.read_csv(pa.BufferReader(data), read_options=csv.ReadOptions(use_threads=False),
                           convert_options=csv.ConvertOptions(column_types={column: pa.string()},
                                                              include_columns=[column]))
    _first_non_number(strings.column(0), column, name)
    raise InvalidValueError(f"{name}: column {column!r}: {reason}")


def _first_non_number(col, column: str, name: str) -> None:
    """Raise naming the first row of the text column ``col`` whose value is not a number."""
    for row, value in enumerate(col.to_numpy(zero_copy_only=False)):
        if value is None or value == "":
            continue
        try:
            float(value)
        except (TypeError, ValueError):
            raise InvalidValueError(f"{name}: column {column!r}: {value!r} in row {row} is not a number") from None


def _npz_table(path, name: str):
    pa, _ = pa_modules()
    with np.load(path, allow_pickle=False) as data:
        columns = {}
        for key in data.files:
            arr = data[key]
            if arr.ndim != 1:
                raise InvalidValueError(f"{name}: array {key!r} has shape {arr.shape}; expected one 1-D array per "
                                        f"column (x, y, z, qw, qx, qy, qz, ...)")
            columns[key] = arr
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in columns.items())
        raise InvalidValueError(f"{name}: arrays of different lengths ({sizes}); expected one value per row in each")
    return pa.table(columns)


def _rows(idx: np.ndarray) -> str:
    shown = ", ".join(str(int(i)) for i in idx[:5])
    more = f" and {len(idx) - 5} more" if len(idx) > 5 else ""
    return f"row{'s' if len(idx) > 1 else ''} {shown}{more}"


def numeric_column(table, column: str, source: str) -> np.ndarray:
    """Column ``column`` of ``table`` as float64 numbers; a string, a missing value or another type
    is an InvalidValueError naming ``source``, the column and the row."""
    return _column(table, column, source)


def _column(table, column: str, source: str) -> np.ndarray:
    pa, _ = pa_modules()
    import pyarrow.compute as pc

    col = table.column(column)
    if not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            _first_non_number(col, column, source)
        raise InvalidValueError(f"{source}: column {column!r}: expected numbers, got {col.type}")
    if col.null_count:
        idx = np.flatnonzero(pc.is_null(col).to_numpy(zero_copy_only=False))
        raise InvalidValueError(f"{source}: column {column!r}: missing value in {_rows(idx)}")
    if pa.types.is_integer(col.type):  # every integer as the nearest float64 (uint64 past 2**63 too)
        arr = np.asarray(col.combine_chunks().to_numpy(zero_copy_only=False), dtype=np.float64)
    else:
        arr = pc.cast(col, pa.float64()).to_numpy()
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = np.flatnonzero(bad)
        what = "NaN" if np.isnan(arr[idx[0]]) else "infinite value"
        raise InvalidValueError(f"{source}: column {column!r}: {what} in {_rows(idx)}")
    big = np.abs(arr) > MAX_VALUE
    if big.any():  # would be inf in the engine's float32 buffers: the chunk could never be solved
        idx = np.flatnonzero(big)
        raise InvalidValueError(f"{source}: column {column!r}: {arr[idx[0]]:g} in {_rows(idx)} is beyond the engine's "
                                f"float range; expected values within {MAX_VALUE:.4g}")
    return arr


def _names(link: str, single: bool, columns: list[str], base: tuple[str, ...]) -> list[str]:
    prefixed = [f"{link}.{c}" for c in base]
    if single and not any(c in columns for c in prefixed):
        return list(base)
    return prefixed


def load_targets(source, links: list[str], has_pos: list[bool], has_quat: list[bool],
                 reserved: set[str], label: str = "targets") -> Targets:
    """Read and check the targets of ``links`` (see the module docstring). ``reserved``: output
    column names, which a carried column may not take; ``label`` names the argument in errors."""
    table, name, sha = read_table(source, label)
    columns = list(table.column_names)
    single = len(links) == 1
    if table.num_rows == 0:
        raise InvalidValueError(f"{name}: no rows; expected one target per row")
    used: list[str] = []
    pos, quat = [], []
    for link, want_pos, want_quat in zip(links, has_pos, has_quat):
        wanted = []
        if want_pos:
            wanted.append(_names(link, single, columns, POS_COLUMNS))
        if want_quat:
            wanted.append(_names(link, single, columns, QUAT_COLUMNS))
        for group in wanted:
            missing = [c for c in group if c not in columns]
            if missing:
                shown = ", ".join(columns[:20]) + (" ..." if len(columns) > 20 else "")
                raise InvalidValueError(f"{name}: missing column{'s' if len(missing) > 1 else ''} "
                                        f"{', '.join(repr(c) for c in missing)} (link {link!r}); the file has: {shown}")
        arrays = [np.stack([_column(table, c, name) for c in group], axis=1) for group in wanted]
        used += [c for group in wanted for c in group]
        p = arrays.pop(0) if want_pos else None
        q = arrays.pop(0) if want_quat else None
        if q is not None:
            q = _unit(q, wanted[-1], name)
        pos.append(p)
        quat.append(q)
    carried = table.drop_columns(used) if used else table
    clash = [c for c in carried.column_names if c in reserved]
    if clash:
        raise InvalidValueError(f"{name}: column {clash[0]!r} is also an output column (target, q_<joint>, success, "
                                f"pos_error, rot_error, iterations); rename it in the input")
    return Targets(table.num_rows, pos, quat, carried.combine_chunks(), name, sha)


def _unit(q: np.ndarray, columns: list[str], source: str) -> np.ndarray:
    norm = np.linalg.norm(q, axis=1)
    label = f"quaternion ({', '.join(columns)})"
    zero = np.flatnonzero(norm < 1e-9)
    if zero.size:
        raise InvalidValueError(f"{source}: {label}: zero quaternion in {_rows(zero)}; expected a unit quaternion")
    off = np.flatnonzero(np.abs(norm - 1.0) > QUAT_TOL)
    if off.size:
        raise InvalidValueError(f"{source}: {label}: norm {norm[off[0]]:.6g} in {_rows(off)}; expected a unit "
                                f"quaternion (norm 1 within {QUAT_TOL:g})")
    return q  # as given: the IK makes it unit itself, so a row gets exactly the in-process call's answer
