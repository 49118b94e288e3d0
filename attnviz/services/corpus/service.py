"""The corpus view (AttentionViz's idea, Yeh et al. 2023, on attnviz's engine): one head's queries
and keys of every token of a set of texts projected together into 2-D, the user's own sentence
placed into the set's map; every head clustered by the similarity of its patterns on the set.

A set (``sets.py``) runs once (``run.py``: in batches on the engine, else one text at
a time through ``ServedModel.trace``), under the model's lock, on the compute thread. What is
kept of it (``KeptSet``): every layer's queries and keys of every head (those the scores use:
after RoPE and q/k norms), or the asked layer's alone when all of them pass ``KEEP_SET_BYTES``
(another layer is then run again), and the Gram matrix of the heads' patterns (sum over texts of
P P^T, P each head's T x T weights flattened), from which the clustering comes, once per set.
Sets are kept by model object, source, upload (its sha256), seed and budget, up to
``CACHE_BYTES`` together.

The user's text is not part of the set: it runs on its own and is placed with the map fitted on
the set (the normalisation's shift and scale, the projection's mean and axes), so that editing
it never moves the set's points.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch

from attnviz.errors import TraceError
from attnviz.pretrained.registry import ServedModel
from attnviz.schemas.corpus import (
    CorpusPoints,
    CorpusRequest,
    CorpusResponse,
    CorpusSeconds,
    CorpusText,
    CorpusTransform,
    HeadClusters,
)
from attnviz.services.corpus.numbers import (
    NOTE,
    Fit,
    as_float32,
    average_linkage,
    centered,
    cosine,
    cut,
    fit_pca,
    leaf_order,
    normalisation,
    significant,
)
from attnviz.services.corpus.run import QK, run_texts
from attnviz.services.corpus.run import user_qk as user_qk_of
from attnviz.services.corpus.sets import SetText, build_set, user_text

KEEP_SET_BYTES = 512 * 2**20  # every layer's q and k of a set kept up to this, else one layer
CACHE_BYTES = 1024 * 2**20  # all sets kept together (the newest always)
CACHE_SETS = 8
FITS_KEPT = 32  # maps (layer, head, projection) kept per set
USERS_KEPT = 8  # users' texts (every layer's q and k) kept per set
UMAP_FIT_POINTS = 4_000  # UMAP is fitted on at most this many of the set's points (seeded)
MEASURE = (
    "cosine similarity of the heads' attention weights, less their mean over heads (each head's "
    "T x T weights of every text of the set, flattened and concatenated; what every head shares, "
    "the weight on [CLS] or [SEP], taken out), from -1 to 1"
)


def umap_available() -> bool:
    """Whether the optional umap-learn is installed (found, never imported here)."""
    return importlib.util.find_spec("umap") is not None


def projections() -> list[str]:
    return ["pca", "umap"] if umap_available() else ["pca"]


@dataclass
class Clustering:
    similarity: np.ndarray  # (n, n) cosine
    merges: np.ndarray  # (n - 1, 4)
    order: list[int]


@dataclass
class KeptSet:
    texts: list[SetText]
    dropped: int
    layers: int
    heads: int
    qk: dict[int, QK]  # layer -> its queries and keys, every layer when they fit
    no_qk: str | None  # why the model gives no queries or keys (a bridged ALiBi model)
    gram: torch.Tensor  # (L*nh, L*nh) float64
    clustering: Clustering
    run_s: float
    cluster_s: float
    fits: OrderedDict[tuple, tuple[Fit, tuple[object, np.ndarray] | None]] = field(
        default_factory=OrderedDict
    )
    users: OrderedDict[tuple[int, ...], list[QK]] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def nbytes(self) -> int:
        kept = [t for pair in self.qk.values() for t in pair] + [self.gram]
        kept += [t for layers in self.users.values() for pair in layers for t in pair]
        return sum(t.numel() * t.element_size() for t in kept)


def cluster(gram: torch.Tensor) -> Clustering:
    sim = cosine(centered(gram))
    merges = average_linkage(1.0 - sim)
    return Clustering(sim, merges, leaf_order(merges, sim.shape[0]))


def compute_set(
    m: ServedModel, source: str, upload: str | None, seed: int, budget: int, cap: int, layer: int
) -> KeptSet:
    """The set run and clustered; every layer's q and k kept when they fit KEEP_SET_BYTES."""
    began = time.perf_counter()
    ts = build_set(m, source, upload, seed, budget, cap)
    cfg = m.cfg
    n = ts.tokens
    every = 2 * cfg.n_layers * n * cfg.n_heads * cfg.d_head * 4 <= KEEP_SET_BYTES
    layers = list(range(cfg.n_layers)) if every else [layer]
    qk, no_qk, gram = run_texts(m, ts.texts, layers, gram=True)
    assert gram is not None
    run_s = time.perf_counter() - began
    began = time.perf_counter()
    clustering = cluster(gram)
    return KeptSet(ts.texts, ts.dropped, cfg.n_layers, cfg.n_heads, qk, no_qk, gram,
                   clustering, run_s, time.perf_counter() - began)  # fmt: skip


