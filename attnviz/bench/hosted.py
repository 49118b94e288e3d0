"""``attnviz bench --hosted``: load as a hosted demo meets it, on a server on loopback: many
clients at once, each typing new texts (short ones, and every fourth client 128-token ones),
each first request followed by one part of the same trace, as the page does; every eighth
client exports instead (the whole trace of its text as JSON, the largest response there is),
or, in the JSON mix, every fourth exports the whole JSON trace of a 128-token text. Used by
``attnviz bench --hosted`` for figures and by the test suite (bounded in clients and seconds)
for what must hold: every answer a 200 or a 503 with Retry-After, no failures, resident memory
flat after warm-up.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path

from attnviz.bench import classroom
from attnviz.bench.harness import (
    FIRST,
    HuggingFace,
    Server,
    cookie_header,
    keep_cookies,
    request,
    text_of,
)
from attnviz.wire.constants import COMPACT_MEDIA_TYPE

CLASS_S = 120.0  # the class's length: its learners stop starting runs then, its typists typing
# The part the page asks for right after the first response: the chosen head, exact.
PART = {"fields": "view", "layer": 0, "head": 0, "hide_special": "false", "merge_words": "false"}


def rss_mb(pid: int) -> float:
    """Resident memory of a process (Linux), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class LoadReport:
    clients: int
    seconds: float
    statuses: dict[int, int] = field(default_factory=dict)
    busy_without_retry_after: int = 0
    failures: list[str] = field(default_factory=list)  # no answer: refused, reset, timed out
    reconnects: int = 0  # a kept-alive connection closed while idle, opened again
    ok_p50_ms: float = 0.0
    ok_p99_ms: float = 0.0
    ok_max_ms: float = 0.0
    rss_mb: list[float] = field(default_factory=list)  # one sample a second
    json_ok: int = 0  # whole JSON traces answered (200)
    json_p50_ms: float = 0.0

    @property
    def answered(self) -> int:
        return sum(self.statuses.values())


class Texts:
    """New texts for every request (so that each first request is a forward): short ones, and
    128-token ones; thread-safe."""

    def __init__(self, tokenizer, long_tokens: int = 128) -> None:
        self.tokenizer = tokenizer
        self.long_tokens = long_tokens
        self._count = itertools.count()
        self._lock = threading.Lock()

    def next(self, long: bool) -> str:
        with self._lock:
            k = next(self._count)
        if long:
            return f"{k} " + text_of(self.tokenizer, self.long_tokens - 3, start=k % 50)
        return f"{k} I sat on the river bank"


def lone_ms(port: int, model: str, texts: Texts, repeat: int = 5) -> float:
    """The median time of a lone first request of a long text, after two to warm up."""
    times = []
    for i in range(repeat + 2):
        body = {"model": model, "text": texts.next(long=True)}
        t0 = time.perf_counter()
        status, _, raw = request(port, "POST", "/api/trace", body, FIRST, compact=True)
        if status != 200:
            raise RuntimeError(f"a lone request got {status}: {raw[:200]!r}")
        if i >= 2:
            times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


ENCODINGS = {"identity": "identity", "zstd": "zstd", "gzip": "gzip"}


def _arrays(value):
    """``value`` (parsed JSON) with every list of numbers (nested; null for a number JSON cannot
    spell) as the float32 numpy array orjson would write it from (a model's arrays are
    float32); lists of integers, of strings, and single numbers as they are."""
    import numpy as np

    if isinstance(value, dict):
        return {k: _arrays(v) for k, v in value.items()}
    if not isinstance(value, list) or len(value) < 2:
        return value
    try:
        wide = np.array(value, dtype=np.float64)  # null -> nan, written back as null
    except (TypeError, ValueError):  # ragged, or not numbers
        return [_arrays(v) for v in value]
    kind = np.asarray(value).dtype.kind
    if kind in "iub" or (kind == "O" and np.array_equal(wide, np.trunc(wide), equal_nan=True)):
        return value  # integers (and nulls), written as they are
    return wide.astype(np.float32)


