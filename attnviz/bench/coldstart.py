"""The page's cold start, for ``attnviz bench --browser``: how soon a first visit paints and draws.

Two instruments, on a server already running (``serve.run`` starts it):

- ``playwright(port, chromium)``: headless Chromium through Playwright, in fresh browser
  contexts (a cold cache each) and then once more in the same context (a warm cache: every
  static file is kept by its hashed URL): first contentful paint, largest contentful paint, the
  first plot drawn and the first trace drawn (the page's marks ``attnviz:first-plot`` and
  ``attnviz:first-trace``, the latter set when every view of its first trace is drawn), how long
  the first 3-D plot took within it (``attnviz:first-3d-plot``: its bundle loaded and its WebGL
  scene made), the requests and bytes until then, and whether a full Plotly bundle was among
  them; for the toy lab (``/``) and for sentence mode (a link that opens it).
- ``lighthouse(port, chromium)``: Lighthouse (the npm package, a development dependency:
  ``npm ci``) against the same Chromium (``CHROME_PATH``), on loopback only, no throttling
  (this machine as it is), desktop screen: first contentful paint, largest contentful paint,
  total blocking time and the page's marks, cold (Lighthouse clears the cache) then warm (the
  same browser again, storage kept). When Lighthouse is not installed it says how to install it
  and the Playwright figures stand alone.

Figures only: the targets are read from the table (docs/performance.md), never asserted.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from attnviz.bench.harness import BROWSER_ARGS, request

log = logging.getLogger(__name__)

LIGHTHOUSE_VERSION = "12.2.3"  # 13.x needs Node 22
INSTALL = f"npm i -E lighthouse@{LIGHTHOUSE_VERSION} (in the repository's folder; npm ci does it)"
NAMES = ("toy", "sentence")
MARK = "attnviz:first-trace"
PLOT = "attnviz:first-plot"

# In the page before its own scripts: the largest contentful paint as it grows (the browser
# reports it only to an observer).
WATCH_LCP = """(() => {
  window.__lcp = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__lcp = Math.max(window.__lcp, e.startTime);
  }).observe({ type: "largest-contentful-paint", buffered: true });
})();"""

READ = """(mark) => {
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const drawn = performance.getEntriesByName(mark)[0];
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource")
    .filter((r) => r.startTime <= drawn.startTime);
  const plot = performance.getEntriesByName("attnviz:first-plot")[0];
  const three = performance.getEntriesByName("attnviz:first-3d-plot")[0];
  return {
    fcp: paint ? paint.startTime : null,
    lcp: window.__lcp || null,
    plot: plot ? plot.startTime : null,
    drawn: drawn.startTime,
    three: three && three.startTime + three.duration <= drawn.startTime ? three.duration : null,
    dcl: nav.domContentLoadedEventEnd,
    requests: 1 + res.length,
    bytes: nav.transferSize + res.reduce((a, r) => a + r.transferSize, 0),
    urls: res.map((r) => r.name),
  };
}"""


def pages(port: int) -> dict[str, str]:
    """The paths of the two first visits: the toy lab (the page's own first screen) and a link
    that opens sentence mode on the server's default model and first example text (what its
    tab shows first; core/state.js decodeShare reads the link)."""
    _, _, body = request(port, "GET", "/api/models")
    models = json.loads(body)
    sentence = {"model": models["default"], "text": (models["examples"] or [""])[0]}
    link = json.dumps({"mode": "sentence", "sentence": sentence}).encode()
    return {"toy": "/", "sentence": "/#s=" + base64.urlsafe_b64encode(link).decode().rstrip("=")}


def _full_plotly(urls: list[str]) -> bool:
    """Plotly's whole bundle among ``urls``: the plotly wheel's (``/vendor/plotly-7.1.0.min.js``,
    what the page loaded before issue 28) or any ``plotly.min.js``; not a partial bundle."""
    return any(re.search(r"/plotly(-\d[^/]*)?\.min\.js", u) for u in urls)


def _visit(page: Any, url: str) -> dict[str, Any]:
    page.goto(url)
    page.wait_for_function(f"() => performance.getEntriesByName({MARK!r}).length > 0")
    page.wait_for_timeout(300)  # the largest paint may still be reported
    return page.evaluate(READ, MARK)


def playwright(port: int, chromium: str, runs: int = 3) -> dict[str, Any]:
    """Median figures of ``runs`` fresh contexts per page, cold and then warm (ms, counts)."""
    from playwright.sync_api import sync_playwright

    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"runs": runs}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        for name, path in pages(port).items():
            seen: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.set_default_timeout(120_000)
                context.add_init_script(WATCH_LCP)
                page = context.new_page()
                seen["cold"].append(_visit(page, base + path))
                page.goto("about:blank")
                seen["warm"].append(_visit(page, base + path))
                context.close()
            for cache, visits in seen.items():
                key = f"{name}_{cache}"
                for figure in ("fcp", "lcp", "plot", "drawn", "three", "dcl", "requests", "bytes"):
                    values = [v[figure] for v in visits if v[figure] is not None]
                    out[f"{key}_{figure}"] = round(statistics.median(values)) if values else None
                out[f"{key}_full_plotly"] = any(_full_plotly(v["urls"]) for v in visits)
        browser.close()
    return out


def lighthouse_bin() -> Path | None:
    """The ``lighthouse`` command of the repository's node_modules, or one on PATH."""
    here = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "lighthouse"
    if here.is_file():
        return here
    found = shutil.which("lighthouse")
    return Path(found) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _audit(report: dict[str, Any]) -> dict[str, Any]:
    audits = report["audits"]
    marks = {
        item["name"]: item["startTime"]
        for item in (audits.get("user-timings", {}).get("details") or {}).get("items", [])
        if item.get("timingType") == "Mark"
    }
    return {
        "fcp": round(audits["first-contentful-paint"]["numericValue"]),
        "lcp": round(audits["largest-contentful-paint"]["numericValue"]),
        "tbt": round(audits["total-blocking-time"]["numericValue"]),
        "plot": round(marks[PLOT]) if PLOT in marks else None,
        "drawn": round(marks[MARK]) if MARK in marks else None,
    }