SetKey = tuple[str, str, str, int, int, int]


def set_key(m: ServedModel, req: CorpusRequest, cap: int) -> SetKey:
    digest = hashlib.sha256(req.upload.encode()).hexdigest() if req.upload is not None else ""
    seed = req.seed if req.source == "docs" else 0  # only the docs' order reads it
    return (m.name, req.source, digest, seed, req.max_tokens, cap)


class CorpusCache:
    """Kept sets by key, for the very model object (a run's model that replaces another of its
    name is run afresh), the least recently used dropped past ``max_bytes`` or ``size``."""

    def __init__(self, max_bytes: int = CACHE_BYTES, size: int = CACHE_SETS) -> None:
        self.max_bytes, self.size = max_bytes, size
        self._items: OrderedDict[SetKey, tuple[weakref.ref, KeptSet]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, m: ServedModel, key: SetKey) -> KeptSet | None:
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0]() is not m:
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, m: ServedModel, key: SetKey, kept: KeptSet) -> None:
        with self._lock:
            self._items[key] = (weakref.ref(m), kept)
            self._items.move_to_end(key)
            while len(self._items) > 1 and (
                len(self._items) > self.size
                or sum(s.nbytes() for _, s in self._items.values()) > self.max_bytes
            ):
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def cheap(self, m: ServedModel, req: CorpusRequest, cap: int) -> bool:
        """Whether the request's set is kept with its layer (no run of the set needed), and a
        UMAP map, when asked for, with it (a fit takes seconds)."""
        kept = self.get(m, set_key(m, req, cap))
        if kept is None or kept.no_qk is not None:
            return kept is not None
        with kept.lock:
            umap_kept = fit_key(req) in kept.fits
        return req.layer in kept.qk and (req.projection == "pca" or umap_kept)

    def corpus(self, m: ServedModel, req: CorpusRequest, cap: int) -> CorpusResponse:
        """The response to ``req`` (call on the compute thread)."""
        return respond(self, m, req, cap)


def check(m: ServedModel, req: CorpusRequest) -> None:
    """The layer, head and projection against the model and this server (TraceError)."""
    cfg = m.cfg
    if req.layer >= cfg.n_layers:
        raise TraceError(f"layer: {req.layer} is past the model's {cfg.n_layers} layers "
                         f"(0-{cfg.n_layers - 1})")  # fmt: skip
    if req.head >= cfg.n_heads:
        raise TraceError(f"head: {req.head} is past the model's {cfg.n_heads} heads "
                         f"(0-{cfg.n_heads - 1})")  # fmt: skip
    if req.projection == "umap" and not umap_available():
        raise TraceError(
            "projection: umap needs the optional package umap-learn, which this server lacks "
            "(its host can install it); pca works without it"
        )


