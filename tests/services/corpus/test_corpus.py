"""The corpus view's numbers: reproducible for a seed; AttentionViz's normalisation leaves every
softmax of the model unchanged; the PCA is an SVD's up to sign; the user's text is placed with
the set's map and never moves it; average linkage is scipy's; the set's budget adds up."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.cluster.hierarchy import fcluster, leaves_list, linkage
from scipy.spatial.distance import squareform

from attnviz.engine.model import attention_pattern, attention_scores
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import BUILTIN_NAME, ServedModel, load_model
from attnviz.schemas.corpus import CorpusRequest
from attnviz.services.corpus import run as corpus_run
from attnviz.services.corpus.numbers import (
    average_linkage,
    centered,
    cosine,
    cut,
    fit_pca,
    leaf_order,
)
from attnviz.services.corpus.service import CorpusCache, cluster, compute_set, head_clusters
from attnviz.services.corpus.sets import build_set, doc_sentences

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2_dir) -> ServedModel:
    return load_model(tiny_gpt2_dir, CPU)


@pytest.fixture(scope="module")
def minilm(minilm_dir) -> ServedModel:
    m = load_model(minilm_dir, CPU)
    m.name = BUILTIN_NAME
    return m


def ask(m: ServedModel, cap: int | None = None, **fields):
    return CorpusCache().corpus(m, CorpusRequest(**fields), cap or m.cfg.n_ctx)


def test_coordinates_are_reproducible_for_a_seed(gpt2):
    a = ask(gpt2, max_tokens=300, layer=1, head=2, seed=7, text="I sat on the river bank")
    b = ask(gpt2, max_tokens=300, layer=1, head=2, seed=7, text="I sat on the river bank")
    assert not a.cached and not b.cached  # two fresh caches: two computations
    assert a.points == b.points and a.texts == b.texts and a.clusters == b.clusters
    c = ask(gpt2, max_tokens=300, layer=1, head=2, seed=8)
    assert [t.text for t in c.texts] != [t.text for t in a.texts[1:]]  # another draw of docs
    assert a.tokens - len(a.texts[0].tokens) <= 300 and a.dropped > 0 and a.cut


def _own_softmax(m: ServedModel, fit, q, k, ids: list[int], layer: int, head: int):
    qn, kn = fit.normalise(q, k)  # (T, hs) float64
    scores = attention_scores(qn[None], kn[None], m.cfg, layer=layer)[0]
    return attention_pattern(scores, m.cfg)  # (T, T)


@pytest.mark.parametrize("which", ["gpt2", "minilm"])
def test_the_normalisation_leaves_every_softmax_unchanged(which, request):
    """For each text of the set: softmax over keys of q' . k' (q' = q s, k' = (k + c) / s, the
    model's scale and mask) equals the model's own weights of that head (TraceTensors)."""
    m = request.getfixturevalue(which)
    kept = compute_set(m, "docs", None, 3, 200, m.cfg.n_ctx, layer=0)
    layer, head = m.cfg.n_layers - 1, 1
    q_all, k_all = kept.qk[layer][0][:, head], kept.qk[layer][1][:, head]
    fit = fit_pca(q_all, k_all)
    assert fit.shift.norm() > 0 and fit.scale != 1.0  # a real translation and scale
    start = 0
    for t in kept.texts:
        T = len(t.ids)
        q, k = q_all[start : start + T], k_all[start : start + T]
        start += T
        ours = _own_softmax(m, fit, q, k, t.ids, layer, head)
        model = m.trace(t.ids).pattern(layer)[head].double()
        assert (ours - model).abs().max() < 1e-5
    assert start == q_all.shape[0]


def test_the_pca_is_an_svd_up_to_sign(gpt2):
    r = ask(gpt2, max_tokens=250, layer=1, head=0)
    kept = compute_set(gpt2, "docs", None, 0, 250, gpt2.cfg.n_ctx, layer=1)
    q, k = kept.qk[1][0][:, 0], kept.qk[1][1][:, 0]
    fit = fit_pca(q, k)
    x = torch.cat(fit.normalise(q, k)).numpy()  # (2N, hs)
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    ref = xc @ vt[:2].T  # (2N, 2)
    ours = np.concatenate([np.stack([r.points.qx, r.points.qy], 1),
                           np.stack([r.points.kx, r.points.ky], 1)])  # fmt: skip
    for axis in range(2):
        sign = np.sign(
            ref[np.argmax(np.abs(ref[:, axis])), axis]
            * ours[np.argmax(np.abs(ours[:, axis])), axis]
        )
        assert np.allclose(
            ours[:, axis], sign * ref[:, axis], rtol=1e-3, atol=1e-3 * np.abs(ref).max()
        )
    explained = s**2 / (s**2).sum()
    assert r.explained == pytest.approx(tuple(explained[:2]), abs=1e-4)
    # Signs by rule: each axis's largest loading is positive.
    for row in fit.axes:
        assert row[row.abs().argmax()] > 0


def test_the_users_points_are_placed_with_the_sets_map(gpt2):
    cache = CorpusCache()
    cap = gpt2.cfg.n_ctx
    plain = cache.corpus(gpt2, CorpusRequest(max_tokens=200, layer=1, head=3), cap)
    one = cache.corpus(
        gpt2, CorpusRequest(max_tokens=200, layer=1, head=3, text="I sat on the bank"), cap
    )
    two = cache.corpus(
        gpt2, CorpusRequest(max_tokens=200, layer=1, head=3, text="An apple and a banana"), cap
    )
    assert one.cached and two.cached and one.texts[0].user and not one.texts[1].user
    for r in (one, two):
        n = len(r.texts[0].tokens)
        assert r.points.text[:n] == [0] * n and r.points.pos[:n] == list(range(n))
        for name in ("qx", "qy", "kx", "ky"):  # the set's points do not move
            assert getattr(r.points, name)[n:] == getattr(plain.points, name)
        assert r.transform == plain.transform and r.explained == plain.explained
    # The user's points: the set's fit (without the user's text) applied to the user's q and k.
    kept = compute_set(gpt2, "docs", None, 0, 200, cap, layer=1)
    fit = fit_pca(kept.qk[1][0][:, 3], kept.qk[1][1][:, 3])
    ids = gpt2.tokenizer("I sat on the bank").ids
    q, k, _ = gpt2.trace(ids).qkv(1)
    uq, uk = fit.place(q[3], k[3])
    n = len(ids)
    assert np.allclose(one.points.qx[:n], uq[:, 0].numpy(), rtol=1e-3, atol=1e-6)
    assert np.allclose(one.points.ky[:n], uk[:, 1].numpy(), rtol=1e-3, atol=1e-6)


def test_the_heads_similarity_is_sent_unrounded_as_float32(gpt2):
    """Issue 41: the similarity the page reads is each cosine's float32, not rounded to 3
    decimals (which made 0.9996 "1"): the page rounds it as a person reads it."""
    kept = compute_set(gpt2, "docs", None, 0, 200, gpt2.cfg.n_ctx, layer=1)
    sent = head_clusters(kept, 3)
    c = kept.clustering
    want = c.similarity[np.ix_(c.order, c.order)].astype(np.float32)
    got = np.array(sent.similarity)
    assert (got.astype(np.float32) == want).all()  # each the float32 of the cosine
    # Spelled with the float32's shortest digits (as a trace's numbers are), so the JSON says
    # what the float32 is, and not rounded further: most are no multiple of 0.001.
    assert all(repr(v) == str(np.float32(v)) for row in sent.similarity for v in row)
    assert np.mean(np.round(got, 3) != got) > 0.5
    assert np.diag(got).tolist() == [1.0] * len(got)


def test_heads_with_identical_patterns_have_similarity_one_and_share_a_cluster():
    g = torch.Generator().manual_seed(0)
    p = torch.rand(8, 50, generator=g, dtype=torch.float64)
    p[5] = p[2]
    c = cluster(p @ p.T)
    assert c.similarity[2, 5] == pytest.approx(1, abs=1e-12)
    assert tuple(c.merges[0]) == (2, 5, pytest.approx(0, abs=1e-12), 2)
    labels = cut(c.merges, 8, 7, c.order)
    assert labels[2] == labels[5] and len(set(labels)) == 7
    assert [labels[i] for i in c.order] == sorted(labels[i] for i in c.order)  # first appearance


def test_heads_are_compared_once_what_every_head_shares_is_taken_out():
    """The similarity is the cosine of the patterns less their mean over heads, read from the
    Gram matrix alone; a shared column (every head's weight on [CLS]) no longer makes two
    heads alike that differ everywhere else."""
    g = torch.Generator().manual_seed(1)
    p = torch.rand(6, 40, generator=g, dtype=torch.float64)
    p[:, 0] += 50.0  # a sink every head shares
    less = p - p.mean(dim=0)
    assert torch.allclose(centered(p @ p.T), less @ less.T, atol=1e-9)
    want = torch.nn.functional.cosine_similarity(less[:, None], less[None], dim=-1)
    assert np.allclose(cluster(p @ p.T).similarity, want.numpy(), atol=1e-9)
    assert (cosine(p @ p.T) > 0.99).all()  # alike by the shared column alone
    assert cluster(p @ p.T).similarity.min() < 0


@pytest.mark.parametrize("n", [2, 5, 24, 72])
def test_average_linkage_is_scipys(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, 6))
    d = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    ours = average_linkage(d)
    ref = linkage(squareform(d, checks=False), method="average")
    assert np.allclose(ours, ref, rtol=0, atol=1e-12)
    assert leaf_order(ours, n) == leaves_list(ref).tolist()
    for k in range(1, n + 1):
        got = cut(ours, n, k, leaf_order(ours, n))
        want = fcluster(ref, k, "maxclust")
        same = {(a, b) for a in range(n) for b in range(n) if got[a] == got[b]}
        assert same == {(a, b) for a in range(n) for b in range(n) if want[a] == want[b]}


@pytest.mark.slow
def test_the_batched_run_gives_the_traces_numbers(gpt2, minilm):
    """The engine's batches (padded on the right; an encoder's pads hidden as keys) against one
    trace per text: the same queries, keys and Gram matrix, a causal model's and an encoder's."""
    for m in (gpt2, minilm):
        ts = build_set(m, "docs", None, 1, 300, m.cfg.n_ctx)
        layers = list(range(m.cfg.n_layers))
        lengths = [len(t.ids) for t in ts.texts]
        groups = corpus_run.batches(lengths, 4 * m.cfg.n_layers * m.cfg.n_heads)
        assert any(len({lengths[i] for i in b}) > 1 for b in groups)  # some texts padded
        fast = corpus_run.run_batched(m, m.model, ts.texts, layers, True)
        slow_q, slow_k, gram = [], [], torch.zeros_like(fast[2])
        for t in ts.texts:
            tr = m.trace(t.ids)
            slow_q.append(tr.qkv(1)[0].transpose(0, 1))
            slow_k.append(tr.qkv(1)[1].transpose(0, 1))
            p = torch.cat([tr.pattern(i).reshape(m.cfg.n_heads, -1) for i in layers]).double()
            gram += p @ p.T
        assert (fast[0][1][0] - torch.cat(slow_q)).abs().max() < 1e-4
        assert (fast[0][1][1] - torch.cat(slow_k)).abs().max() < 1e-4
        assert ((fast[2] - gram).abs() / gram.abs().max()).max() < 1e-5


def test_an_upload_is_one_text_a_line_long_lines_windowed_and_the_budget_adds_up(minilm):
    words = " ".join(["attention"] * 300)  # one token each: 300 + [CLS] + [SEP]
    lines = ["I sat on the river bank.", "", "   ", words, "An apple and a banana are fruit."]
    upload = "\n".join(lines)
    width = LIMITS.max_corpus_text_tokens
    tok = minilm.tokenizer
    total = 0
    for line in (ln for ln in lines if ln.strip()):
        body = len(tok(line).ids) - 2
        total += body + 2 * math.ceil(body / (width - 2))
    full = build_set(minilm, "upload", upload, 0, LIMITS.max_corpus_tokens, 512)
    assert full.tokens == total and full.dropped == 0
    assert [t.text for t in full.texts][0] == "I sat on the river bank."
    long = full.texts[1:4]
    assert [len(t.ids) for t in long] == [width, width, 300 - 2 * (width - 2) + 2]
    for t in long:
        assert t.labels[0] == "[CLS]" and t.labels[-1] == "[SEP]" and t.text.startswith("attention")
    for budget in (16, 100, 200, total - 1):
        got = build_set(minilm, "upload", upload, 0, budget, 512)
        assert got.tokens + got.dropped == total and got.tokens <= budget
        assert got.tokens == budget  # the last window cut to fill the room, its [SEP] kept
        assert got.texts[-1].labels[-1] == "[SEP]"


@pytest.mark.slow
def test_docs_are_sentences_in_a_seeded_order(gpt2):
    pool = doc_sentences()
    assert len(pool) > 1000 and all(s.isascii() and 5 <= len(s.split()) <= 60 for s in pool)
    a = build_set(gpt2, "docs", None, 0, 400, 256)
    b = build_set(gpt2, "docs", None, 0, 400, 256)
    assert a == b and all(any(t.text in s for s in pool) for t in a.texts)
    total = sum(len(gpt2.tokenizer(s).ids) for s in pool)
    assert a.tokens + a.dropped == total


@pytest.mark.slow
def test_umap_is_reproducible_for_a_seed_and_places_the_users_text(gpt2):
    fields = {"max_tokens": 120, "layer": 1, "head": 1, "projection": "umap", "seed": 3}
    a = ask(gpt2, text="I sat on the bank", **fields)
    b = ask(gpt2, text="I sat on the bank", **fields)
    assert a.points == b.points and a.explained is None
    n = len(a.texts[0].tokens)
    assert len(a.points.qx) == a.tokens and all(math.isfinite(v) for v in a.points.qx[:n])


def test_a_set_past_its_byte_budget_keeps_one_layer_and_runs_again_for_another(gpt2, monkeypatch):
    """Past KEEP_SET_BYTES only the asked layer's q and k are kept; another layer runs the set
    again and gives the coordinates a set with every layer kept gives."""
    from attnviz.services.corpus import service as corpus_service

    cap = gpt2.cfg.n_ctx
    whole = CorpusCache()
    want = whole.corpus(gpt2, CorpusRequest(max_tokens=150, layer=0, head=1), cap)
    monkeypatch.setattr(corpus_service, "KEEP_SET_BYTES", 1)
    small = CorpusCache()
    small.corpus(gpt2, CorpusRequest(max_tokens=150, layer=1, head=1), cap)
    kept = small.get(gpt2, corpus_service.set_key(gpt2, CorpusRequest(max_tokens=150), cap))
    assert kept is not None and list(kept.qk) == [1]
    assert not small.cheap(gpt2, CorpusRequest(max_tokens=150, layer=0), cap)
    got = small.corpus(gpt2, CorpusRequest(max_tokens=150, layer=0, head=1), cap)
    assert got.cached and list(kept.qk) == [0]
    assert got.points == want.points and got.clusters == want.clusters


def test_a_kept_set_is_cheap_for_another_head_but_not_another_set_or_a_new_umap(gpt2):
    cache, cap = CorpusCache(), gpt2.cfg.n_ctx
    assert not cache.cheap(gpt2, CorpusRequest(max_tokens=100, layer=1), cap)
    cache.corpus(gpt2, CorpusRequest(max_tokens=100, layer=1), cap)
    assert cache.cheap(gpt2, CorpusRequest(max_tokens=100, layer=0, head=3, text="a bank"), cap)
    assert not cache.cheap(gpt2, CorpusRequest(max_tokens=101), cap)
    assert not cache.cheap(gpt2, CorpusRequest(max_tokens=100, seed=1), cap)
    assert cache.cheap(gpt2, CorpusRequest(max_tokens=100, source="examples"), cap) is False
    assert not cache.cheap(gpt2, CorpusRequest(max_tokens=100, projection="umap"), cap)
