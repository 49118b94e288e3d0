"""The page's modules that are made from Python, so that what the server declares is written
once, and read by the page, a saved file and the Node tests without a server:

- ``static/js/core/generated/fields.js``: the trace fields' catalogue
  (``attnviz.capture.fields``, what ``GET /api/fields`` serves);
- ``static/js/core/generated/meta.js``: the JSDoc types of a trace's meta
  (``attnviz.schemas.trace_meta``, the model every answer's meta is checked against, and
  each field's ``members``), for ``tsc --checkJs``.

``python -m attnviz.web`` (``make bundle``) writes them before it bundles; tests/test_web.py
fails while a committed one differs from what this makes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

from pydantic import BaseModel

from attnviz.capture.fields import REGISTRY
from attnviz.schemas import trace_meta

HEADER = (
    "// Made by attnviz/jsgen.py from {source} (`make bundle` writes it); do not edit:\n"
    "// tests/test_web.py fails while it differs from what the Python declares.\n"
)
FIELDS_JS = "static/js/core/generated/fields.js"
META_JS = "static/js/core/generated/meta.js"
# The meta's models as the page names them (TraceMeta, every trace's, is MetaCommon there: the
# page's TraceMeta is any answer's, static/js/core/types.js), each with its own keys alone.
META_MODELS: dict[str, type[BaseModel]] = {
    "MetaCommon": trace_meta.TraceMeta,
    "ToyMeta": trace_meta.ToyMeta,
    "TextMeta": trace_meta.TextMeta,
    "PartMeta": trace_meta.PartMeta,
    "TokenViewMeta": trace_meta.TokenViewMeta,
    "Ablated": trace_meta.Ablated,
    "Rope": trace_meta.Rope,
    "AttentionRule": trace_meta.AttentionRule,
    "Generated": trace_meta.Generated,
    "ImageBlock": trace_meta.ImageBlock,
    "ImageTile": trace_meta.ImageTile,
    "ImageResize": trace_meta.ImageResize,
    "Size": trace_meta.Size,
    "Crop": trace_meta.Crop,
    "VisionMeta": trace_meta.VisionMeta,
    "VisionTile": trace_meta.VisionTile,
    "Mrope": trace_meta.Mrope,
}


def _models(t: object) -> list[type[BaseModel]]:
    """The models a type is made of, each after the models its keys hold (``Component``
    before the attributions')."""
    inner = [m for arg in get_args(t) for m in _models(arg)]
    if isinstance(t, type) and issubclass(t, BaseModel):
        held = [m for f in t.model_fields.values() for m in _models(f.annotation)]
        return [*inner, *held, t]
    return inner


# what the fields whose value is an object say beside their arrays (``TraceField.members``)
META_MODELS.update(
    (m.__name__, m) for f in REGISTRY if f.members is not None for m in _models(f.members)
)
SCALARS = {"integer": "number", "number": "number", "string": "string", "boolean": "boolean",
           "null": "null"}  # fmt: skip


def fields_module() -> str:
    """Each trace field's declaration as the page reads it: the parameters it reads, whether it
    is per head, drawn under the token options, measured, what of the model it needs, whether
    it is the vision tower's or one matrix of a layer's heads together, and its kind of numbers
    in a reader's words."""
    catalogue = {
        f.name: {
            "params": list(f.params),
            "per_head": f.per_head,
            "drawn": f.drawn,
            "measured": f.measured,
            "needs": f.needs,
            "tower": f.tower,
            "over_heads": f.over_heads,
            "words": f.words,
        }
        for f in REGISTRY
    }
    lines = (f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in catalogue.items())
    body = "{\n" + "".join(lines) + "}"
    over_heads = " | ".join(json.dumps(f.name) for f in REGISTRY if f.over_heads)
    return (
        HEADER.format(source="attnviz/capture/fields")
        + "\n/**\n * @typedef {{params: string[], per_head: boolean, drawn: boolean, measured: "
        "boolean,\n *   needs: string | null, tower: boolean, over_heads: boolean, words: string}} "
        "FieldInfo\n */\n\n"
        "/** The trace's fields by name, in the order of the wire. @type {Record<string, "
        "FieldInfo>} */\n"
        f"export const FIELDS = {body};\n\n"
        "/** The fields of one matrix a layer, all its heads together (``over_heads``).\n"
        f" * @typedef {{{over_heads}}} OverHeads */\n"
    )


def _type(schema: dict) -> str:
    """A JSON schema (pydantic's, of one property) as a JSDoc type."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        known = {m.__name__: js for js, m in META_MODELS.items()}
        # a model of another schema module keeps its own JSDoc (core/types.js)
        return known.get(name, f'import("../types.js").{name}')
    if "anyOf" in schema:
        return " | ".join(_type(s) for s in schema["anyOf"])
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if kind == "array" and "prefixItems" in schema:
        return "[" + ", ".join(_type(s) for s in schema["prefixItems"]) + "]"
    if kind == "array":
        inner = _type(schema["items"])
        return f"({inner})[]" if " " in inner else f"{inner}[]"
    if kind == "object":
        return f"Record<string, {_type(schema.get('additionalProperties') or {})}>"
    return SCALARS.get(kind, "unknown") if isinstance(kind, str) else "unknown"


def _typedef(name: str, model: type[BaseModel]) -> str:
    """One model's typedef: its own keys (not its base's), each with its type and words."""
    schema = model.model_json_schema(by_alias=True)
    known = set(META_MODELS.values())
    base = next((b for b in model.__bases__ if b in known), None)  # a base the page names
    inherited = set(base.model_fields) if base else set()
    own = {f.alias or k for k, f in model.model_fields.items() if k not in inherited}
    required = set(schema.get("required", ()))
    doc = " ".join((model.__doc__ or "").split())
    lines = ["/**", *([f" * {doc}"] if doc else []), f" * @typedef {{object}} {name}"]
    for key, prop in schema["properties"].items():
        if key not in own:
            continue
        words = prop.get("description", "")
        where = key if key in required else f"[{key}]"
        lines.append(f" * @property {{{_type(prop)}}} {where}{' ' + words if words else ''}")
    return "\n".join([*lines, " */"])


def meta_module() -> str:
    """The JSDoc types of a trace's meta, one typedef per model of schemas/trace_meta.py."""
    defs = "\n\n".join(_typedef(name, model) for name, model in META_MODELS.items())
    return (
        HEADER.format(source="attnviz/schemas/trace_meta.py")
        + "// Types only: nothing here runs.\n\n"
        + defs
        + "\n\nexport {};\n"
    )


def generated() -> dict[str, str]:
    """Each generated module's path (from the checkout's root) and its text."""
    return {FIELDS_JS: fields_module(), META_JS: meta_module()}


def write(root: Path) -> list[Path]:
    """Write the generated modules under ``root`` (a checkout); the paths that changed."""
    changed = []
    for rel, text in generated().items():
        path = root / rel
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        changed.append(path)
    return changed
