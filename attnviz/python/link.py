"""The page's share link read in Python: ``#s=`` then the base64url of a JSON state, as
static/js/core/state.js writes it (``encodeShare``: v3, ``{v: 3, mode, toy?, sentence?}``, a toy
table that is exactly a preset's written as the preset's id; ``encodeState``: v1, the toy state
itself; v2, ``{mode: "sentence", sentence}``). ``read_link`` gives what ``attnviz export --link``
traces: the toy table (a trace request's body) and its view, or the sentence and its selection.
A link that cannot be read is refused with the rule it breaks (``LinkError``)."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass
from typing import Any

# The longest link read (a page's link of the largest table is well under 200 kB).
MAX_LINK_CHARS = 1_000_000
HASH = re.compile(r"#s=([^#&?\s]*)")
B64URL = re.compile(r"^[A-Za-z0-9_-]+$")
TOY_VIEW = ("layer", "head", "vlayer", "a", "b", "trails")


class LinkError(ValueError):
    """A link that cannot be read; the message names the rule (``link: ...``)."""


@dataclass(frozen=True)
class Link:
    """What a link holds for the mode in view: ``toy`` (``tokens``, ``axes``, ``embeddings``,
    ``config``: a toy trace request), ``view`` (the toy lab's: ``layer``, ``head``, ``vlayer``,
    ``a``, ``b``, ``trails``) and ``preset`` (the id it names), or ``sentence`` (``model`` (None:
    the default), ``text``, ``layer``, ``head``, ``query``, ``key``, ``hide_special``,
    ``merge_words``)."""

    mode: str
    toy: dict | None = None
    view: dict | None = None
    preset: str | None = None
    sentence: dict | None = None


def _fail(rule: str) -> LinkError:
    return LinkError(f"link: {rule}")


def _state(link: str) -> dict:
    if len(link) > MAX_LINK_CHARS:
        raise _fail(f"{len(link):,} characters, over the cap of {MAX_LINK_CHARS:,}")
    m = HASH.search(link)
    if not m:
        raise _fail("no #s= state (a share link ends in #s=... after the page's address)")
    text = m.group(1)
    if not B64URL.match(text):
        raise _fail("#s= is not base64url (letters, digits, - and _)")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        raise _fail("#s= is not base64url of UTF-8 text") from None
    try:
        state = json.loads(raw)
    except ValueError as exc:
        raise _fail(f"the state is not JSON ({exc})") from None
    if not isinstance(state, dict):
        raise _fail("the state is not a JSON object")
    return state


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> float | None:
    """A cell's number (the page keeps a cell's text that is not a number yet as a string)."""
    if _int(value) or isinstance(value, float):
        return value if math.isfinite(value) else None
    return None


def _table(t: dict, limits: Any) -> tuple[list[str], list[str], list[list[float]]]:
    tokens, axes, rows = t.get("tokens"), t.get("axes"), t.get("embeddings")
    for name, value in (("tokens", tokens), ("axes", axes)):
        if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
            raise _fail(f"toy.{name}: not a list of strings")
    assert isinstance(tokens, list) and isinstance(axes, list)
    if not 1 <= len(tokens) <= limits.max_tokens:
        raise _fail(f"toy.tokens: {len(tokens)} tokens (1 to {limits.max_tokens})")
    if not isinstance(rows, list) or len(rows) != len(tokens):
        raise _fail(f"toy.embeddings: not {len(tokens)} rows, one a token")
    if not 1 <= len(axes) <= limits.max_dim:
        raise _fail(f"toy.axes: {len(axes)} dimensions (1 to {limits.max_dim})")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(axes):
            raise _fail(f"toy.embeddings: row {i + 1} is not {len(axes)} numbers, one an axis")
        values = [_number(v) for v in row]
        for j, v in enumerate(values):
            if v is None:
                raise _fail(f"toy.embeddings: row {i + 1}, column {j + 1}: {row[j]!r} is not a "
                            "number")  # fmt: skip
        out.append(values)
    return tokens, axes, out  # type: ignore[return-value]


def _toy(t: Any, limits: Any, defaults: dict) -> tuple[dict, dict, str | None]:
    """The toy part: the trace request's body, the view, the preset's id."""
    from attnviz.presets import presets

    if not isinstance(t, dict):
        raise _fail("no toy table (the link's mode is toy)")
    given: dict = t["config"] if isinstance(t.get("config"), dict) else {}
    preset = t.get("preset") if isinstance(t.get("preset"), str) else None
    if "tokens" in t:
        tokens, axes, rows = _table(t, limits)
        config = {**defaults, **{k: v for k, v in given.items() if k in defaults}}
    else:
        found = next((p for p in presets() if p.id == preset), None)
        if found is None:
            raise _fail(f"toy.preset: no preset named {t.get('preset')!r} (presets: "
                        f"{', '.join(p.id for p in presets())})")  # fmt: skip
        tokens, axes, rows = (
            list(found.tokens),
            list(found.axes),
            [list(r) for r in found.embeddings],
        )
        base = {**defaults, **found.config.model_dump()}
        config = {**base, **{k: v for k, v in given.items() if k in defaults}}
    if config.get("projections") != "custom":
        config["weights"] = None
    n = len(tokens)
    layers: int = config["layers"] if _int(config.get("layers")) else 1
    view: dict[str, Any] = {"layer": 0, "head": 0, "vlayer": layers, "a": min(1, n - 1),
                            "b": n - 1, "trails": True}  # fmt: skip
    raw_view: dict = t["view"] if isinstance(t.get("view"), dict) else {}
    heads: int = config["heads"] if _int(config.get("heads")) else 1
    # As the page's normalize() keeps a view in range.
    for key, top in (("layer", layers - 1), ("head", heads - 1), ("vlayer", layers),
                     ("a", n - 1), ("b", n - 1)):  # fmt: skip
        if _int(raw_view.get(key)):
            view[key] = min(max(raw_view[key], 0), max(top, 0))
    view["trails"] = raw_view.get("trails") is not False
    return {"tokens": tokens, "axes": axes, "embeddings": rows, "config": config}, view, preset


def _sentence(s: Any) -> dict:
    if not isinstance(s, dict):
        raise _fail("no sentence (the link's mode is sentence)")
    text = s.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _fail("sentence.text: the link holds no text to trace")
    model = s.get("model") if isinstance(s.get("model"), str) else None
    out: dict[str, Any] = {"model": model, "text": text}
    for key in ("layer", "head"):
        out[key] = s[key] if _int(s.get(key)) and s[key] >= 0 else 0
    for key in ("query", "key"):
        out[key] = s[key] if _int(s.get(key)) and s[key] >= 0 else None
    out["hide_special"] = s.get("hideSpecial") is True
    out["merge_words"] = s.get("mergeWords") is True
    return out


def read_link(link: str) -> Link:
    """What a share link (the page's whole address, or its ``#s=...`` alone) holds for the mode
    in view. Raises ``LinkError`` naming the rule a bad link breaks."""
    from attnviz.limits import LIMITS
    from attnviz.schemas.common import ToyConfig

    state = _state(link)
    defaults = ToyConfig().model_dump()
    v = state.get("v", 1)
    if v == 3:
        mode = "sentence" if state.get("mode") == "sentence" else "toy"
        if mode == "sentence":
            return Link(mode, sentence=_sentence(state.get("sentence")))
        toy, view, preset = _toy(state.get("toy"), LIMITS, defaults)
        return Link(mode, toy=toy, view=view, preset=preset)
    if v not in (1, 2):
        raise _fail(f"v: {v!r} is not a link format (1, 2 or 3)")
    if state.get("mode") == "sentence":  # v2
        return Link("sentence", sentence=_sentence(state.get("sentence")))
    toy, view, preset = _toy(state, LIMITS, defaults)  # v1: the toy state itself
    return Link("toy", toy=toy, view=view, preset=preset)


def trace_toy(body: dict) -> Any:
    """The toy trace of a link's table (``Link.toy``: tokens, axes, embeddings, config),
    computed here by ``attnviz.trace``."""
    from attnviz.python.local import trace

    return trace(**body)
