"""The page's HTTP side: hashed static URLs, cache headers, Plotly.js served locally, no CDN."""

import hashlib
import json
import posixpath
import re
from pathlib import Path

import plotly

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


def test_plotly_comes_from_the_installed_package(client):
    html = page(client)
    (url,) = re.findall(r'src="(/vendor/plotly-[^"]+\.min\.js)"', html)
    assert plotly.__version__ in url
    shipped = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    for accept in ("gzip, deflate", "identity"):
        r = client.get(url, headers={"Accept-Encoding": accept})
        assert r.status_code == 200 and r.content == shipped  # (httpx undoes the gzip)
        assert r.headers.get("content-encoding") == ("gzip" if accept != "identity" else None)
        assert "javascript" in r.headers["content-type"]
        assert "immutable" in r.headers["cache-control"]
    gzipped = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert int(gzipped.headers["content-length"]) < len(shipped) / 3  # sent compressed


def test_static_files_cannot_escape_their_folder(client):
    assert client.get("/static/../attnviz/settings.py").status_code == 404
    assert client.get("/static/%2e%2e/pyproject.toml").status_code == 404


def test_page_gets_its_data_from_the_api_not_from_the_template(client):
    html = page(client)
    assert "apple" not in html.lower()  # the preset arrives through /api/presets
