"""The browser page: the HTML route, content-hashed static files and the vendored Plotly.js.

Static files get URLs that carry a hash of their content (``/static/js/main.js?v=1a2b3c4d5e6f``)
so the browser may cache them forever; a request whose ``v`` matches the file's current hash is
answered with ``Cache-Control: public, max-age=31536000, immutable``. The page's JavaScript is
plain ES modules that import each other by relative path, so the page also carries an import map
that sends every ``/static/js/X.js`` to its hashed URL. Plotly.js comes from the installed
``plotly`` Python package; nothing is loaded from a CDN.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import importlib.resources
from pathlib import Path
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.types import Scope

from attnviz.version import __version__

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
STATIC_PREFIX = "/static"


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


class HashedStaticFiles(StaticFiles):
    """StaticFiles that lets the browser keep a file forever when the URL names its hash."""

    def __init__(self, hasher: StaticHasher, **kwargs) -> None:
        super().__init__(directory=hasher.root, **kwargs)
        self.hasher = hasher

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            wanted = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("v", [None])[0]
            current = self.hasher.digest(path)
            fresh = wanted is not None and wanted == current
            response.headers["Cache-Control"] = IMMUTABLE if fresh else REVALIDATE
        return response


def plotly_js() -> tuple[str, Path | bytes]:
    """The Plotly.js bundle shipped inside the ``plotly`` package: (version, file or bytes)."""
    version = importlib.metadata.version("plotly")
    resource = importlib.resources.files("plotly") / "package_data" / "plotly.min.js"
    if isinstance(resource, Path):
        if not resource.is_file():
            raise RuntimeError(f"attnviz: the plotly package has no {resource}")
        return version, resource
    return version, resource.read_bytes()  # a zipped install: keep the bytes in memory


def install_web(app: FastAPI) -> None:
    """Add the page (``GET /``), ``/static`` and ``/vendor/plotly-<version>.min.js`` to ``app``."""
    hasher = StaticHasher(find_dir("static"))
    templates = Jinja2Templates(directory=find_dir("templates"))
    plotly_version, plotly_source = plotly_js()
    plotly_url = f"/vendor/plotly-{plotly_version}.min.js"

    templates.env.globals["static_url"] = hasher.url
    templates.env.globals["plotly_url"] = plotly_url
    templates.env.globals["version"] = __version__

    app.mount(STATIC_PREFIX, HashedStaticFiles(hasher), name="static")

    gzipped: list[bytes] = []  # compressed once, on first use

    @app.get(plotly_url, include_in_schema=False)
    def vendor_plotly(request: Request) -> Response:
        """The bundle (4.6 MB), gzipped once and kept: compressing it for every new visitor
        would take the event loop tens of milliseconds each time."""
        headers = {"Cache-Control": IMMUTABLE, "Vary": "Accept-Encoding"}
        if "gzip" in request.headers.get("accept-encoding", ""):
            if not gzipped:  # (a plain def: FastAPI runs it on a worker thread, not the loop)
                raw = (
                    plotly_source
                    if isinstance(plotly_source, bytes)
                    else plotly_source.read_bytes()
                )
                gzipped.append(gzip.compress(raw, compresslevel=9, mtime=0))
            headers["Content-Encoding"] = "gzip"
            return Response(gzipped[0], media_type="text/javascript", headers=headers)
        if isinstance(plotly_source, Path):
            return FileResponse(plotly_source, media_type="text/javascript", headers=headers)
        return Response(plotly_source, media_type="text/javascript", headers=headers)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request) -> Response:
        context = {"importmap": hasher.importmap()}
        return templates.TemplateResponse(
            request, "index.html", context, headers={"Cache-Control": REVALIDATE}
        )
