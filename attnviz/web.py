"""The browser page: the HTML route, content-hashed static files, and the page's one script.

Static files get URLs that carry a hash of their content (``/static/js/main.js?v=1a2b3c4d5e6f``)
so the browser may cache them forever; a request whose ``v`` matches the file's current hash is
answered with ``Cache-Control: public, max-age=31536000, immutable``. A large file (Plotly's
bundles, the page's bundle) is gzipped once, on a worker thread, and kept: compressing it for
every new visitor would hold the event loop tens of milliseconds each time.

The page's JavaScript is plain ES modules under static/js that import each other by relative
path. The browser gets them as one file, ``static/bundle/main.js``: esbuild's bundle of
``js/main.js`` and every module it imports, committed (``make bundle`` makes it; serving needs
no Node.js). Its first line records a digest of the modules it was made from; when they have
changed since (a module edited, the bundle not yet made again), the page loads ``js/main.js``
and its modules one by one instead, so a stale bundle is never served, and a test fails on it.
The page also carries an import map that sends every ``/static/js/X.js`` to its hashed URL (for
those modules, and for anything that imports one). Plotly.js comes from plotly.js's own partial
bundles under static/vendor (the plotly wheel's version), each named by the page and loaded by
static/js/core/plotly.js: the cartesian one when a mode first draws a 2-D plot (the toy lab as it
opens), the gl3d one when a 3-D plot is first drawn. Nothing is loaded from a CDN.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import Scope

from attnviz.version import __version__
from attnviz.wire.encoding import compress, negotiate

log = logging.getLogger(__name__)

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
STATIC_PREFIX = "/static"
ENTRY = "js/main.js"  # the page's modules start here
BUNDLE = "bundle/main.js"  # esbuild's one file of ENTRY and its imports (make bundle)
PLOTLY_2D = "vendor/plotly-cartesian.min.js"  # heatmap, scatter: every 2-D view
PLOTLY_3D = "vendor/plotly-gl3d.min.js"  # scatter3d, cone: loaded when a 3-D plot is drawn
GZIP_KEPT = 64 * 1024  # a static file this large is gzipped once and kept
# ``from "./x.js"``, ``import "./x.js"``: a module's static imports (as attnviz/python/page.py's).
IMPORT = re.compile(r"""(?:\bfrom|^\s*import)\s*["'](\.{1,2}/[^"']+)["']""", re.MULTILINE)
SOURCES = re.compile(r"sources ([0-9a-f]{16})")


def find_dir(name: str) -> Path:
    """``name`` inside the installed package (a wheel) or else at the repository top level."""
    package = Path(__file__).resolve().parent  # attnviz/
    for base in (package, package.parent):
        candidate = base / name
        if candidate.is_dir():
            return candidate
    raise RuntimeError(f"attnviz: no {name!r} folder next to {package} or in {package.parent}")


class StaticHasher:
    """Content hashes of the files under ``root``, recomputed only when a file changes."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[str, tuple[int, int, str]] = {}
        self._imports: dict[str, tuple[str, list[str]]] = {}
        self._warned: str | None = None
        for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
            self.digest(path.relative_to(self.root).as_posix())

    def digest(self, rel: str) -> str | None:
        """First 12 hex digits of the file's sha256, or None when there is no such file."""
        path = (self.root / rel).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        stat = path.stat()
        cached = self._cache.get(rel)
        if cached and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        self._cache[rel] = (stat.st_mtime_ns, stat.st_size, digest)
        return digest

    def url(self, rel: str) -> str:
        """The hashed URL of a static file, e.g. ``static_url("js/main.js")`` in a template."""
        rel = rel.lstrip("/")
        digest = self.digest(rel)
        if digest is None:
            raise FileNotFoundError(f"static file {rel!r} not found under {self.root}")
        return f"{STATIC_PREFIX}/{rel}?v={digest}"

    def importmap(self) -> dict[str, dict[str, str]]:
        """``{"imports": {"/static/js/X.js": "/static/js/X.js?v=..."}}`` for every module.

        The hashes are computed at startup; a file edited while the server runs gets its new
        hash on the next page load (one ``stat`` per module), so a stale map is never served.
        """
        imports = {}
        for path in sorted((self.root / "js").rglob("*.js")):
            rel = path.relative_to(self.root).as_posix()
            imports[f"{STATIC_PREFIX}/{rel}"] = self.url(rel)
        return {"imports": imports}

    def imports(self, rel: str) -> list[str]:
        """The modules that the module ``rel`` imports (paths under the root), kept by digest."""
        digest = self.digest(rel)
        if digest is None:
            raise RuntimeError(f"attnviz: the module {rel!r} is not under {self.root}")
        cached = self._imports.get(rel)
        if cached and cached[0] == digest:
            return cached[1]
        path = self.root / rel
        found = [
            (path.parent / spec).resolve().relative_to(self.root).as_posix()
            for spec in IMPORT.findall(path.read_text(encoding="utf-8"))
        ]
        self._imports[rel] = (digest, found)
        return found

    def sources_digest(self, entry: str = ENTRY) -> str:
        """16 hex digits of sha256 over ``entry`` and every module it imports, each by path and
        content hash: what the bundle records, so that any change to its sources shows."""
        seen: set[str] = set()
        todo = [entry]
        while todo:
            rel = todo.pop()
            if rel not in seen:
                seen.add(rel)
                todo.extend(self.imports(rel))
        lines = "".join(f"{rel} {self.digest(rel)}\n" for rel in sorted(seen))
        return hashlib.sha256(lines.encode()).hexdigest()[:16]

    def bundle_digest(self) -> str | None:
        """The sources digest the bundle's first line records, or None without a bundle."""
        path = self.root / BUNDLE
        if not path.is_file():
            return None
        with path.open(encoding="utf-8") as f:
            found = SOURCES.search(f.readline())
        return found.group(1) if found else None

    def entry_url(self) -> str:
        """The page's one script: the bundle when it was made from the modules as they are now,
        else ``js/main.js`` (its modules then come one by one, by the import map)."""
        built, current = self.bundle_digest(), self.sources_digest()
        if built == current:
            return self.url(BUNDLE)
        if self._warned != current:
            self._warned = current
            log.warning(
                "attnviz: static/%s is not made from the modules as they are (sources %s, the "
                "bundle's %s): the page loads them one by one; `make bundle` makes it again",
                BUNDLE, current, built,
            )  # fmt: skip
        return self.url(ENTRY)