def json_floor(raw: bytes, repeat: int = 3) -> dict[str, float | bool]:
    """The floor of a whole JSON trace beside the forward, from the trace itself: orjson writing
    the very arrays of ``raw`` (the same shapes, the same numbers, from numpy arrays as the
    server writes them), the median of ``repeat``; and compressing that text as the server does
    (zstd -1, gzip -1). ``same``: orjson wrote ``raw`` byte for byte."""
    import zlib

    import orjson
    import zstandard

    body = _arrays(orjson.loads(raw))
    times: dict[str, list[float]] = {"orjson": [], "zstd": [], "gzip": []}
    text = b""
    for _ in range(repeat):
        t0 = time.perf_counter()
        text = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        times["orjson"].append(1000 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        zstandard.ZstdCompressor(level=1).compress(text)
        times["zstd"].append(1000 * (time.perf_counter() - t0))
        t0 = time.perf_counter()
        z = zlib.compressobj(1, zlib.DEFLATED, 31)
        z.compress(text) + z.flush()
        times["gzip"].append(1000 * (time.perf_counter() - t0))
    out: dict[str, float | bool] = {f"{k}_ms": statistics.median(v) for k, v in times.items()}
    out["same"] = text == raw
    return out


def json_trace_ms(
    port: int, model: str, texts: Texts, hf=None, repeat: int = 5
) -> dict[str, float | bool | None]:
    """The median time of a whole JSON trace of a new 128-token text (a forward, then every
    array as JSON) in each Content-Encoding, and of the Hugging Face forward of the same texts
    (``hf``: ``harness.HuggingFace``, or None), each taken just before; two rounds warm up.
    Beside them, measured in the same rounds, the floor (``json_floor``): the forward plus
    orjson writing the same arrays (plus compressing that text as the server does, for zstd and
    gzip), and each figure as a multiple of its floor; the load average meanwhile."""
    times: dict[str, list[float]] = {name: [] for name in ENCODINGS}
    floors: list[float] = []
    writes: dict[str, list[float]] = {"orjson": [], "zstd": [], "gzip": []}
    same = True
    size: dict[str, int] = {}
    load = [os.getloadavg()[0]]
    for i in range(repeat + 2):
        for name, accept in ENCODINGS.items():
            text = texts.next(long=True)
            floor = hf.forward_ms(text) if hf is not None else None
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            headers = {**JSON_HEADERS, "Accept-Encoding": accept}
            t0 = time.perf_counter()
            conn.request("POST", "/api/trace", body=_json({"model": model, "text": text}),
                         headers=headers)  # fmt: skip
            response = conn.getresponse()
            raw = response.read()
            took = 1000 * (time.perf_counter() - t0)
            conn.close()
            if response.status != 200:
                raise RuntimeError(f"a JSON trace got {response.status}: {raw[:200]!r}")
            if i >= 2:
                times[name].append(took)
                size[name] = len(raw)
                if floor is not None:
                    floors.append(floor)
                if name == "identity":
                    written = json_floor(raw)
                    same = same and bool(written["same"])
                    for k in writes:
                        writes[k].append(float(written[f"{k}_ms"]))
    load.append(os.getloadavg()[0])
    forward = round(statistics.median(floors), 1) if floors else None
    out: dict[str, float | bool | None] = {"forward_ms": forward, "same_text": same}
    out["load_avg"] = [round(x, 2) for x in load]  # type: ignore[assignment]
    for k, v in writes.items():
        out[f"{k}_write_ms" if k == "orjson" else f"{k}_compress_ms"] = round(
            statistics.median(v), 1
        )
    for name in ENCODINGS:
        out[f"{name}_ms"] = round(statistics.median(times[name]), 1)
        out[f"{name}_mb"] = round(size[name] / 1e6, 1)
        if forward is not None:
            floor = forward + statistics.median(writes["orjson"])
            if name != "identity":
                floor += statistics.median(writes[name])
            out[f"{name}_floor_ms"] = round(floor, 1)
            out[f"{name}_ratio"] = round(statistics.median(times[name]) / floor, 2)
    return out


def server_load(port: int) -> dict:
    """The ``load`` of /healthz: running, waiting, refused, cache_mb, cache_max_mb."""
    status, _, raw = request(port, "GET", "/healthz")
    if status != 200:
        raise RuntimeError(f"/healthz answered {status}")
    return json.loads(raw)["load"]


def warm_up(
    port: int, model: str, texts: Texts, clients: int, most_s: float, round_s: float = 5.0
) -> float:
    """Load until the trace cache is 90% full (its bound reached: what comes after is steady
    state), in rounds of ``round_s``, ``most_s`` seconds at most; returns the seconds it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < most_s:
        state = server_load(port)
        if state["cache_mb"] >= 0.9 * state["cache_max_mb"]:
            break
        load(port, model, texts, clients, round_s)
    return time.monotonic() - t0


def load(
    port: int,
    model: str,
    texts: Texts,
    clients: int,
    seconds: float,
    pid: int | None = None,
    honour_retry_after: bool = True,
    timeout_s: float = 60.0,
    exports: bool = True,
    json_every: int = 0,
    visitors: bool = False,
) -> LoadReport:
    """``clients`` clients for ``seconds``; each a keep-alive connection that asks for a new
    text's first part, then one more part of it. On a 503 a client waits its Retry-After (as the
    page does) unless ``honour_retry_after`` is False (a crowd that never waits). With
    ``visitors``, each client keeps the visitor cookie the server sets on its first answer and
    sends it after, as a browser does (else every request is a new visitor's)."""
    report = LoadReport(clients=clients, seconds=seconds)
    lock = threading.Lock()
    ok_ms: list[float] = []
    json_ms: list[float] = []
    end = time.monotonic() + seconds
    stop_sampling = threading.Event()

    def sample() -> None:
        while pid is not None and not stop_sampling.wait(1.0):
            report.rss_mb.append(round(rss_mb(pid), 1))

    def one(
        conn: http.client.HTTPConnection,
        body: dict,
        params: dict,
        headers: dict = HEADERS,
        jar: dict[str, str] | None = None,
    ) -> int | None:
        url = "/api/trace?" + "&".join(f"{k}={v}" for k, v in params.items())
        sent = {**headers, "Cookie": cookie_header(jar)} if jar else headers
        t0 = time.perf_counter()
        for attempt in (1, 2):
            reused = conn.sock is not None
            try:
                conn.request("POST", url, body=_json(body), headers=sent)
                response = conn.getresponse()
                response.read()
                if jar is not None:
                    keep_cookies(jar, response)
                break
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                # A kept-alive connection the server closed while idle (uvicorn: after 5 s):
                # like a browser, open a new one and send again, once.
                stale = isinstance(exc, (BrokenPipeError, ConnectionResetError,
                                         http.client.RemoteDisconnected))  # fmt: skip
                if attempt == 1 and reused and stale:
                    with lock:
                        report.reconnects += 1
                    continue
                with lock:
                    report.failures.append(f"{type(exc).__name__}: {exc}")
                return None
        took = 1000 * (time.perf_counter() - t0)
        with lock:
            report.statuses[response.status] = report.statuses.get(response.status, 0) + 1
            if response.status == 200:
                ok_ms.append(took)
                if headers is BROWSER_JSON:
                    json_ms.append(took)
            if response.status == 503 and not response.getheader("Retry-After"):
                report.busy_without_retry_after += 1
        if response.status == 503 and honour_retry_after:
            wait = float(response.getheader("Retry-After") or 1)
            time.sleep(max(0.0, min(wait, end - time.monotonic())))
        return response.status

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        long = k % 4 == 0
        exporter = exports and k % 8 == 7
        whole = json_every > 0 and k % json_every == 0  # the whole JSON trace of a long text
        jar: dict[str, str] | None = {} if visitors else None
        while time.monotonic() < end:
            body = {"model": model, "text": texts.next(long or whole)}
            if whole:
                one(conn, body, {}, BROWSER_JSON, jar)
            elif exporter:
                one(conn, body, {}, JSON_HEADERS, jar)
            elif one(conn, body, FIRST, HEADERS, jar) == 200 and time.monotonic() < end:
                one(conn, body, PART, HEADERS, jar)
        conn.close()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    with ThreadPoolExecutor(clients) as pool:
        for f in [pool.submit(client, k) for k in range(clients)]:
            f.result()
    stop_sampling.set()
    sampler.join()
    if ok_ms:
        ok_ms.sort()
        report.ok_p50_ms = round(statistics.median(ok_ms), 1)
        report.ok_p99_ms = round(ok_ms[min(len(ok_ms) - 1, int(0.99 * len(ok_ms)))], 1)
        report.ok_max_ms = round(ok_ms[-1], 1)
    report.json_ok = len(json_ms)
    if json_ms:
        report.json_p50_ms = round(statistics.median(json_ms), 1)
    report.statuses = dict(sorted(Counter(report.statuses).items()))
    return report


HEADERS = {
    "Content-Type": "application/json",
    "Accept": COMPACT_MEDIA_TYPE,
    "Accept-Encoding": "gzip",
}


JSON_HEADERS = {**HEADERS, "Accept": "application/json"}
# As a browser asks (Chromium since 123 and Firefox since 126 take zstd).
BROWSER_JSON = {**JSON_HEADERS, "Accept-Encoding": "gzip, deflate, br, zstd"}


def _json(body: dict) -> bytes:
    return json.dumps(body).encode()


def run(
    clients: int = 64,
    seconds: float = 30.0,
    soak: float = 0.0,
    learners: int = 30,
    device: str = "cpu",
    model: Path | None = None,
) -> dict:
    """A server of its own (default settings but for the ATTNVIZ_* variables of this
    environment, and a data directory of its own, in a temporary folder), a lone request's
    time, a warm-up until the trace cache is full, then ``clients`` clients for ``seconds``.
    With ``soak`` (seconds): 16 clients for a minute to warm up at that load, then for ``soak``
    more, for resident memory against its value at the end of that minute. Then a class
    (``classroom``): ``learners`` learners starting runs and as many visitors typing for
    CLASS_S, the server killed while a run trains and started again on its data directory (0:
    no class). ``model``: a model folder instead of the default model."""
    from attnviz.pretrained.registry import BUILTIN_NAME, builtin_dir
    from attnviz.pretrained.tokenize import TextTokenizer

    folder = model or builtin_dir()
    if folder is None:
        raise RuntimeError("no model to measure: install the default one or pass --model FOLDER")
    name = folder.name if model else BUILTIN_NAME
    texts = Texts(TextTokenizer.from_file(folder / "tokenizer.json"))
    args = ["--device", device] + (["--model", str(folder)] if model else [])
    settings = {k: v for k, v in os.environ.items() if k.startswith("ATTNVIZ_") or k == "PORT"}
    out: dict = {"model": name, "device": device, "settings": settings}
    hf = HuggingFace.load(folder, device)
    data = tempfile.TemporaryDirectory(prefix="attnviz-bench-data-")
    # The class's learners all come from this machine, each standing for a machine of its own:
    # the per-address cap (ATTNVIZ_TRAIN_PER_ADDRESS) would otherwise turn most of them away.
    per_address = os.environ.get("ATTNVIZ_TRAIN_PER_ADDRESS", "1000")
    env = {"ATTNVIZ_DATA_DIR": data.name, "ATTNVIZ_TRAIN_PER_ADDRESS": per_address}
    with data, Server(args, env=env) as server:
        pid = server.proc.pid
        out["lone_ms"] = round(lone_ms(server.port, name, texts), 1)
        out["json_trace"] = json_trace_ms(server.port, name, texts, hf)
        out["cache_full_s"] = round(warm_up(server.port, name, texts, 16, 300), 1)
        out["crowd"] = load(server.port, name, texts, clients, seconds, pid, exports=False)
        out["json_mix_rss_before_mb"] = round(rss_mb(pid), 1)
        out["json_mix"] = load(server.port, name, texts, clients, seconds, pid, exports=False,
                               json_every=4)  # fmt: skip
        if soak > 0:
            load(server.port, name, texts, 16, 60.0)
            out["rss_after_warm_up_mb"] = round(rss_mb(pid), 1)
            out["soak"] = load(server.port, name, texts, 16, soak, pid)
        if learners > 0:

            def typing(s: float) -> LoadReport:
                return load(server.port, name, texts, learners, s, pid, exports=False,
                            visitors=True)  # fmt: skip

            out["class"], crowd = classroom.lesson(server, typing, learners, seconds=CLASS_S,
                                                   lone_ms=out["lone_ms"])  # fmt: skip
            out["class_restart"] = classroom.restart(args, env, crowd)
    return out


def json_trace_line(j: dict) -> str:
    """The whole JSON trace's figures beside their floor, as a sentence."""
    forward = j["forward_ms"]
    if forward is None:
        cells = [f"{enc} {j[f'{enc}_ms']:.0f} ms ({j[f'{enc}_mb']:.1f} MB)" for enc in ENCODINGS]
        return "A whole JSON trace of a new 128-token text: " + ", ".join(cells) + "."
    cells = []
    for enc in ENCODINGS:
        extra = (
            "" if enc == "identity" else f" with {enc} -1 of it, {j[f'{enc}_compress_ms']:.0f} ms"
        )
        cells.append(
            f"{enc} {j[f'{enc}_ms']:.0f} ms ({j[f'{enc}_mb']:.1f} MB; floor "
            f"{j[f'{enc}_floor_ms']:.0f} ms{extra}: {j[f'{enc}_ratio']:.2f}x)"
        )
    same = "" if j["same_text"] else " (NOT byte for byte the server's text)"
    load = " to ".join(f"{x:.1f}" for x in j.get("load_avg", []))
    return (
        f"A whole JSON trace of a new 128-token text, beside its floor (the Hugging Face forward "
        f"{forward:.0f} ms + orjson writing the same arrays from numpy, "
        f"{j['orjson_write_ms']:.0f} ms{same}; load average {load}): " + ", ".join(cells) + "."
    )


def table(out: dict) -> str:
    crowd: LoadReport = out["crowd"]
    ok = crowd.statuses.get(200, 0)
    busy = crowd.statuses.get(503, 0)
    other = {s: n for s, n in crowd.statuses.items() if s not in (200, 503)}
    settings = ", ".join(f"{k}={v}" for k, v in out["settings"].items()) or "default settings"
    lines = [
        f"attnviz bench --hosted: {out['model']} on {out['device']}, {settings}",
        "",
        f"A lone first request of a 128-token text: {out['lone_ms']:.0f} ms.",
        f"{crowd.clients} clients for {crowd.seconds:.0f} s (every fourth with 128-token texts, "
        f"the rest six words; each first request then one part; a 503 waited out): "
        f"{crowd.answered} answers, {ok} x 200 ({ok / crowd.seconds:.0f}/s), "
        f"{busy} x 503 ({crowd.busy_without_retry_after} without Retry-After), other "
        f"{other or 'none'}, {len(crowd.failures)} failed ({crowd.reconnects} idle connections "
        "opened again).",
        f"The 200s: p50 {crowd.ok_p50_ms:.0f} ms, p99 {crowd.ok_p99_ms:.0f} ms "
        f"({crowd.ok_p99_ms / out['lone_ms']:.1f}x the lone request), "
        f"max {crowd.ok_max_ms:.0f} ms. Resident memory {min(crowd.rss_mb, default=0):.0f} to "
        f"{max(crowd.rss_mb, default=0):.0f} MB.",
    ]
    lines.append(json_trace_line(out["json_trace"]))
    mix: LoadReport = out["json_mix"]
    before = out["json_mix_rss_before_mb"]
    top = max(mix.rss_mb, default=before)
    last = mix.rss_mb[-1] if mix.rss_mb else before
    lines.append(
        f"JSON mix, {mix.clients} clients for {mix.seconds:.0f} s, every fourth exporting the "
        f"whole JSON trace of new 128-token texts (Accept-Encoding as a browser's), the rest "
        f"as above: {mix.statuses.get(200, 0)} x 200 ({mix.statuses.get(200, 0) / mix.seconds:.0f}"
        f"/s), {mix.json_ok} of them JSON traces ({mix.json_ok / mix.seconds:.1f}/s, p50 "
        f"{mix.json_p50_ms:.0f} ms), {mix.statuses.get(503, 0)} x 503, "
        f"{len(mix.failures)} failed; resident memory {before:.0f} MB before, at most "
        f"{top:.0f} MB ({100 * (top / before - 1):+.1f}%), {last:.0f} MB at the end."
    )
    if "soak" in out:
        soak: LoadReport = out["soak"]
        warm = out["rss_after_warm_up_mb"]
        top, low = max(soak.rss_mb), min(soak.rss_mb)
        lines.append(
            f"Soak, 16 clients for {soak.seconds:.0f} s (as above, and every eighth exporting "
            f"its texts' whole traces as JSON) after a minute's warm-up at that load: "
            f"{soak.answered} answers, {len(soak.failures)} failed; resident memory {warm:.0f} MB "
            f"after warm-up, then {low:.0f} to {top:.0f} MB ({100 * (top / warm - 1):+.1f}% at "
            f"most), {soak.rss_mb[-1]:.0f} MB at the end."
        )
    if "class" in out:
        lines += classroom.table_lines(out["class"], out.get("class_restart"))
    return "\n".join(lines)


def as_json(out: dict) -> str:
    plain = {k: asdict(v) if is_dataclass(v) and not isinstance(v, type) else v
             for k, v in out.items()}  # fmt: skip
    return json.dumps(plain, separators=(",", ":"))
