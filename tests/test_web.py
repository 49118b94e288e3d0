"""The page's HTTP side: hashed static URLs, cache headers, Plotly.js served locally, no CDN, the
page's modules as one bundle made from them as they are."""

import hashlib
import json
import posixpath
import re
import tempfile
from pathlib import Path

import plotly
import pytest

ROOT = Path(__file__).resolve().parent.parent


def page(client) -> str:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    return r.text


def test_page_loads_nothing_from_another_host(client):
    html = page(client)
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    # A link within the page (the skip links, issue 28, 5.17) loads nothing: it names an
    # element of the page itself.
    for fragment in [u for u in urls if u.startswith("#")]:
        assert f'id="{fragment[1:]}"' in html, fragment
    urls = [u for u in urls if not u.startswith("#")]
    assert urls, "the page links its scripts and styles"
    assert all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    assert "http://" not in html and "https://" not in html
    for u in urls:
        assert client.get(u).status_code == 200, u


@pytest.mark.slow
def test_static_urls_carry_the_content_hash_and_are_immutable(client):
    html = page(client)
    for url in re.findall(r'"(/static/[^"?]+\?v=[0-9a-f]{12})"', html):
        path, digest = url.split("?v=")
        file = ROOT / "static" / path.removeprefix("/static/")
        assert hashlib.sha256(file.read_bytes()).hexdigest()[:12] == digest
        r = client.get(url)
        assert r.status_code == 200 and r.content == file.read_bytes()
        assert "immutable" in r.headers["cache-control"]
    # Without the hash (or with a stale one) the browser must revalidate.
    assert client.get("/static/js/main.js").headers["cache-control"] == "no-cache"
    assert client.get("/static/js/main.js?v=000000000000").headers["cache-control"] == "no-cache"


def test_importmap_sends_every_module_to_its_hashed_url(client):
    html = page(client)
    raw = re.search(r'<script type="importmap">(.*?)</script>', html, re.S).group(1)
    imports = json.loads(raw)["imports"]
    js = ROOT / "static" / "js"
    modules = sorted(f"/static/js/{p.relative_to(js).as_posix()}" for p in js.rglob("*.js"))
    assert sorted(imports) == modules
    assert {"/static/js/main.js", "/static/js/core/api.js", "/static/js/views/modelview.js",
            "/static/js/modes/sentence/index.js"} <= set(imports)  # fmt: skip
    for key, url in imports.items():
        digest = hashlib.sha256((ROOT / key.removeprefix("/")).read_bytes()).hexdigest()[:12]
        assert url == f"{key}?v={digest}"
    # Every relative import of every module, resolved as the browser resolves it against the
    # module's own URL, is a key of the map (so a nested module gets its hashed URL too).
    resolved = set()
    for key in imports:
        source = (ROOT / key.removeprefix("/")).read_text()
        statements = r'^(?:import|export)\b[^;]*?\bfrom "(\.{1,2}/[^"]+)"'
        for spec in re.findall(statements, source, re.M):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(key), spec))
            assert target in imports, f"{key} imports {spec}"
            resolved.add(target)
    assert {"/static/js/core/api.js", "/static/js/views/modelview.js",
            "/static/js/modes/sentence/parts.js"} <= resolved  # fmt: skip


def test_plotly_is_the_vendored_partial_bundles_never_the_full_one(client):
    """The page names plotly.js's cartesian bundle (every 2-D plot) and the gl3d one, which
    core/plotly.js loads when a plot first needs one (no script tag loads Plotly); the plotly
    wheel's full bundle (4.6 MB) is no longer served (its route is gone)."""
    html = page(client)
    assert re.findall(r'<script[^>]*src="[^"]*plotly', html) == []
    (cartesian,) = re.findall(r'<meta name="attnviz-plotly-2d" content="([^"]+)"', html)
    assert cartesian.startswith("/static/vendor/plotly-cartesian.min.js?v=")
    (gl3d,) = re.findall(r'<meta name="attnviz-plotly-3d" content="([^"]+)"', html)
    assert gl3d.startswith("/static/vendor/plotly-gl3d.min.js?v=")
    for url in (cartesian, gl3d):
        shipped = (ROOT / "static" / url.split("?")[0].removeprefix("/static/")).read_bytes()
        for accept in ("gzip, deflate", "identity"):
            r = client.get(url, headers={"Accept-Encoding": accept})
            assert r.status_code == 200 and r.content == shipped  # (httpx undoes the gzip)
            assert r.headers.get("content-encoding") == ("gzip" if accept != "identity" else None)
            assert "javascript" in r.headers["content-type"]
            assert "immutable" in r.headers["cache-control"]
        gzipped = client.get(url, headers={"Accept-Encoding": "gzip"})
        assert int(gzipped.headers["content-length"]) < len(shipped) / 3  # sent compressed
        assert gzipped.headers["vary"] == "Accept-Encoding"
        refused = client.get(url, headers={"Accept-Encoding": "gzip;q=0, br"})  # gzip refused
        assert refused.headers.get("content-encoding") is None and refused.content == shipped
    assert f"plotly-{plotly.__version__}" not in html
    assert client.get(f"/vendor/plotly-{plotly.__version__}.min.js").status_code == 404


def test_a_large_static_file_is_gzipped_once_and_kept(client, monkeypatch):
    """Compressing 1.5 MB for every visitor would hold the event loop: the second answer is the
    same bytes, with nothing compressed again."""
    import attnviz.web as web

    url = re.search(r'content="(/static/vendor/plotly-cartesian[^"]+)"', page(client)).group(1)
    first = client.get(url, headers={"Accept-Encoding": "gzip"})
    calls = []
    monkeypatch.setattr(web, "compress", lambda *a, **k: calls.append(a) or b"")
    again = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert calls == [] and again.content == first.content
    assert again.headers["etag"] == first.headers["etag"]
    # A 304 to a revalidation, as for any static file.
    etag = first.headers["etag"]
    assert client.get(url, headers={"If-None-Match": etag}).status_code == 304


