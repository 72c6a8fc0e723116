"""``SceneFileError``: every problem of a scene file, one per line, each naming the file and key path.

    scenes/x.yaml: targets[1].rot_mask: expected 3 booleans, got 2 (line 14)
    scenes/x.yaml: robot: unknown robot 'pnda'; did you mean 'panda'? (line 2)

Pydantic's errors are translated here (:func:`issues_from_validation`) so that the user reads one
phrasing whatever layer found the problem.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Issue:
    """One problem: ``loc`` is the key path (``("targets", 1, "rot_mask")``), ``line`` 1-based or None."""

    loc: Loc
    message: str
    line: int | None = None

    @property
    def path(self) -> str:
        """The key path as written in messages: ``targets[1].rot_mask``."""
        return format_loc(self.loc)

    def format(self, file: str) -> str:
        where = f"{self.path}: " if self.loc else ""
        line = f" (line {self.line})" if self.line is not None else ""
        return f"{file}: {where}{self.message}{line}"


class SceneFileError(ValueError):
    """A scene file that cannot be used. ``str(err)`` lists every problem, one per line.

    ``file``: the file as given (or ``<spec>`` for a spec built in code); ``issues``: the
    :class:`Issue` list.
    """

    def __init__(self, file: str, issues: Sequence[Issue]):
        self.file = str(file)
        self.issues = list(issues)
        super().__init__("\n".join(issue.format(self.file) for issue in self.issues))

    @property
    def messages(self) -> list[str]:
        return [issue.format(self.file) for issue in self.issues]


def format_loc(loc: Iterable[str | int]) -> str:
    """``("targets", 1, "rot_mask")`` -> ``targets[1].rot_mask``."""
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            text = str(part)
            if not text.isidentifier():
                text = repr(text)
            out += f".{text}" if out else text
    return out


def custom(message: str, at: str | None = None) -> PydanticCustomError:
    """A pydantic error whose message is ``message`` verbatim (braces included); ``at`` names a key
    of the model being validated, for errors a model validator finds in one of its keys."""
    ctx = {"message": message} if at is None else {"message": message, "at": at}
    return PydanticCustomError("scenefile", "{message}", ctx)


def show(value, limit: int = 60) -> str:
    """A short YAML-ish rendering of a value for messages."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, list | tuple):
        text = "[" + ", ".join(show(v, limit) for v in value) + "]"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k}: {show(v, limit)}" for k, v in value.items()) + "}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def suggest(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for close matches of ``word`` among ``choices``, else ``""``."""
    close = difflib.get_close_matches(str(word), list(choices), n=3, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


_DISCRIMINATED = ("function-after", "function-before", "function-wrap", "function-plain", "tagged-union")


def _clean_loc(loc: Loc, union_tags: dict[str, Iterable[str]]) -> Loc:
    """Drop pydantic's internal loc parts: validator names, and the tag that follows a tagged union's
    key or an item of a list of them (``motion.circle.radius`` -> ``motion.radius``,
    ``obstacles[0].box.size`` -> ``obstacles[0].size``; ``union_tags`` maps keys to their tags)."""
    out: list[str | int] = []
    for part in loc:
        if isinstance(part, str) and part.startswith(_DISCRIMINATED):
            continue
        key = out[-2] if len(out) > 1 and isinstance(out[-1], int) else out[-1] if out else None
        if isinstance(part, str) and isinstance(key, str) and part in union_tags.get(key, ()):
            continue
        out.append(part)
    return tuple(out)


def _message(err: dict, fields_at) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "scenefile":
        return ctx.get("message", err["msg"])
    if kind == "missing":
        return "missing (required)"
    if kind == "extra_forbidden":
        key = err["loc"][-1] if err["loc"] else ""
        known = fields_at(err["loc"][:-1])
        hint = suggest(key, known) if known else ""
        allowed = f" (allowed: {', '.join(known)})" if known and not hint else ""
        return f"unknown key{hint}{allowed}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer, got {show(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"expected a number, got {show(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {show(value)}"
    if kind in ("string_type", "string_sub_type"):
        return f"expected a string, got {show(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list, got {show(value)}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping (key: value), got {show(value)}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected', '')}, got {show(value)}"
    if kind == "union_tag_invalid":
        tags = [t.strip().strip("'") for t in str(ctx.get("expected_tags", "")).split(",")]
        tag = ctx.get("tag", value)
        what = str(ctx.get("discriminator", "type")).strip("'")
        return f"unknown {what} {show(tag)}{suggest(str(tag), tags)} (expected one of {', '.join(tags)})"
    if kind == "union_tag_not_found":
        return f"missing key '{ctx.get('discriminator', 'type').strip(chr(39))}'"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        op = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}[kind]
        bound = next(iter(ctx.values()), "")
        return f"expected a number {op} {bound}, got {show(value)}"
    if kind in ("too_short", "too_long"):
        return f"expected {'at least' if kind == 'too_short' else 'at most'} " \
               f"{ctx.get('min_length', ctx.get('max_length'))} items, got {ctx.get('actual_length')}"
    if kind == "invalid_key":
        return f"expected a text key, got {show(err['loc'][-1] if err['loc'] else value)}"
    if kind in ("value_error", "assertion_error"):
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        return msg
    return err["msg"]


def issues_from_validation(exc: ValidationError, fields_at=lambda loc: [],
                           union_tags: dict[str, Iterable[str]] | None = None) -> list[Issue]:
    """Pydantic's errors as :class:`Issue` s (no lines yet); ``fields_at(loc)`` lists the keys
    allowed at a location (for "did you mean" on unknown keys)."""
    issues = []
    seen = set()
    for err in exc.errors(include_url=False):
        loc = _clean_loc(tuple(err["loc"]), union_tags or {})
        at = (err.get("ctx") or {}).get("at") if err["type"] == "scenefile" else None
        if at:
            loc = (*loc, at)
        message = _message({**err, "loc": loc}, fields_at)
        if (loc, message) not in seen:
            seen.add((loc, message))
            issues.append(Issue(loc, message))
    return issues


def one_line(exc: ValidationError) -> str:
    """A validation error as one line for a status bar: each issue's place and message, no
    pydantic boilerplate (``"damping: expected a positive number, got -1"``)."""
    parts = []
    for issue in issues_from_validation(exc):
        where = ".".join(str(p) for p in issue.loc)
        parts.append(f"{where}: {issue.message}" if where else issue.message)
    return "; ".join(parts) or str(exc).splitlines()[0]
