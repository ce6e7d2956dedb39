"""The configuration reference of the docs, generated from the JSON schemas.

The docs build (``docs/hooks.py``) calls :func:`config_reference` for
docs/configuration.md and :func:`block_reference` for each experiment's page
(docs/experiments/e1.md ...), so the reference is the schema the workflow
validates against and cannot drift from it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from debiaseval.io.schema import experiment_names, load_schema

__all__ = ["block_reference", "config_reference", "shared_blocks"]

# Reusable blocks of the schema ($defs) described once, in their own section, and linked to
# from every key that takes one (a test set, a recommender, ...): an anchor and a title each.
SHARED_TITLES = {
    "testset": "Test set",
    "recommender": "Recommender",
    "source": "Source of a built-in dataset",
    "own_dataset": "Dataset of your own",
    "resources": "Resources of a heavy rule",
}


def _ref_name(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.removeprefix("#/$defs/") if isinstance(ref, str) else None


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """A local ``$ref`` merged with its sibling keywords (the siblings win)."""
    name = _ref_name(schema)
    if name is None:
        return dict(schema)
    merged = _resolve(root["$defs"][name], root)
    merged.update({k: v for k, v in schema.items() if k != "$ref"})
    return merged


def _range(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low is None and xlow is None and high is None and xhigh is None:
        return ""
    left = f"[{low}" if low is not None else f"({xlow}" if xlow is not None else "(-∞"
    right = f"{high}]" if high is not None else f"{xhigh})" if xhigh is not None else "∞)"
    if right == "∞)" and low is not None:
        return f" ≥ {low}"
    if right == "∞)" and xlow is not None:
        return f" > {xlow}"
    return f" in {left}, {right}"


def _type(schema: Mapping[str, Any], root: Mapping[str, Any], base: str = "") -> str:
    """A short reading of a value's type: ``number in (0, 1]``, ``list of string``, ..."""
    shared = _ref_name(schema)
    if shared in SHARED_TITLES:
        return f"[{SHARED_TITLES[shared].lower()}]({base}#{_anchor(shared)})"
    schema = _resolve(schema, root)
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    branches = schema.get("oneOf") or schema.get("anyOf")
    if branches:
        return " or ".join(_type(branch, root, base) for branch in branches)
    types = schema.get("type", "any")
    names = [types] if isinstance(types, str) else list(types)
    words = []
    for name in names:
        if name == "array":
            items = schema.get("items")
            words.append("list" + (f" of {_type(items, root, base)}" if items else ""))
        elif name == "object" and isinstance(schema.get("additionalProperties"), Mapping):
            words.append(f"mapping of name → {_type(schema['additionalProperties'], root, base)}")
        elif name == "object":
            words.append("mapping")
        elif name in ("integer", "number"):
            words.append(name + _range(schema))
        else:
            words.append(name)
    return " or ".join(words)


def _default(schema: Mapping[str, Any]) -> str:
    if "default" not in schema:
        return ""
    text = json.dumps(schema["default"], ensure_ascii=False)
    return f"`{text}`"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _prose(text: str) -> str:
    """A description as table-cell text: HTML and emphasis characters shown as written."""
    for char, escaped in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("*", "\\*")):
        text = text.replace(char, escaped)
    return _cell(text)


def _anchor(name: str) -> str:
    return "shared-" + name.replace("_", "-")


def _rows(
    schema: Mapping[str, Any], root: Mapping[str, Any], path: str, base: str = ""
) -> Iterator[tuple[str, str, str, str]]:
    """(key, type, default, description) of ``schema``'s keys and their keys, depth first."""
    for key, child in schema.get("properties", {}).items():
        yield from _key_rows(child, root, f"{path}.{key}" if path else key, base)
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping) and _ref_name(extra) not in SHARED_TITLES:
        resolved = _resolve(extra, root)
        if resolved.get("properties"):
            yield from _rows(resolved, root, f"{path}.<name>", base)


def _key_rows(
    schema: Mapping[str, Any], root: Mapping[str, Any], path: str, base: str = ""
) -> Iterator[tuple[str, str, str, str]]:
    resolved = _resolve(schema, root)
    yield path, _type(schema, root, base), _default(resolved), resolved.get("description", "")
    if _ref_name(schema) not in SHARED_TITLES:
        yield from _rows(resolved, root, path, base)


def _table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, kind, default, description in rows:
        lines.append(f"| `{key}` | {_cell(kind)} | {_cell(default)} | {_prose(description)} |")
    return "\n".join(lines)


def block_reference(
    name: str, schema: Mapping[str, Any] | None = None, *, base: str = "../configuration.md"
) -> str:
    """The Markdown table of the config block ``name`` (an experiment, e.g. ``"e1"``):
    every key under it with its type, default and description; the shared blocks it uses
    (test set, recommender, ...) link to their section of the page ``base``."""
    root = load_schema() if schema is None else schema
    if name not in root["properties"]:
        raise KeyError(f"the config schema has no block {name!r}")
    return _table(list(_key_rows(root["properties"][name], root, name, base))[1:])


def shared_blocks(schema: Mapping[str, Any] | None = None, level: int = 2) -> str:
    """The reusable blocks (test set, recommender, ...) as sections of Markdown tables."""
    root = load_schema() if schema is None else schema
    parts = []
    for name, title in SHARED_TITLES.items():
        block = root["$defs"][name]
        parts.append(f"{'#' * level} {title} {{#{_anchor(name)}}}\n")
        parts.append(_prose(block.get("description", "")) + "\n")
        parts.append(_table(list(_rows(block, root, ""))) + "\n")
    return "\n".join(parts)


def config_reference(schema: Mapping[str, Any] | None = None) -> str:
    """The whole configuration reference in Markdown: the top-level keys, then one section
    per experiment block, then the shared blocks they refer to."""
    root = load_schema() if schema is None else schema
    experiments = set(experiment_names()) & set(root["properties"])
    top = {k: v for k, v in root["properties"].items() if k not in experiments}
    rows = [row for key, child in top.items() for row in _key_rows(child, root, key)]
    parts = ["## Top-level keys\n", _table(rows) + "\n"]
    for name in sorted(experiments):
        block = root["properties"][name]
        parts.append(f"## `{name}`\n\n{_prose(block.get('description', ''))}\n")
        parts.append(f"See [{name.upper()}](experiments/{name}.md) for the method.\n")
        parts.append(block_reference(name, root, base="") + "\n")
    parts.append(shared_blocks(root))
    return "\n".join(parts)