def test_static_files_cannot_escape_their_folder(client):
    assert client.get("/static/../attnviz/settings.py").status_code == 404
    assert client.get("/static/%2e%2e/pyproject.toml").status_code == 404


def test_page_gets_its_data_from_the_api_not_from_the_template(client):
    html = page(client)
    assert "apple" not in html.lower()  # the preset arrives through /api/presets


def test_the_page_loads_its_modules_as_one_bundle(client):
    """One script for the page's modules: static/bundle/main.js, made by esbuild from
    static/js/main.js and its imports (attnviz/web.py)."""
    html = page(client)
    (entry,) = re.findall(r'<script type="module" src="([^"]+)"', html)
    assert entry.startswith("/static/bundle/main.js?v=")
    body = client.get(entry).text
    assert body.startswith("// attnviz: static/js/main.js and every module it imports")
    for module in ("static/js/core/plotly.js", "static/js/views/heatmaps.js",
                   "static/js/modes/sentence/index.js"):  # fmt: skip
        # Minified, its names are not the module's, but its strings are: each long one there.
        source = (ROOT / module).read_text(encoding="utf-8")
        code = "\n".join(line for line in source.splitlines()
                         if not line.lstrip().startswith(("import", "//", "*", "/*")))  # fmt: skip
        strings = re.findall(r'"([^"\\$`\n]{24,})"', code)
        assert strings, module
        assert all(text in body for text in strings), module


def test_the_committed_bundle_is_made_from_the_modules_as_they_are():
    """static/bundle/main.js records the digest of its sources: a module edited since fails
    here (make bundle, then commit the file). Where esbuild is installed (npm ci), the bundle
    is made again and must be the committed file byte for byte."""
    import shutil
    import subprocess

    from attnviz.web import BUNDLE, StaticHasher, build_bundle

    hasher = StaticHasher(ROOT / "static")
    assert hasher.bundle_digest() == hasher.sources_digest(), (
        "static/bundle/main.js is stale: run `make bundle` and commit it"
    )
    if not (ROOT / "node_modules" / ".bin" / "esbuild").is_file():
        return
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp)
        shutil.copytree(ROOT / "static", copy / "static")
        (copy / "node_modules").symlink_to(ROOT / "node_modules")
        (copy / "static" / BUNDLE).unlink()
        try:
            made = build_bundle(copy)
        except subprocess.CalledProcessError as err:
            raise AssertionError(f"esbuild failed: {err}") from err
        assert made.read_bytes() == (ROOT / "static" / BUNDLE).read_bytes()


def test_a_stale_bundle_gives_way_to_the_modules(tmp_path, caplog):
    """A module edited after the bundle was made: the page loads js/main.js and its modules (by
    the import map) instead of serving old code, and the server says so once."""
    import shutil

    from attnviz.web import StaticHasher

    shutil.copytree(ROOT / "static", tmp_path / "static")
    hasher = StaticHasher(tmp_path / "static")
    assert hasher.entry_url().startswith("/static/bundle/main.js?v=")
    view = tmp_path / "static" / "js" / "views" / "heatmaps.js"
    view.write_text(view.read_text() + "\n// edited\n")
    with caplog.at_level("WARNING", logger="attnviz.web"):
        assert hasher.entry_url().startswith("/static/js/main.js?v=")
        assert hasher.entry_url().startswith("/static/js/main.js?v=")
    assert len([r for r in caplog.records if "make bundle" in r.getMessage()]) == 1
    # An offline-only module is no source of the bundle: editing it changes nothing.
    view.write_text(view.read_text().removesuffix("\n// edited\n"))
    loader = tmp_path / "static" / "js" / "offline" / "loader.js"
    loader.write_text(loader.read_text() + "\n// edited\n")
    assert hasher.entry_url().startswith("/static/bundle/main.js?v=")


def test_only_core_plotly_js_reaches_the_global_plotly():
    """The page has two Plotly libraries (the cartesian bundle in window.Plotly, the gl3d one in
    core/plotly.js only): a view that called window.Plotly on a 3-D plot would ask the wrong
    one. So every module goes through core/plotly.js (plotlyOf, onPlot, draw's withPlotly);
    the offline loader, which sets window.Plotly in a saved file, is the one other."""
    uses = re.compile(r"\bwindow\b[\s)]*\.\s*Plotly\b")  # also (window).Plotly
    found = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "static" / "js").rglob("*.js")
        if any(uses.search(line) and not line.lstrip().startswith(("//", "*", "/*"))
               for line in p.read_text(encoding="utf-8").splitlines())
    )  # fmt: skip
    assert found == ["static/js/core/plotly.js", "static/js/offline/loader.js"], found


def test_the_generated_modules_are_what_the_python_declares():
    """static/js/core/generated/ holds what attnviz/jsgen.py makes from the Python's
    declarations (the trace fields' catalogue) and nothing else: a field added, changed or
    removed without `make bundle`, or a generated module edited by hand, fails here."""
    from attnviz import jsgen
    from attnviz.capture.fields import REGISTRY

    made = jsgen.generated()
    for rel, text in made.items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} is stale: `make bundle`"
    folder = ROOT / "static" / "js" / "core" / "generated"
    assert sorted(p.relative_to(ROOT).as_posix() for p in folder.iterdir()) == sorted(made)
    # the catalogue is every field, each with the parameters it reads
    text = made[jsgen.FIELDS_JS]
    for f in REGISTRY:
        assert f'"{f.name}": {{"params": {json.dumps(list(f.params))},' in text
