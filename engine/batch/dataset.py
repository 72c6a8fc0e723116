"""A job's output folder: a Parquet dataset of one part file per chunk, and its manifest.

    OUT/_ikstudio_solve.json     the manifest: the input's hash and rows, the settings, the chunks
    OUT/part-00000.parquet       chunk 0's rows (rows 0 .. chunk-1 of the input), and so on

pyarrow and pandas read the folder as one table (``pq.read_table(OUT)``, ``pd.read_parquet(OUT)``):
their dataset discovery skips names starting with ``_`` or ``.``, so the manifest, the lock file
and unfinished temporary files are never read as data.

What makes a job safe to stop, rerun and trust:

- a part is written to a temporary file (``.part-00000.parquet.tmp-PID``), then renamed: a part
  file exists only whole, whatever stops the process (a signal, a kill, an error). Parts are
  not fsync'ed (a disk flush per chunk would hold up the last parts of every job);
- after the rename, the part's SHA-256 (of the bytes written) goes into the manifest's
  ``parts``; a rerun reads every part fully and compares (:mod:`engine.batch.manifest`). A part
  whose bytes differ (damaged on disk, renamed from another index) or that the manifest does not
  record (a run killed between the rename and the manifest's update) is removed and its chunk
  solved again, with a note naming the part and why. ``ikstudio solve --verify OUT`` runs the
  same checks without solving (:mod:`engine.batch.verify`);
- a part's footer names its job and chunk (schema metadata ``ikstudio.job``, ``ikstudio.chunk``);
- the manifest is written when the folder is first used; a rerun whose input (SHA-256 of the
  bytes read), settings, backend, precision or any file the answers depend on (the robot file,
  its collision meshes, the obstacle meshes) differ is refused, naming what differs, as is a
  folder holding anything else. A damaged manifest is refused, naming it;
- one job at a time per folder (an exclusive ``flock`` on ``_ikstudio_solve.lock``);
- every OS error (a full disk, a read-only folder, a path through a file) names the option and
  the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import threading
import time
from pathlib import Path

from ..errors import InvalidValueError, StateError
from . import manifest as mf
from .manifest import FORMAT, MANIFEST
from .targets import pa_modules

LOCK = "_ikstudio_solve.lock"
STATS_COLUMNS = ("target", "success", "iterations")  # min/max kept for these (filters on them skip parts)
PART_RE = re.compile(r"^part-(\d+)\.parquet$")
TEMP_RE = re.compile(r"^\.part-\d+\.parquet\.tmp-\d+$")

__all__ = ["FORMAT", "LOCK", "MANIFEST", "Output", "PartWriter", "differences", "finished_parts", "job_id"]


def job_id(manifest: dict) -> str:
    """A short hash of the manifest's input and settings: the job's name in its part files."""
    key = json.dumps({"input": manifest["input"]["sha256"], "settings": _comparable(manifest["settings"])},
                     sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _comparable(settings: dict) -> dict:
    out = dict(settings)
    # "panda" and its file's path are the same robot: compared by the file's bytes and the options
    out["robot"] = {"sha256": settings["robot"].get("sha256"), "options": settings["robot"].get("options", {})}
    return out


def _flat(d, prefix="") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and not (prefix == "" and k == "files"):
            out.update(_flat(v, f"{prefix}{k}."))
        elif isinstance(v, dict):  # files: one entry per file, named by its role and path
            out.update({f"files.{name}": sha for name, sha in v.items()})
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(old: dict, new: dict) -> list[str]:
    """What differs between two manifests' input and settings, one phrase each."""
    found = []
    if old["input"]["sha256"] != new["input"]["sha256"] or old["input"]["rows"] != new["input"]["rows"]:
        found.append(f"the input ({old['input']['rows']:,} rows, sha256 {old['input']['sha256'][:12]} there; "
                     f"{new['input']['rows']:,} rows, sha256 {new['input']['sha256'][:12]} now) read from "
                     f"'{new['input']['source']}'")
    a, b = _flat(_comparable(old["settings"])), _flat(_comparable(new["settings"]))
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            if key == "robot.sha256":
                found.append(f"the robot ({old['settings']['robot'].get('source')} there, "
                             f"{new['settings']['robot'].get('source')} now, different files)")
            elif key.startswith("files."):
                there, now = (str(v)[:12] if v else "absent" for v in (a.get(key), b.get(key)))
                found.append(f"the file {key[6:]} (sha256 {there} there, {now} now)")
            else:
                found.append(f"{key} ({a.get(key)!r} there, {b.get(key)!r} now)")
    return found


