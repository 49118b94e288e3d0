"""What every bench shares: ``attnviz serve`` on a free loopback port (``Server``; ``kill``
stops it hard), one HTTP request to it (``request``), a visitor's cookies (``keep_cookies``,
``cookie_header``), texts of an exact length (``text_of``), the Hugging Face reference forward
(``HuggingFace``), headless Chromium's arguments and its typing-to-drawn figures (``browser``),
and a server process's memory and /healthz meanwhile (``status_bytes``, ``HealthProbe``). Only
the standard library at import: the CLI reads the bench table on every start.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import http.client

log = logging.getLogger(__name__)

# Words to build texts of a given length from: plain English, one or two tokens each.
WORDS = (
    "attention lets every token look at every other token and decide how much of each to take "
    "the queries ask the keys answer and the values carry what is taken a river bank is not an "
    "investment bank and the model learns to tell them apart by what surrounds them while the "
    "residual stream keeps what each layer adds so that later layers can read it again"
).split()
# The page at 1280 px wide asks for thumbnails of 97 px (the width of its model view cells).
FIRST = {"fields": "thumbs", "thumb": 97, "hide_special": "false", "merge_words": "false"}


class Server:
    """``attnviz serve`` on a free loopback port, for the length of a ``with``. Its data
    directory is the one ``env`` names, else a temporary one of its own, removed at the end:
    a bench never writes into the user's (a server of theirs may be using it, with other
    code)."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.data: tempfile.TemporaryDirectory[str] | None = None
        if "ATTNVIZ_DATA_DIR" not in (env or {}):
            self.data = tempfile.TemporaryDirectory(prefix="attnviz-bench-data-")
            env = {**(env or {}), "ATTNVIZ_DATA_DIR": self.data.name}
        env = {**os.environ, "ATTNVIZ_LOG_LEVEL": "warning", **(env or {})}
        self.env = env  # the server's whole environment
        cmd = [sys.executable, "-m", "attnviz", "serve", "--host", "127.0.0.1"]
        self.proc = subprocess.Popen([*cmd, "--port", str(self.port), *args], env=env)

    def __enter__(self) -> Server:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"attnviz serve stopped at start (exit {self.proc.returncode})")
            try:
                status, _, _ = request(self.port, "GET", "/healthz")
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("attnviz serve did not answer /healthz in 120 s")

    def kill(self) -> None:
        """SIGKILL: the server stops at once, mid-write perhaps, as when its machine loses
        power (no shutdown handler runs, nothing is flushed)."""
        self.proc.kill()
        self.proc.wait(timeout=20)

    def __exit__(self, *_exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)
        if self.data is not None:
            self.data.cleanup()


