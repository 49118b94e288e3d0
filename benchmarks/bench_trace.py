"""Time POST /api/trace end to end (validation, engine, JSON) for growing inputs; prints tables:
toy tables up to the caps, then the default model (all-MiniLM-L6-v2) on texts up to 128 tokens.

.venv/bin/python benchmarks/bench_trace.py
"""

from __future__ import annotations

import gzip
import statistics
import time

import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings

CASES = [
    # (tokens, d, layers, heads)
    (5, 3, 1, 1),
    (16, 16, 4, 4),
    (32, 32, 6, 8),
    (64, 64, 12, 16),
]
FULL = {"projections": "random", "mask": "causal", "ffn": True, "residual": True, "norm": "pre"}


def main(repeats: int = 5) -> None:
    client = TestClient(create_app(Settings()))
    g = torch.Generator().manual_seed(0)
    print(f"device: {client.get('/healthz').json()['device']}")
    print(f"{'tokens':>6} {'d':>3} {'layers':>6} {'heads':>5} {'median ms':>10} {'MB JSON':>8}")
    for n, d, layers, heads in CASES:
        body = {
            "tokens": [f"t{i}" for i in range(n)],
            "embeddings": torch.randn(n, d, generator=g, dtype=torch.float64).tolist(),
            "config": {"layers": layers, "heads": heads, **FULL},
        }
        times, size = [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = client.post("/api/trace", json=body)
            times.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            size = len(r.content)
        ms = statistics.median(times) * 1000
        print(f"{n:>6} {d:>3} {layers:>6} {heads:>5} {ms:>10.1f} {size / 1e6:>8.2f}")

    models = client.get("/api/models").json()
    if models["default"] is None:
        print("no pretrained model installed; skipping the text traces")
        return
    name = models["default"]
    print(f"\n{name}: {'tokens':>6} {'median ms':>10} {'MB JSON':>8} {'MB gzip':>8}")
    for words in (6, 30, 62, 126):
        text = " ".join(["bank"] * words)  # one token a word, plus [CLS] and [SEP]
        times, size, gz = [], 0, 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = client.post("/api/trace", json={"model": name, "text": text})
            times.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
            size = len(r.content)
        gz = len(gzip.compress(r.content, compresslevel=1))
        ms = statistics.median(times) * 1000
        print(
            f"{'':>{len(name)}}  {r.json()['n']:>6} {ms:>10.1f} {size / 1e6:>8.2f} {gz / 1e6:>8.2f}"
        )


if __name__ == "__main__":
    main()