class Output:
    """The output folder of one job, locked while open. ``done``: indices of finished chunks;
    ``notes``: one line per part the opening removed to solve again (which part, why)."""

    def __init__(self, path: Path, manifest: dict, chunk_rows: list[int], label: str = "out"):
        self.path = path
        self.manifest = manifest
        self.chunk_rows = chunk_rows
        self.label = label
        self.width = max(5, len(str(len(chunk_rows) - 1)))
        self._lock_file = None
        self.done: set[int] = set()
        self.notes: list[str] = []
        self._manifest_lock = threading.Lock()

    # -- opening ------------------------------------------------------------------------------------
    @classmethod
    def open(cls, out, manifest: dict, chunk_rows: list[int], label: str = "out") -> Output:
        """Open (make) ``out`` for the job described by ``manifest``; see the module docstring."""
        if not isinstance(out, str | os.PathLike):
            raise InvalidValueError(f"{label}: expected the path of the output folder, got {out!r}")
        path = Path(out)
        if path.exists() and not path.is_dir():
            raise InvalidValueError(f"{label}: '{path}' is a file; expected a folder for the dataset's parts")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise mf.os_error(label, path, err, "make the output folder") from None
        self = cls(path, {**manifest, "parts": {}}, chunk_rows, label)
        self._lock()
        try:
            self._check_and_scan()
        except BaseException:
            self.close()
            raise
        return self

    def _lock(self) -> None:
        import fcntl

        lock = self.path / LOCK
        try:
            f = open(lock, "a+")
        except OSError as err:
            raise mf.labelled_os_error(err, f"{self.label}: cannot open the lock file '{lock}': {err.strerror or err} "
                                            "(a job writes into its folder; check a finished job on read-only media "
                                            "with `ikstudio solve --verify OUT`)") from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            raise StateError(f"{self.label}: another job is writing to '{self.path}' right now; wait for it or "
                             "choose another folder") from None
        self._lock_file = f

    def _check_and_scan(self) -> None:
        try:
            names = sorted(os.listdir(self.path))
        except OSError as err:
            raise mf.os_error(self.label, self.path, err, "list the output folder") from None
        for name in names:  # a stopped run's unfinished part: never part of the dataset
            if TEMP_RE.match(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path / name)
        names = mf.remove_stale_temps(self.path, [n for n in names if n != LOCK and not TEMP_RE.match(n)])
        manifest_path = self.path / MANIFEST
        if MANIFEST in names:
            try:
                old = mf.read(manifest_path)
            except InvalidValueError as err:
                raise InvalidValueError(f"{self.label}: {err}; choose another folder (or delete this one to solve the "
                                        "job again)") from None
            diff = differences(old, self.manifest)
            if diff:
                raise InvalidValueError(f"{self.label}: '{self.path}' holds another job's parts: {'; '.join(diff)}. "
                                        "Rerun with that job's input and settings to resume it, or choose another "
                                        "folder")
            self.manifest = {**self.manifest, "created": old.get("created", self.manifest.get("created")),
                             "parts": dict(old["parts"])}
        elif names:
            parts = [n for n in names if PART_RE.match(n)]
            what = f"{len(parts)} part files of another job" if parts else f"{len(names)} other files ({names[0]}, ...)"
            raise InvalidValueError(f"{self.label}: '{self.path}' holds {what} and no manifest ({MANIFEST}); choose an "
                                    "empty or new folder")
        else:
            self._save_manifest()
        changed = self._scan([n for n in names if n != MANIFEST])
        if changed:
            self._save_manifest()

    def _scan(self, names: list[str]) -> bool:
        """Check every part in ``names`` against the manifest's record; returns whether the record
        changed (parts removed to be solved again)."""
        from .settings import file_sha256

        recorded: dict = self.manifest["parts"]
        by_sha = {entry["sha256"]: name for name, entry in recorded.items()}
        changed = False
        for name in names:
            m = PART_RE.match(name)
            if m is None:
                raise InvalidValueError(f"{self.label}: '{self.path / name}' is not a part of this job; the folder "
                                        "should hold its parts and manifest only")
            index = int(m.group(1))
            if index >= len(self.chunk_rows) or name != self.part_name(index):
                raise InvalidValueError(f"{self.label}: part '{self.path / name}' does not match the manifest's "
                                        f"{len(self.chunk_rows)} chunks (part-{0:0{self.width}d}.parquet to "
                                        f"{self.part_name(len(self.chunk_rows) - 1)})")
            try:
                sha = file_sha256(self.path / name)
            except OSError as err:
                raise mf.os_error(self.label, self.path / name, err, "read the part") from None
            entry = recorded.get(name)
            if entry is None:
                why = "the manifest has no record of it (a run stopped between writing it and recording it)"
            elif sha != entry["sha256"]:
                other = by_sha.get(sha)
                why = (f"it holds the bytes of {other} (renamed or copied over)" if other and other != name else
                       "its bytes do not match the SHA-256 the manifest records (damaged)")
            elif entry["rows"] != self.chunk_rows[index]:
                why = f"the manifest records {entry['rows']} rows; chunk {index} has {self.chunk_rows[index]}"
            else:
                self.done.add(index)
                continue
            self.notes.append(f"part '{self.path / name}': {why}; removed, chunk {index} is solved again")
            try:
                os.unlink(self.path / name)
            except OSError as err:
                raise mf.os_error(self.label, self.path / name, err, "remove the untrusted part") from None
            if recorded.pop(name, None) is not None:
                changed = True
        for name in sorted(set(recorded) - set(names)):  # deleted by hand: its chunk is simply not done
            del recorded[name]
            changed = True
        return changed

    def _save_manifest(self) -> None:
        with self._manifest_lock:
            self.manifest = mf.write(self.path / MANIFEST, self.manifest, self.label)

    # -- writing ------------------------------------------------------------------------------------
    def part_name(self, index: int) -> str:
        return f"part-{index:0{self.width}d}.parquet"

    def write_part(self, index: int, table, dictionary_columns: list[str]) -> float:
        """Write chunk ``index``'s rows atomically (temporary file, then rename), then record its
        SHA-256 in the manifest; returns the calling thread's CPU seconds for it (its wall time,
        on a busy machine, counts the time the thread waited for a core while the solver ran)."""
        pa, pq = pa_modules()
        if index in self.done:
            raise StateError(f"chunk {index} is already written ({self.part_name(index)}); a row is never written "
                             "twice")
        t0 = time.thread_time()
        meta = {**(table.schema.metadata or {}), b"ikstudio.job": job_id(self.manifest).encode(),
                b"ikstudio.chunk": str(index).encode()}
        table = table.replace_schema_metadata(meta)
        final = self.path / self.part_name(index)
        temp = self.path / f".{final.name}.tmp-{os.getpid()}"
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, use_dictionary=dictionary_columns or False, compression="snappy",
                       write_statistics=[c for c in STATS_COLUMNS if c in table.column_names])
        data = sink.getvalue()
        sha = hashlib.sha256(memoryview(data)).hexdigest()
        try:
            with open(temp, "wb") as f:
                f.write(memoryview(data))
            os.replace(temp, final)
        except OSError as err:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise mf.os_error(self.label, final, err, "write the part") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        self.done.add(index)
        self.manifest["parts"][final.name] = {"rows": table.num_rows, "sha256": sha}
        self._save_manifest()
        return time.thread_time() - t0

    def close(self) -> None:
        if self._lock_file is not None:
            self._lock_file.close()
            self._lock_file = None


def finished_parts(out) -> int:
    """How many part files ``out`` holds (0 for a folder that does not exist)."""
    path = Path(out)
    return sum(1 for n in os.listdir(path) if PART_RE.match(n)) if path.is_dir() else 0


class PartWriter:
    """Writes parts on a background thread, so that writing overlaps the next chunk's solve.

    ``submit`` hands a part over (blocking while ``depth`` are waiting); an error in the thread is
    raised by the next ``submit`` or by ``close``. ``close`` writes what was handed over, then
    stops. ``seconds``: CPU time spent writing; ``written``: chunks written.
    """

    def __init__(self, output: Output, dictionary_columns: list[str], depth: int = 4):
        self.output = output
        self.dictionary_columns = dictionary_columns
        self.seconds = 0.0
        self.written: list[int] = []
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ikstudio-part-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None:
                continue
            index, table = item
            try:
                self.seconds += self.output.write_part(index, table, self.dictionary_columns)
                self.written.append(index)
            except BaseException as err:  # kept for the main thread
                self._error = err

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def submit(self, index: int, table) -> None:
        self._raise()
        self._queue.put((index, table))

    def close(self) -> None:
        """Write every part handed over, stop the thread, raise its error if any."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise()