@contextmanager
def torch_threads_kept() -> Iterator[None]:
    """Around umap-learn's calls: torch's intra-op thread count as it was before. The first
    numba parallel call launches numba's OpenMP pool, which sets libgomp's thread count to
    NUMBA_NUM_THREADS (every core) in the libgomp torch loaded globally, so that torch's later
    runs (the user's text) would take more threads, and their float sums another order, than the
    same request's first run: points 1 ulp apart, which UMAP's ``transform`` amplifies."""
    n = torch.get_num_threads()
    try:
        yield
    finally:
        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


def fit_umap(qn: torch.Tensor, kn: torch.Tensor, seed: int) -> tuple[object, np.ndarray]:
    """UMAP of the normalised points (2N, hs), fitted with ``random_state=seed`` on all of them
    or a seeded sample of UMAP_FIT_POINTS (the rest placed by ``transform``): the reducer and
    the set's (2N, 2) coordinates."""
    import umap  # optional: checked by umap_available

    x = torch.cat([qn, kn]).numpy().astype(np.float32)
    reducer = umap.UMAP(n_components=2, random_state=seed, n_jobs=1)  # seeded: one thread
    with torch_threads_kept():
        if len(x) <= UMAP_FIT_POINTS:
            return reducer, np.asarray(reducer.fit_transform(x), dtype=np.float64)
        g = torch.Generator().manual_seed(seed)
        pick = torch.randperm(len(x), generator=g)[:UMAP_FIT_POINTS].sort().values.numpy()
        reducer.fit(x[pick])
        return reducer, np.asarray(reducer.transform(x), dtype=np.float64)


def layer_qk(m: ServedModel, kept: KeptSet, layer: int) -> QK:
    """The set's queries and keys of ``layer``: kept, or the set run again for it (then kept in
    place of the other layer)."""
    with kept.lock:
        got = kept.qk.get(layer)
    if got is not None:
        return got
    qk, _, _ = run_texts(m, kept.texts, [layer], gram=False)
    with kept.lock:
        kept.qk = qk
        kept.fits.clear()
    return qk[layer]


def user_layers(m: ServedModel, kept: KeptSet, ids: list[int]) -> list[QK]:
    """The user's text's queries and keys of every layer: run once, kept with the set (the last
    USERS_KEPT texts), so that a change of head or layer does not run it again."""
    key = tuple(ids)
    with kept.lock:
        got = kept.users.get(key)
        if got is not None:
            kept.users.move_to_end(key)
            return got
    got = user_qk_of(m, ids)
    with kept.lock:
        kept.users[key] = got
        while len(kept.users) > USERS_KEPT:
            kept.users.popitem(last=False)
    return got


def respond(cache: CorpusCache, m: ServedModel, req: CorpusRequest, cap: int) -> CorpusResponse:
    check(m, req)
    key = set_key(m, req, cap)
    kept = cache.get(m, key)
    cached = kept is not None
    run_s = cluster_s = 0.0
    if kept is None:
        kept = compute_set(m, req.source, req.upload, req.seed, req.max_tokens, cap, req.layer)
        cache.put(m, key, kept)
        run_s, cluster_s = kept.run_s, kept.cluster_s
    began = time.perf_counter()
    user = user_text(m, req.text, cap) if req.text is not None else None
    texts = ([user] if user else []) + kept.texts
    points = transform = explained = None
    project_s = 0.0
    if kept.no_qk is None:
        q_all, k_all = layer_qk(m, kept, req.layer)
        q, k = q_all[:, req.head], k_all[:, req.head]  # (N, hs)
        user_qk = None
        if user is not None:
            uq, uk = user_layers(m, kept, user.ids)[req.layer]
            user_qk = (uq[:, req.head], uk[:, req.head])
        run_s += time.perf_counter() - began
        began = time.perf_counter()
        fit, set_xy, user_xy = project(kept, req, q, k, user_qk)
        transform = CorpusTransform(key_shift=round(float(fit.shift.norm()), 6),
                                    scale=round(fit.scale, 6), note=NOTE)  # fmt: skip
        if req.projection == "pca":
            explained = (round(fit.explained[0], 4), round(fit.explained[1], 4))
        points = columns(texts, set_xy, user_xy)
        project_s = time.perf_counter() - began
    return CorpusResponse(
        model=m.name, layer=req.layer, head=req.head, source=req.source,
        projection=req.projection, seed=req.seed,
        texts=[CorpusText(text=t.text, tokens=t.labels, user=t.user) for t in texts],
        points=points, unavailable=kept.no_qk, explained=explained, transform=transform,
        tokens=sum(len(t.ids) for t in texts), dropped=kept.dropped, cut=kept.dropped > 0,
        clusters=head_clusters(kept, req.clusters),
        seconds=CorpusSeconds(run=round(run_s, 3), project=round(project_s, 3),
                              cluster=round(cluster_s, 3)),
        cached=cached,
    )  # fmt: skip


