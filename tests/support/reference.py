"""An independent, plain-Python transformer written from the spec text, as the tests' oracle.

No torch: lists of floats and loops, one line of the spec per step, so that a bug in the engine's
reshapes, head slicing, masking or sublayer order shows up as a mismatch.
"""

from __future__ import annotations

import math

Mat = list[list[float]]


def matmul(a: Mat, b: Mat) -> Mat:
    return [
        [sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def transpose(a: Mat) -> Mat:
    return [list(r) for r in zip(*a, strict=True)]


def add(a: Mat, b: Mat) -> Mat:
    return [[x + y for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]


def softmax_row(row: list[float]) -> list[float]:
    m = max(row)
    e = [math.exp(v - m) if v != -math.inf else 0.0 for v in row]
    s = sum(e)
    return [v / s for v in e]


def layer_norm(x: Mat, eps: float = 1e-5) -> Mat:
    out = []
    for row in x:
        mu = sum(row) / len(row)
        var = sum((v - mu) ** 2 for v in row) / len(row)
        out.append([(v - mu) / math.sqrt(var + eps) for v in row])
    return out


def gelu(v: float) -> float:
    return 0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0)))


def sinusoidal(n: int, d: int) -> Mat:
    pe = [[0.0] * d for _ in range(n)]
    for pos in range(n):
        for j in range(d):
            i2 = j - (j % 2)  # 2i
            angle = pos / 10000 ** (i2 / d)
            pe[pos][j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe


def rope(x: Mat, base: float = 10000.0) -> Mat:
    """Rotate pairs (2i, 2i+1) of each row (one head) by pos / base^(2i/hs); odd tail untouched."""
    hs = len(x[0])
    out = [list(r) for r in x]
    for pos, row in enumerate(x):
        for i in range(hs // 2):
            theta = pos / base ** (2 * i / hs)
            a, b = row[2 * i], row[2 * i + 1]
            out[pos][2 * i] = a * math.cos(theta) - b * math.sin(theta)
            out[pos][2 * i + 1] = a * math.sin(theta) + b * math.cos(theta)
    return out


def forward(
    X: Mat,
    weights: dict[str, Mat],
    *,
    layers: int = 1,
    heads: int = 1,
    scale: bool = True,
    causal: bool = False,
    positional: str = "none",
    residual: bool = False,
    norm: str = "none",
    ffn: bool = False,
) -> dict:
    """Returns {"hidden": [L+1][n][d], "pattern": [L][h][n][n], "scores": [L][h][n][n]}."""
    n, d = len(X), len(X[0])
    hs = d // heads
    x = [list(r) for r in X]
    if positional == "sinusoidal":
        x = add(x, sinusoidal(n, d))
    elif positional == "learned":
        x = add(x, weights["W_pos"][:n])
    hidden, patterns, all_scores = [x], [], []
    for layer in range(layers):
        w = {k.split(".")[-1]: v for k, v in weights.items() if k.startswith(f"blocks.{layer}.")}

        def attention(xn: Mat, w: dict = w) -> Mat:
            Q, K, V = matmul(xn, w["W_Q"]), matmul(xn, w["W_K"]), matmul(xn, w["W_V"])
            head_outs, lp, ls = [], [], []
            for h in range(heads):
                cols = range(h * hs, (h + 1) * hs)
                q = [[row[c] for c in cols] for row in Q]
                k = [[row[c] for c in cols] for row in K]
                v = [[row[c] for c in cols] for row in V]
                if positional == "rope":
                    q, k = rope(q), rope(k)
                s = matmul(q, transpose(k))
                if scale:
                    s = [[e / math.sqrt(hs) for e in r] for r in s]
                if causal:
                    s = [
                        [e if j <= i else -math.inf for j, e in enumerate(r)]
                        for i, r in enumerate(s)
                    ]
                p = [softmax_row(r) for r in s]
                head_outs.append(matmul(p, v))
                lp.append(p)
                ls.append(s)
            patterns.append(lp)
            all_scores.append(ls)
            concat = [sum((ho[i] for ho in head_outs), []) for i in range(n)]
            return matmul(concat, w["W_O"])

        def mlp(xn: Mat, w: dict = w) -> Mat:
            h = [[gelu(v) for v in r] for r in matmul(xn, w["W_in"])]
            return matmul(h, w["W_out"])

        for f, on in ((attention, True), (mlp, ffn)):
            if not on:
                continue
            xn = layer_norm(x) if norm == "pre" else x
            y = f(xn)
            x = add(x, y) if residual else y
            if norm == "post":
                x = layer_norm(x)
        hidden.append(x)
    return {"hidden": hidden, "pattern": patterns, "scores": all_scores}