def lighthouse(port: int, chromium: str) -> dict[str, Any] | str:
    """Lighthouse's figures for each page, cold then warm, in one Chromium of its own; or, when
    Lighthouse is missing or fails, a sentence saying why."""
    tool = lighthouse_bin()
    if tool is None:
        return f"Lighthouse is not installed: {INSTALL}"
    debug = _free_port()
    profile = tempfile.mkdtemp(prefix="attnviz-lighthouse-")
    args = [chromium, "--headless=new", f"--remote-debugging-port={debug}",
            f"--user-data-dir={profile}", *BROWSER_ARGS]  # fmt: skip
    chrome = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the DevTools port opens
            try:
                socket.create_connection(("127.0.0.1", debug), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        env = {**os.environ, "CHROME_PATH": chromium}
        for name, path in pages(port).items():
            for cache in ("cold", "warm"):
                cmd = [str(tool), f"http://127.0.0.1:{port}{path}", f"--port={debug}",
                       "--output=json", "--output-path=stdout", "--quiet",
                       "--only-categories=performance", "--form-factor=desktop",
                       "--screenEmulation.disabled", "--throttling-method=provided",
                       "--max-wait-for-load=60000"]  # fmt: skip
                if cache == "warm":  # the run before filled the cache: keep it
                    cmd.append("--disable-storage-reset")
                for _ in range(3):  # NO_NAVSTART now and then, on a loaded machine: again
                    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
                    if done.returncode == 0:
                        break
                else:
                    return f"Lighthouse failed ({done.stderr.strip()[-300:]})"
                for figure, value in _audit(json.loads(done.stdout)).items():
                    out[f"{name}_{cache}_{figure}"] = value
    except (OSError, subprocess.TimeoutExpired, KeyError, json.JSONDecodeError) as err:
        return f"Lighthouse failed ({err})"
    finally:
        chrome.terminate()
        try:
            chrome.wait(timeout=20)
        except subprocess.TimeoutExpired:
            chrome.kill()
        shutil.rmtree(profile, ignore_errors=True)
    return out


def _s(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.2f} s"


def table(figures: dict[str, Any]) -> str:
    """The cold start's lines of the bench table (``figures``: ``run``'s)."""
    pw = figures.get("playwright") or {}
    lh = figures.get("lighthouse")
    lines = [
        "",
        "Cold start, headless Chromium (Playwright; median of "
        f"{pw.get('runs', '-')} fresh contexts; warm: the same context again):",
        "",
        "| page | cache | first contentful paint | largest contentful paint | first plot drawn "
        "| first trace drawn | of which the 3-D plot | DOMContentLoaded | requests | bytes "
        "| full Plotly bundle |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for name in NAMES:
        for cache in ("cold", "warm"):
            k = f"{name}_{cache}"
            if f"{k}_drawn" not in pw:
                continue
            lines.append(
                f"| {name} | {cache} | {_s(pw[f'{k}_fcp'])} | {_s(pw[f'{k}_lcp'])} | "
                f"{_s(pw[f'{k}_plot'])} | {_s(pw[f'{k}_drawn'])} | {_s(pw[f'{k}_three'])} | "
                f"{_s(pw[f'{k}_dcl'])} | {pw[f'{k}_requests']} | "
                f"{pw[f'{k}_bytes'] / 1e6:.2f} MB | {'yes' if pw[f'{k}_full_plotly'] else 'no'} |"
            )
    if isinstance(lh, str):
        lines += ["", lh]
    elif lh:
        lines += [
            "",
            f"Lighthouse {LIGHTHOUSE_VERSION} (desktop, no throttling, the same Chromium; warm: "
            "storage kept from the cold run):",
            "",
            "| page | cache | first contentful paint | largest contentful paint "
            "| total blocking time | first plot drawn | first trace drawn |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name in NAMES:
            for cache in ("cold", "warm"):
                k = f"{name}_{cache}"
                if f"{k}_fcp" in lh:
                    lines.append(
                        f"| {name} | {cache} | {_s(lh[f'{k}_fcp'])} | {_s(lh[f'{k}_lcp'])} | "
                        f"{lh[f'{k}_tbt']} ms | {_s(lh[f'{k}_plot'])} | {_s(lh[f'{k}_drawn'])} |"
                    )
    return "\n".join(lines)


def run(port: int, chromium: str, runs: int = 3) -> dict[str, Any]:
    """Both instruments on the server at ``port``."""
    figures: dict[str, Any] = {"playwright": playwright(port, chromium, runs)}
    log.info("cold start measured in Playwright")
    figures["lighthouse"] = lighthouse(port, chromium)
    return figures
