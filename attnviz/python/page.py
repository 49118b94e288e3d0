"""The page builder of every offline file: one self-contained HTML page (templates/standalone.html
around a mode's own markup) with the CSS, the loader, the ES modules its entry imports, Plotly's
partial bundle, its JSON config and its data block, all inline. ``attnviz.python.html`` makes
the files of a trace, of a run and of the toy lab with it."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY = "offline/page.js"
# Plotly's partial bundles from npm (plotly.js-basic-dist-min, plotly.js-cartesian-dist-min, the
# version of the plotly wheel's), by what a file's views draw: scatter alone (a text's
# trajectories, a run's losses), or heatmaps too (the toy lab's attention).
PLOTLY = {"basic": "vendor/plotly-basic.min.js", "cartesian": "vendor/plotly-cartesian.min.js"}
# ``from "./x.js"``, ``import "./x.js"``: the relative imports the loader rewrites (loader.js).
IMPORT = re.compile(r"""(?:\bfrom|^\s*import)\s*["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)


def modules(static: Path, entry: str = ENTRY) -> dict[str, str]:
    """The ES modules ``entry`` needs (itself first), by their path under static/js, found by
    following relative imports."""
    root = (static / "js").resolve()
    out: dict[str, str] = {}
    todo = [entry]
    while todo:
        rel = todo.pop()
        if rel in out:
            continue
        path = (root / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise RuntimeError(f"attnviz: the module {rel!r} is not under {root}")
        text = path.read_text(encoding="utf-8")
        out[rel] = text
        for spec in IMPORT.findall(text):
            todo.append((path.parent / spec).resolve().relative_to(root).as_posix())
    return out


# Characters written as JSON's \uXXXX escapes inside a <script> element: with no ``<`` the HTML
# parser meets no ``</script>``, ``<!--`` or ``<script>`` (which would end the element or put it
# in its escaped states), and with no ``>`` or ``&`` nothing else reads as markup. Each escape is
# valid JSON (JSON.parse gives the character back) and valid JavaScript alike; a backslash before
# another character (``<\!--``) is neither.
_SCRIPT_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in "<>&"}


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element: ``<``, ``>`` and ``&`` as \\u escapes (so no
    ``</script>``, ``<!--`` or ``<script>``); JSON.parse reads every string back as it was."""
    return json.dumps(value, ensure_ascii=False).translate(_SCRIPT_ESCAPES)


def gz64(raw: bytes) -> str:
    """``raw`` gzipped then base64: how the file carries its data block (the loader undoes it)."""
    return base64.b64encode(gzip.compress(raw, 9, mtime=0)).decode()


@dataclass(frozen=True)
class Page:
    """What one file is, whatever it draws: ``mode``, the Jinja partial it includes
    (templates/modes/<mode>.html, the live page's own markup); ``entry``, the ES module under
    static/js whose ``start(config, block)`` draws it (the loader passes the JSON config and the
    data block, gunzipped); the title, the header's tagline and the footer's words (text);
    ``style``: CSS the mode adds in the file (after the page's); ``main``: the file wraps the
    mode's markup in ``<main>`` (False for a partial with a main landmark of its own);
    ``plotly``: the bundle its views need (``PLOTLY``)."""

    mode: str
    entry: str
    title: str
    tagline: str
    footer: str
    style: str = ""
    main: bool = True
    plotly: str = "basic"


@dataclass(frozen=True)
class _Assets:
    css: str
    loader: str
    plotly: dict[str, str]  # bundle -> its text gzipped, base64


def _assets() -> _Assets:
    from attnviz.web import find_dir

    static = find_dir("static")
    css = "\n".join((static / "css" / f).read_text(encoding="utf-8")
                    for f in ("app.css", "views.css"))  # fmt: skip
    loader = (static / "js" / "offline" / "loader.js").read_text(encoding="utf-8")
    if "</script" in loader.lower() or "</style" in css.lower():
        raise RuntimeError("attnviz: the loader or the CSS closes its own element")
    bundles = {name: gz64((static / path).read_bytes()) for name, path in PLOTLY.items()}
    return _Assets(css, loader, bundles)


_ASSETS: list[_Assets] = []
_MODULES: dict[str, str] = {}


def assets() -> _Assets:
    """The page's CSS, loader and Plotly (gzipped once per process)."""
    if not _ASSETS:
        _ASSETS.append(_assets())
    return _ASSETS[0]


def packed_modules(entry: str) -> str:
    """The modules ``entry`` needs, as a gzipped, base64 JSON object of path: source (once per
    process and entry)."""
    if entry not in _MODULES:
        from attnviz.web import find_dir

        code = json.dumps(modules(find_dir("static"), entry), ensure_ascii=False).encode()
        _MODULES[entry] = gz64(code)
    return _MODULES[entry]


MODE = re.compile(r"^[a-z][a-z0-9_-]*$")


def glossary() -> list[dict[str, Any]]:
    """The terms a file's markup and views mark (attnviz/glossary.py), as the live page gets
    them from /api/presets: every file carries them (about 10 KB), so its terms open offline."""
    from attnviz.glossary import GLOSSARY

    return [t.model_dump(exclude={"see"}) for t in GLOSSARY]


# A notebook display's start (a classic script): it takes the code its notebook carries once.
BOOTSTRAP = "offline/notebook.js"


def shared_code(entry: str = ENTRY, plotly: str = "basic") -> dict[str, tuple[str, str]]:
    """The code a page of ``entry`` and ``plotly`` runs, for a notebook to carry once: by role
    (css, loader, glossary, modules, plotly), its key (the role, attnviz's version and a hash
    of the text: one text a key, whatever display or notebook names it) and its text."""
    from attnviz.version import __version__

    a = assets()
    texts = {"css": a.css, "loader": a.loader, "glossary": json.dumps(glossary()),
             "modules": packed_modules(entry), "plotly": a.plotly[plotly]}  # fmt: skip
    return {role: (f"{role}@{__version__}-{_digest(text)}", text) for role, text in texts.items()}


_DIGESTS: dict[str, str] = {}


def _digest(text: str) -> str:
    if text not in _DIGESTS:
        _DIGESTS[text] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return _DIGESTS[text]


def page_html(page: Page, config: Mapping[str, Any], data: str, *, shared: bool = False) -> str:
    """One self-contained file: templates/standalone.html around templates/modes/<mode>.html,
    the CSS, the loader, the modules ``page.entry`` imports, Plotly's bundle, ``config``
    (JSON; ``glossary`` and ``entry`` added) and ``data`` (base64 of gzip, see ``gz64``), all
    inline. ``shared``: a notebook display's page instead, without that code: it names the
    pieces (``shared_code``) its notebook carries once and takes them from there."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from attnviz.version import __version__
    from attnviz.web import find_dir

    if not MODE.match(page.mode):
        raise ValueError(f"mode: {page.mode!r} is not a mode's name")
    if "</style" in page.style.lower():
        raise ValueError("style: closes its own element")
    env = Environment(loader=FileSystemLoader(find_dir("templates")),
                      autoescape=select_autoescape(default=True))  # fmt: skip
    a = assets()
    code = {"css": a.css, "loader": a.loader, "modules_gz": packed_modules(page.entry),
            "plotly_gz": a.plotly[page.plotly]}  # fmt: skip
    more = {"glossary": glossary()}
    if shared:
        keys = {role: key for role, (key, _) in shared_code(page.entry, page.plotly).items()}
        bootstrap = (find_dir("static") / "js" / BOOTSTRAP).read_text(encoding="utf-8")
        if "</script" in bootstrap.lower():
            raise RuntimeError("attnviz: the notebook's start closes its own element")
        code = {"shared_json": _script_json(keys), "bootstrap": bootstrap}
        more = {}
    return env.get_template("standalone.html").render(
        page=page,
        version=__version__,
        shared=shared,
        data_gz=data,
        config_json=_script_json({**config, **more, "entry": page.entry}),
        **code,
    )
