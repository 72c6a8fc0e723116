"""A job's manifest (``OUT/_ikstudio_solve.json``): its shape, its self-checksum, and writing it
so that no failure can wedge a folder.

The manifest holds what the job is (``input``: the targets' source, SHA-256 of the bytes that
were read, rows; ``settings``: :meth:`~engine.batch.settings.JobSpec.fingerprint`, which names
the backend, the precision and the SHA-256 of every file the answers depend on; ``chunks``,
``columns``, ``created``) and what it has written: ``parts`` maps each finished part's file name
to ``{"rows", "sha256"}``, the SHA-256 of the part file's bytes, recorded after the part was
renamed into place. ``checksum`` is the SHA-256 of the rest of the manifest (canonical JSON:
sorted keys, no spaces), so a damaged manifest is named as damaged rather than half-trusted.

Writes go to ``._ikstudio_solve.json.tmp-PID`` and are renamed over the manifest: the manifest
is always either the old or the new one. A temporary file left by a failed write (a full disk, a
kill) is removed when the folder is next opened. Every OS error names the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

from ..errors import InvalidValueError

MANIFEST = "_ikstudio_solve.json"
FORMAT = "ikstudio-solve/2"
TEMP_RE = re.compile(r"^\._ikstudio_solve\.json\.tmp-\d+$")
SHA_RE = re.compile(r"^[0-9a-f]{64}$")

# the keys a manifest must hold, and their JSON types (see the module docstring)
SHAPE = {"format": str, "input": dict, "settings": dict, "chunks": int, "columns": list, "parts": dict,
         "checksum": str}
INPUT_SHAPE = {"source": str, "sha256": str, "rows": int}
SETTINGS_SHAPE = {"robot": dict, "chunk": int, "seed": int, "links": list, "pos_masks": list, "rot_masks": list,
                  "solver": dict, "backend": str, "precision": str, "files": dict}


def checksum(manifest: dict) -> str:
    """SHA-256 (hex) of ``manifest`` without its ``checksum`` key, as canonical JSON."""
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def os_error(label: str, path, err: OSError, doing: str) -> OSError:
    """``err`` as one line naming the option (``label``), the file and what was being done; its
    kind (ENOSPC, EROFS, ...) is kept, so callers can still tell them apart."""
    return labelled_os_error(err, f"{label}: cannot {doing} '{path}': {err.strerror or err}")


def labelled_os_error(err: OSError, message: str) -> OSError:
    """An error of ``err``'s kind and errno whose text is ``message`` alone (no ``[Errno N]``)."""
    new = type(err)(message)
    new.errno = err.errno  # the kind stays readable (ENOSPC, EROFS); the text is the message alone
    return new


def _kind(value) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer", float: "a number",
            bool: "true/false", type(None): "null"}.get(type(value), type(value).__name__)


def _expect(where: str, data: dict, shape: dict, path) -> None:
    for key, kind in shape.items():
        if key not in data:
            raise InvalidValueError(f"manifest '{path}': key {where}{key} is missing")
        value = data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InvalidValueError(f"manifest '{path}': key {where}{key} is {_kind(value)} ({str(value)[:60]!r}); "
                                    f"expected {_kind(kind())}")


def validate(data, path) -> dict:
    """``data`` (parsed JSON) checked to be a manifest of this format, or an
    :class:`InvalidValueError` naming the manifest ``path`` and the key."""
    if not isinstance(data, dict):
        raise InvalidValueError(f"manifest '{path}': expected a JSON object, got {_kind(data)}")
    if data.get("format") != FORMAT:
        raise InvalidValueError(f"manifest '{path}': key format is {data.get('format')!r}; expected {FORMAT!r} "
                                "(a folder of another tool, or of an older version of this one)")
    _expect("", data, SHAPE, path)
    _expect("input.", data["input"], INPUT_SHAPE, path)
    _expect("settings.", data["settings"], SETTINGS_SHAPE, path)
    if data["chunks"] < 1 or data["input"]["rows"] < data["chunks"]:
        raise InvalidValueError(f"manifest '{path}': key chunks is {data['chunks']}; expected 1 to the input's "
                                f"{data['input']['rows']} rows")
    for name, part in data["parts"].items():
        if not isinstance(part, dict) or not isinstance(part.get("rows"), int) \
                or not SHA_RE.match(str(part.get("sha256", ""))):
            raise InvalidValueError(f"manifest '{path}': key parts.{name} is {str(part)[:60]!r}; expected "
                                    "{rows: N, sha256: HEX}")
    if data["checksum"] != checksum(data):
        raise InvalidValueError(f"manifest '{path}': its checksum does not match its contents: the file is damaged, "
                                "so its record of which parts are sound cannot be trusted")
    return data


def read(path: Path) -> dict:
    """The manifest at ``path``, validated (:func:`validate`); a file that cannot be read or is not
    JSON is an :class:`InvalidValueError` naming it."""
    try:
        text = path.read_bytes().decode("utf-8")
        data = json.loads(text)
    except OSError as err:
        raise InvalidValueError(f"manifest '{path}': cannot be read: {err.strerror or err}") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise InvalidValueError(f"manifest '{path}': not valid JSON ({str(err)[:80]}): the file is damaged or "
                                "truncated") from None
    return validate(data, path)


def write(path: Path, manifest: dict, label: str) -> dict:
    """Write ``manifest`` (its ``checksum`` set here) atomically to ``path``; returns it. A failure
    leaves the old manifest, removes the temporary file, and raises naming the file."""
    manifest = {**manifest, "checksum": ""}
    manifest["checksum"] = checksum(manifest)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    try:
        with open(temp, "wb") as f:
            f.write(data)
        os.replace(temp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise os_error(label, path, err, "write the manifest") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return manifest


def remove_stale_temps(folder: Path, names: list[str]) -> list[str]:
    """Remove the manifest temporary files among ``names`` (a failed or killed write's); returns
    the names left."""
    kept = []
    for name in names:
        if TEMP_RE.match(name):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / name)
        else:
            kept.append(name)
    return kept