def fit_key(req: CorpusRequest) -> tuple[int, int, str, int]:
    return (req.layer, req.head, req.projection, req.seed if req.projection == "umap" else 0)


XY = tuple[np.ndarray, np.ndarray]  # (n, 2) queries' and keys' coordinates


def project(
    kept: KeptSet, req: CorpusRequest, q: torch.Tensor, k: torch.Tensor, user: QK | None
) -> tuple[Fit, XY, XY | None]:
    """The map of (layer, head) fitted on the set (kept per set), the set's and the user's
    coordinates on it."""
    fkey = fit_key(req)
    with kept.lock:
        got = kept.fits.get(fkey)
        if got is not None:
            kept.fits.move_to_end(fkey)
    n = q.shape[0]
    if got is None:
        if req.projection == "pca":
            got = (fit_pca(q, k), None)
        else:
            shift, scale = normalisation(q, k)
            base = Fit(shift, scale, torch.zeros_like(shift),
                       torch.zeros(2, shift.numel(), dtype=torch.float64), (0.0, 0.0))  # fmt: skip
            got = (base, fit_umap(*base.normalise(q, k), req.seed))
        with kept.lock:
            kept.fits[fkey] = got
            while len(kept.fits) > FITS_KEPT:
                kept.fits.popitem(last=False)
    fit, extra = got
    user_xy: XY | None = None
    if extra is None:
        sq, sk = fit.place(q, k)
        set_xy = (sq.numpy(), sk.numpy())
        if user is not None:
            uq, uk = fit.place(*user)
            user_xy = (uq.numpy(), uk.numpy())
    else:
        reducer, coords = extra
        set_xy = (coords[:n], coords[n:])
        if user is not None:
            un = torch.cat(fit.normalise(*user)).numpy().astype(np.float32)
            with torch_threads_kept():
                placed = np.asarray(reducer.transform(un), dtype=np.float64)  # type: ignore[attr-defined]
            user_xy = (placed[: len(un) // 2], placed[len(un) // 2 :])
    return fit, set_xy, user_xy


def columns(texts: list[SetText], set_xy: XY, user_xy: XY | None) -> CorpusPoints:
    """The columnar points: the user's text (when given) first, then the set's texts."""
    qs = [user_xy[0], set_xy[0]] if user_xy is not None else [set_xy[0]]
    ks = [user_xy[1], set_xy[1]] if user_xy is not None else [set_xy[1]]
    qxy, kxy = np.concatenate(qs), np.concatenate(ks)  # (N, 2) each
    which = [i for i, t in enumerate(texts) for _ in t.ids]
    pos = [p for t in texts for p in range(len(t.ids))]
    return CorpusPoints(
        text=which, pos=pos,
        qx=significant(qxy[:, 0]), qy=significant(qxy[:, 1]),
        kx=significant(kxy[:, 0]), ky=significant(kxy[:, 1]),
    )  # fmt: skip


def head_clusters(kept: KeptSet, k: int) -> HeadClusters:
    c = kept.clustering
    n = kept.layers * kept.heads
    sim = c.similarity[np.ix_(c.order, c.order)]
    return HeadClusters(
        layers=kept.layers,
        heads=kept.heads,
        measure=MEASURE,
        order=c.order,
        similarity=as_float32(sim),
        labels=cut(c.merges, n, k, c.order),
        merges=[(int(a), int(b), round(float(d), 6), int(s)) for a, b, d, s in c.merges],
    )


CORPORA = CorpusCache()
