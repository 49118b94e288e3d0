from attnviz import __version__


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200
    body = r.json()
    load = body.pop("load")
    placement = body.pop("placement")
    assert body == {"status": "ok", "version": __version__, "device": "cpu"}
    assert placement["tiny-gpt2"] == {"embed": "cpu", "layers": ["cpu"] * 2, "head": "cpu"}
    assert load["running"] == 0 and load["waiting"] == 0
    assert load["cache_max_mb"] == client.app.state.settings.trace_cache_mb
    assert load["cache_mb"] == round(client.app.state.traces.cache.bytes / 2**20, 1)


def test_openapi_documents_the_api(client):
    spec = client.get("/openapi.json").json()
    assert {"/healthz", "/api/presets", "/api/trace"} <= set(spec["paths"])
    trace = spec["paths"]["/api/trace"]["post"]
    assert "422" in trace["responses"]
    assert "ToyTraceRequest" in str(trace["requestBody"])
    for page, asset in (("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")):
        html = client.get(page)
        assert html.status_code == 200
        assert "http://" not in html.text and "https://" not in html.text
        src = next(line for line in html.text.splitlines() if asset in line).split('"')[1]
        assert client.get(src).status_code == 200  # served from the installed package, offline


def test_unknown_routes_are_404_not_500(client):
    assert client.get("/api/nothing").status_code == 404
    assert client.get("/api/trace").status_code == 405