class HashedStaticFiles(StaticFiles):
    """StaticFiles that lets the browser keep a file forever when the URL names its hash."""

    def __init__(self, hasher: StaticHasher, **kwargs) -> None:
        super().__init__(directory=hasher.root, **kwargs)
        self.hasher = hasher
        self._gzipped: dict[str, tuple[str, bytes]] = {}  # path -> (digest, body gzipped)

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            wanted = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [None])[0]
            current = self.hasher.digest(path)
            fresh = wanted is not None and wanted == current
            response.headers["Cache-Control"] = IMMUTABLE if fresh else REVALIDATE
            size = int(response.headers.get("content-length", 0))
            asked = dict(scope.get("headers", [])).get(b"accept-encoding", b"").decode("latin-1")
            accepts = negotiate(asked, ("gzip",)) == "gzip"
            if response.status_code == 200 and size >= GZIP_KEPT and accepts and current:
                response = await self._gzip(path, current, response)
        return response

    async def _gzip(self, path: str, digest: str, plain: Response) -> Response:
        """``plain`` (a file's whole answer) as its body gzipped, compressed once per content."""
        kept = self._gzipped.get(path)
        if not kept or kept[0] != digest:
            raw = (self.hasher.root / path).read_bytes()
            body = await anyio.to_thread.run_sync(lambda: compress(raw, "gzip", level=9))
            if self.hasher.digest(path) != digest:  # the file changed meanwhile
                return plain
            kept = self._gzipped[path] = (digest, body)
        headers = {k: v for k, v in plain.headers.items() if k != "content-length"}
        headers.update({"content-encoding": "gzip", "vary": "Accept-Encoding"})
        return Response(kept[1], status_code=200, headers=headers)


def install_web(app: FastAPI) -> None:
    """Add the page (``GET /``) and ``/static`` to ``app``."""
    hasher = StaticHasher(find_dir("static"))
    templates = Jinja2Templates(directory=find_dir("templates"))

    templates.env.globals["static_url"] = hasher.url
    templates.env.globals["plotly_2d"] = PLOTLY_2D
    templates.env.globals["plotly_3d"] = PLOTLY_3D
    templates.env.globals["version"] = __version__

    app.mount(STATIC_PREFIX, HashedStaticFiles(hasher), name="static")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> Response:
        context = {"importmap": hasher.importmap(), "entry_url": hasher.entry_url()}
        return templates.TemplateResponse(
            request, "index.html", context, headers={"Cache-Control": REVALIDATE}
        )


def build_bundle(root: Path | None = None) -> Path:
    """Make static/bundle/main.js with esbuild (the npm development dependency; ``npm ci``), its
    first line recording the digest of its sources (``StaticHasher.sources_digest``). Run from a
    checkout: ``make bundle``, or ``python -m attnviz.web``."""
    root = root or Path(__file__).resolve().parent.parent
    from attnviz import jsgen  # (the registry: only where the bundle is made)

    jsgen.write(root)  # the modules made from Python's declarations first
    static = root / "static"
    esbuild = root / "node_modules" / ".bin" / "esbuild"
    if not esbuild.is_file():
        found = shutil.which("esbuild")
        if not found:
            raise RuntimeError("attnviz: esbuild is not installed: `npm ci` (make install-dev)")
        esbuild = Path(found)
    digest = StaticHasher(static).sources_digest()
    banner = (
        f"// attnviz: static/{ENTRY} and every module it imports, in one file made by esbuild "
        f"(make bundle); sources {digest}"
    )
    out = static / BUNDLE
    subprocess.run(
        [str(esbuild), f"static/{ENTRY}", "--bundle", "--format=esm", "--charset=utf8", "--minify",
         f"--banner:js={banner}", f"--outfile=static/{BUNDLE}", "--log-level=warning"],
        cwd=root, check=True,
    )  # fmt: skip
    return out


if __name__ == "__main__":
    print(build_bundle())
