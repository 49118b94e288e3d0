"""``attnviz bench --browser``'s cold start (attnviz/bench/coldstart.py), without a browser: the
table from its figures, Lighthouse's report read, and the install line when Lighthouse is
missing (the Playwright figures still printed). Figures only: nothing here asserts a target."""

from __future__ import annotations

from attnviz.bench import coldstart

PLAYWRIGHT = {"runs": 3}
for _name in coldstart.NAMES:
    for _cache in ("cold", "warm"):
        _k = f"{_name}_{_cache}"
        PLAYWRIGHT.update({f"{_k}_fcp": 250, f"{_k}_lcp": 900, f"{_k}_plot": 1100,
                           f"{_k}_drawn": 1400, f"{_k}_three": None, f"{_k}_dcl": 760,
                           f"{_k}_requests": 10, f"{_k}_bytes": 1_190_000,
                           f"{_k}_full_plotly": False})  # fmt: skip


def test_without_lighthouse_the_bench_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(coldstart, "lighthouse_bin", lambda: None)
    said = coldstart.lighthouse(1, "/usr/bin/chromium")
    assert said == f"Lighthouse is not installed: {coldstart.INSTALL}"
    assert "npm i -E lighthouse@12.2.3" in said
    text = coldstart.table({"playwright": PLAYWRIGHT, "lighthouse": said})
    assert (
        "| toy | cold | 0.25 s | 0.90 s | 1.10 s | 1.40 s | - | 0.76 s | 10 | 1.19 MB | no |"
        in text
    )
    assert "| sentence | warm |" in text
    assert text.rstrip().endswith(said)


def test_lighthouse_figures_are_read_from_its_report():
    report = {
        "audits": {
            "first-contentful-paint": {"numericValue": 231.4},
            "largest-contentful-paint": {"numericValue": 812.6},
            "total-blocking-time": {"numericValue": 95.0},
            "user-timings": {
                "details": {
                    "items": [
                        {"name": "attnviz:first-plot", "startTime": 1020.2, "timingType": "Mark"},
                        {"name": "attnviz:first-trace", "startTime": 1310.7, "timingType": "Mark"},
                        {
                            "name": "attnviz:first-3d-plot",
                            "startTime": 900.0,
                            "timingType": "Measure",
                        },
                    ]
                }
            },  # fmt: skip
        }
    }
    assert coldstart._audit(report) == {"fcp": 231, "lcp": 813, "tbt": 95, "plot": 1020,
                                        "drawn": 1311}  # fmt: skip
    figures = {f"{n}_{c}_{k}": v for n in coldstart.NAMES for c in ("cold", "warm")
               for k, v in coldstart._audit(report).items()}  # fmt: skip
    text = coldstart.table({"playwright": PLAYWRIGHT, "lighthouse": figures})
    assert "| toy | warm | 0.23 s | 0.81 s | 95 ms | 1.02 s | 1.31 s |" in text


def test_a_full_plotly_bundle_is_told_from_the_partial_ones():
    assert coldstart._full_plotly(["http://h/vendor/plotly-7.1.0.min.js"])
    assert coldstart._full_plotly(["http://h/static/plotly.min.js?v=1"])
    assert not coldstart._full_plotly(["http://h/static/vendor/plotly-cartesian.min.js?v=1",
                                       "http://h/static/vendor/plotly-gl3d.min.js?v=2"])  # fmt: skip
