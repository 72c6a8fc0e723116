"""Scene-file YAML: parsed safely, with the line of every key path.

``parse_yaml(text) -> (data, lines, issues)``: syntax errors carry their line and column;
duplicate keys (which PyYAML would silently overwrite) are issues; a document whose aliases would
expand beyond :data:`MAX_EXPANDED_NODES` nodes is refused before it is built. Imports nothing of
the engine beyond this package's errors.
"""

from __future__ import annotations

from typing import Any

import yaml

from .errors import Issue


def _yaml_issue(err: yaml.YAMLError) -> Issue:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    text = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    if mark is not None:
        return Issue((), f"{text} at line {mark.line + 1}, column {mark.column + 1}")
    return Issue((), text)


def _walk(node, loc, lines: dict, issues: list) -> None:
    """Record the line of every key path; flag duplicate keys (PyYAML would keep the last silently)."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                continue
            line = key_node.start_mark.line + 1
            if key in seen and key_node.tag.endswith(":str"):
                issues.append(Issue((*loc, key), f"duplicate key (first given at line {seen[key]})", line))
            seen.setdefault(key, line)
            lines.setdefault((*loc, key), line)
            _walk(value_node, (*loc, key), lines, issues)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.setdefault((*loc, i), item.start_mark.line + 1)
            _walk(item, (*loc, i), lines, issues)


MAX_FILE_BYTES = 4 << 20  # a scene file is a few KB
MAX_EXPANDED_NODES = 100_000  # a scene file is a few hundred; aliases of aliases can make billions


def _expanded_size(node, memo: dict) -> int:
    """How many nodes ``node`` stands for once every alias is expanded (each distinct node is
    counted once per path to it, as the walk and the validation would visit it); stops counting
    past :data:`MAX_EXPANDED_NODES`."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = MAX_EXPANDED_NODES + 1  # a node reached again while being counted: a recursive alias
    if isinstance(node, yaml.MappingNode):
        children = [v for pair in node.value for v in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
    else:
        children = []
    total = 1
    for child in children:
        total += _expanded_size(child, memo)
        if total > MAX_EXPANDED_NODES:
            break
    memo[key] = total
    return total


def _distinct_nodes(root) -> int:
    """How many distinct nodes the document holds as written (an alias's target counted once);
    stops counting past :data:`MAX_EXPANDED_NODES`."""
    seen, stack = set(), [root]
    while stack and len(seen) <= MAX_EXPANDED_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(v for pair in node.value for v in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return len(seen)


def parse_yaml(text: str) -> tuple[Any, dict, list[Issue]]:
    """``(data, lines by key path, issues)`` for a YAML document; data is None on a syntax error,
    and on a document that aliases expand beyond :data:`MAX_EXPANDED_NODES` nodes (a "billion
    laughs" file: 1 KB that would need gigabytes)."""
    try:
        loader = yaml.SafeLoader(text)  # a NUL or other unprintable character fails here already
    except yaml.YAMLError as err:
        return None, {}, [_yaml_issue(err)]
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}, []
        if _expanded_size(node, {}) > MAX_EXPANDED_NODES:
            if _distinct_nodes(node) > MAX_EXPANDED_NODES:  # large as written: no alias is to blame
                return None, {}, [Issue((), f"this file holds more than {MAX_EXPANDED_NODES:,} YAML nodes (keys, "
                                            "values and list items), the limit of a scene file: refused")]
            return None, {}, [Issue((), f"YAML aliases (*name) expand this file beyond {MAX_EXPANDED_NODES:,} "
                                        "nodes; a scene file needs a few hundred: refused")]
        lines: dict = {}
        issues: list[Issue] = []
        _walk(node, (), lines, issues)
        data = loader.construct_document(node)
    except yaml.YAMLError as err:
        return None, {}, [_yaml_issue(err)]
    except (ValueError, TypeError, OverflowError, RecursionError) as err:  # e.g. a timestamp out of range
        return None, {}, [Issue((), f"YAML error: {err}")]
    finally:
        loader.dispose()
    return data, lines, issues


def line_of(loc: tuple, lines: dict) -> int | None:
    for n in range(len(loc), 0, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None