def request(
    port: int,
    method: str,
    path: str,
    body: dict | None = None,
    params: dict | None = None,
    compact: bool = False,
    conn: http.client.HTTPConnection | None = None,
    headers_out: dict[str, str] | None = None,
) -> tuple[int, int, bytes]:
    """One HTTP request on loopback: (status, bytes on the wire, decoded body); the response's
    headers put in ``headers_out`` when given."""
    import http.client

    from attnviz.wire.constants import COMPACT_MEDIA_TYPE

    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    query = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    headers = {"Accept-Encoding": "gzip", "Accept": COMPACT_MEDIA_TYPE if compact else "*/*"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    conn.request(method, path + query, body=data, headers=headers)
    response = conn.getresponse()
    raw = response.read()
    if headers_out is not None:
        headers_out.update((k.lower(), v) for k, v in response.getheaders())
    if own:
        conn.close()
    wire = len(raw)
    if response.getheader("Content-Encoding") == "gzip":
        raw = gzip.decompress(raw)
    return response.status, wire, raw


def cookie_header(jar: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in jar.items())


def keep_cookies(jar: dict[str, str], response: http.client.HTTPResponse) -> int:
    """The cookies an answer sets, kept in ``jar`` (name and value: the bench needs no more);
    how many replaced one the jar held (the server did not know the visitor it named)."""
    replaced = 0
    for header in response.headers.get_all("Set-Cookie") or []:
        name, _, rest = header.partition("=")
        name = name.strip()
        replaced += name in jar
        jar[name] = rest.split(";", 1)[0].strip()
    return replaced


def text_of(tokenizer, n: int, start: int = 0) -> str:
    """A text of exactly ``n`` tokens (specials included), from WORDS at offset ``start``."""
    words: list[str] = []
    i = start
    while len(tokenizer(" ".join(words)).ids) < n:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    while len(tokenizer(" ".join(words)).ids) > n:  # a two-token word went past: one less
        words.pop()
        if len(tokenizer(" ".join(words)).ids) < n:
            words.append("a")
    return " ".join(words)


class HuggingFace:
    """The reference forward: Hugging Face's model on the same folder, eager attention,
    attentions and hidden states returned. None of it when transformers is not installed."""

    def __init__(self, folder: Path, device: str) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.torch = torch
        self.dev = torch.device("cuda" if device.startswith("cuda") else "cpu")
        self.model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
        self.model.to(self.dev)
        self.tok = AutoTokenizer.from_pretrained(folder)

    @classmethod
    def load(cls, folder: Path, device: str) -> HuggingFace | None:
        try:
            return cls(folder, device)
        except ImportError:
            log.warning("transformers is not installed: no Hugging Face figures")
            return None

    def forward_ms(self, text: str) -> float:
        torch = self.torch
        with torch.inference_mode():
            ids = self.tok(text, return_tensors="pt")["input_ids"].to(self.dev)
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.model(ids, output_attentions=True, output_hidden_states=True)
            if self.dev.type == "cuda":
                torch.cuda.synchronize()
            return 1000 * (time.perf_counter() - t0)


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# In the page: note the time now (the text is typed next) and the time at which a trace newer
# than the n-th is drawn in every view with nothing pending.
WATCH_DRAWN = """(n) => {
  const root = document.documentElement;
  window.__attnvizTypedAt = performance.now();
  window.__attnvizDrawnAt = undefined;
  const seen = new MutationObserver(() => {
    if (+(root.dataset.traces || 0) > n && root.dataset.pending === "0") {
      window.__attnvizDrawnAt = performance.now();
      seen.disconnect();
    }
  });
  seen.observe(root, { attributes: true });
}"""


TRACES_DRAWN = (
    "n => +(document.documentElement.dataset.traces || 0) > n"
    " && document.documentElement.dataset.pending === '0'"
)


def traces_drawn(page) -> int:
    """How many traces the page has drawn in every view."""
    return int(page.evaluate("+(document.documentElement.dataset.traces || 0)"))


def open_sentence(page, port: int, model: str | None = None) -> None:
    """The page of the server at ``port`` in sentence mode, on ``model`` (else the page's
    default), its first trace drawn."""
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_function(TRACES_DRAWN, arg=0)
    before = traces_drawn(page)
    page.click("#mode-sentence")
    page.wait_for_function(TRACES_DRAWN, arg=before)
    if model is not None and page.locator("#s-model").input_value() != model:
        before = traces_drawn(page)
        page.select_option("#s-model", model)
        page.wait_for_function(TRACES_DRAWN, arg=before)


def typed_sentence(b, port: int, model: str, text: str):
    """A new 1280 x 800 page of browser ``b`` in sentence mode on ``model``, ``text`` typed and
    its trace drawn (a bench's waits are long: five minutes)."""
    page = b.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(300_000)
    open_sentence(page, port, model)
    before = traces_drawn(page)
    page.fill("#s-text", text)
    page.wait_for_function(TRACES_DRAWN, arg=before)
    return page


def browser(
    port: int, texts: dict[int, list[str]], chromium: str, model: str | None = None
) -> dict[str, float]:
    """Headless Chromium: seconds from typing a text to every view drawn (the page's 150 ms
    debounce included; the second of two texts of each length, the first warms up), and from
    clicking another head to its views redrawn; with ``model``, that model (else the page's
    default). While a long text is drawn, the page is asked a trivial question every 100 ms:
    the slowest answer is how long the page was unresponsive at worst."""
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    drawn = (
        "n => +(document.documentElement.dataset.{0} || 0) > n"
        " && document.documentElement.dataset.pending === '0'"
    )
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        page = b.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(120_000)
        open_sentence(page, port, model)
        count = lambda key: int(page.evaluate(f"+(document.documentElement.dataset.{key} || 0)"))  # noqa: E731
        layers = int(
            page.evaluate("document.getElementById('mv-grid').querySelectorAll('.mv-row').length")
        )
        heads = int(
            page.evaluate("document.getElementById('mv-grid').querySelectorAll('.mv-col').length")
        )
        done = drawn.format("traces").replace("n =>", "(n) =>")
        for n, pair in texts.items():
            for text in pair:  # the second is timed: the first warms up
                before = count("traces")
                # The page's own clock marks the moment every view is drawn (a mutation
                # observer on the flags the page sets), so the 100 ms questions below do not
                # round the figure up.
                page.evaluate(WATCH_DRAWN, before)
                t0 = time.perf_counter()
                page.fill("#s-text", text)
                worst = 0.0
                while True:
                    t1 = time.perf_counter()
                    finished = page.evaluate(done, before)
                    worst = max(worst, time.perf_counter() - t1)
                    if finished or time.perf_counter() - t0 > 120:
                        break
                    page.wait_for_timeout(100)
                seconds = time.perf_counter() - t0
                if finished:
                    ms = page.evaluate("window.__attnvizDrawnAt - window.__attnvizTypedAt")
                    seconds = ms / 1000
            out[f"typing_to_drawn_{n}_s"] = round(seconds, 2)
            out[f"page_unresponsive_{n}_s"] = round(worst, 2)
            cells = [(min(1, layers - 1), min(3, heads - 1)), (layers - 1, heads - 1)]
            times = []
            for layer, head in cells:
                before = count("views")
                t0 = time.perf_counter()
                page.click(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
                page.wait_for_function(drawn.format("views"), arg=before)
                times.append(time.perf_counter() - t0)
            out[f"switch_head_{n}_ms"] = round(1000 * statistics.median(times))
        b.close()
    return out


def status_bytes(pid: int, key: str) -> int:
    """A memory figure of /proc/PID/status (VmRSS, VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class HealthProbe:
    """Asks /healthz every 100 ms on a thread of its own, for the length of a ``with``: the
    slowest answer and how many were not a 200."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.worst = 0.0
        self.failures = 0
        self.asked = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                status, _, _ = request(self.port, "GET", "/healthz")
            except OSError:
                status = 0
            self.worst = max(self.worst, time.perf_counter() - t0)
            self.asked += 1
            self.failures += status != 200
            self._stop.wait(0.1)

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        self._thread.join()
