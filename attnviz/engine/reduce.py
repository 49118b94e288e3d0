"""The reductions of attention that run where the weights are: max-pooled 8-bit thumbnails, the
rows and columns shown under the token options, each row's entropy, the top tokens of rows
of hidden states (and the logit scale that makes them the model's), the principal axes of
every layer's hidden states (the trajectories), and a knocked-out head's output.
Plain torch, importing nothing of attnviz: the local server calls these functions, and a
remote trace (``attnviz.pretrained.ndif``) ships their source to run on the deployment, so both
compute the very same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

PCA_AXES = 3  # the trajectories' principal axes: what the page draws in 3-D


def _pool(x: torch.Tensor, pool: int, dim: int) -> torch.Tensor:
    """The largest value of each run of ``pool`` along ``dim`` (m -> ceil(m / pool)), the last
    run holding what is left. No padded copy: the whole runs are one view, the rest one slice
    (a padded copy of a 512-token layer's weights cost more than the max)."""
    m = x.shape[dim]
    whole = m // pool * pool
    parts = []
    if whole:
        runs = x.narrow(dim, 0, whole).unflatten(dim, (m // pool, pool))
        parts.append(runs.amax(dim=dim + 1 if dim >= 0 else dim))
    if whole < m:
        parts.append(x.narrow(dim, whole, m - whole).amax(dim=dim, keepdim=True))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=dim)


def max_pool(x: torch.Tensor, pool: int) -> torch.Tensor:
    """(H, m, m) -> (H, s, s), s = ceil(m / pool): the largest value of each pool x pool block
    (the last blocks hold what is left)."""
    # The rows first: the max of ``pool`` whole rows runs along their contiguous length, in
    # vector steps (3x faster at 512 tokens than the columns first, whose runs of a few
    # numbers each are not; max_pool2d is slower still), then the columns of a pool-th of
    # the numbers. The same maxima either way.
    return _pool(_pool(x, pool, -2), pool, -1)  # (H, s, m), then (H, s, s)


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights (..., m, m) as 8-bit values and one scale per matrix, its peak: weight ~ values *
    scale / 255. -> (..., m, m) uint8 and (...) float32"""
    scale = x.amax(dim=(-2, -1))
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = x * (255 / scale)[..., None, None]  # one new tensor, rounded in place: 3M values at 512
    return q.round_().to(torch.uint8), scale.float()


def regroup(
    pattern: torch.Tensor,
    groups: Sequence[Sequence[int]],
    hide_special: bool,
    merge_words: bool,
    renormalise: bool = True,
) -> torch.Tensor:
    """(..., T, T) attention -> (..., m, m), the rows and columns of ``groups`` (each a run of
    token indices shown as one row: ``TokenView``), in float64: with ``hide_special`` each row
    divided by its sum (unless not ``renormalise``: value-weighted norms, which no row sum
    bounds); with ``merge_words`` a group's rows averaged and its columns summed."""
    kept = [i for g in groups for i in g]  # the rows and columns that stay, in order
    idx = torch.tensor(kept, device=pattern.device)
    x = pattern.index_select(-2, idx).index_select(-1, idx).double()  # (..., k, k)
    if hide_special and renormalise:
        total = x.sum(-1, keepdim=True)
        x = torch.where(total > 0, x / total.clamp_min(torch.finfo(x.dtype).tiny), x)
    if merge_words:
        member = torch.zeros(len(groups), len(kept), dtype=x.dtype, device=x.device)
        at = 0
        for g, members in enumerate(groups):  # kept positions at..at+len(members)
            member[g, at : at + len(members)] = 1.0
            at += len(members)
        sizes = member.sum(-1)  # (m,) pieces per word
        x = (member @ x @ member.T) / sizes[:, None]  # rows averaged, columns summed
    return x


def entropy(pattern: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy in nats of each query's attention row, 0 log 0 = 0. (..., T, T) -> (..., T)

    ``out``: a tensor of the pattern's shape and dtype to hold the terms (reused over layers
    instead of a new one each: the same numbers)."""
    terms = torch.special.entr(pattern) if out is None else torch.special.entr(pattern, out=out)
    return terms.sum(-1)


def read_rows(
    unembed: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    targets: torch.Tensor,
    k: int,
    step: int,
) -> tuple[torch.Tensor, ...]:
    """Rows of hidden states after the final norm (n, C), ``step`` rows unembedded at once, ->
    the top ``k`` ids (n, k) and probabilities (n, k) float32, and the target's probability
    (n,) and rank (n,) (1: the top token; 0 where there is no target, ``targets`` -1)."""
    ids, probs, tprob, trank = [], [], [], []
    for a in range(0, x.shape[0], step):
        rows = x[a : a + step]
        logits = unembed(rows).float()  # (r, V)
        lse = torch.logsumexp(logits, dim=-1, keepdim=True)  # (r, 1)
        top, at = logits.topk(min(k, logits.shape[-1]), dim=-1)
        ids.append(at.to(torch.int32))
        probs.append((top - lse).exp_())
        t = targets[a : a + rows.shape[0]].to(logits.device)
        tl = logits.gather(1, t.clamp(min=0)[:, None])  # (r, 1) the target's logit
        has = t >= 0
        tprob.append(torch.where(has, (tl - lse).exp()[:, 0], 0.0))
        trank.append(torch.where(has, (logits > tl).sum(-1) + 1, 0).to(torch.int32))
    return torch.cat(ids), torch.cat(probs), torch.cat(tprob), torch.cat(trank)


def logit_scale(made: torch.Tensor, want: torch.Tensor, tolerance: float) -> float | None:
    """The one number s that makes ``made`` (an output embedding's logits of hidden states,
    soft-capped where the model caps them) the model's own logits ``want`` (the same shape),
    within ``tolerance`` of ``want``'s largest magnitude (at least 1; at least twice the
    rounding of ``want``'s dtype): 1 when they already
    are; else the least-squares s (a logit scale: Cohere's ``logit_scale``, Granite's
    1 / ``logits_scaling``); None when no one number does."""
    if made.shape != want.shape:
        return None
    # Never finer than the precision the model made its logits in (bfloat16's, on a deployment)
    tolerance = max(tolerance, 2 * torch.finfo(want.dtype).eps)
    want = want.float()
    made = made.float().to(want.device)
    bound = tolerance * max(1.0, float(want.abs().max()))
    if float((made - want).abs().max()) <= bound:
        return 1.0
    scale = float((made * want).sum() / (made * made).sum().clamp_min(1e-30))
    return scale if float((made * scale - want).abs().max()) <= bound else None


def principal_axes(
    states: Sequence[torch.Tensor], k: int = PCA_AXES
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One PCA of the rows of every state together (each (T, C), each on its own device, a
    layer of a model spread over GPUs): their mean (C,), the top ``k`` axes (k, C), unit rows,
    each signed so that its largest loading is positive, the share of the variance each
    explains (k,), and every row's coordinates (L+1, T, k); float64, on the first state's
    device. Exact: the eigenvectors of the covariance (C x C, in float64; a 512-token trace's
    3,584 points in 384 dimensions take 20 ms, a third of an SVD of the points), gathered a
    state at a time, so no two states are ever copied together."""
    home = states[0].device
    C = states[0].shape[-1]
    k = min(k, C)
    rows = sum(s.shape[0] for s in states)
    mean = torch.zeros(C, dtype=torch.float64, device=home)
    for s in states:
        mean += s.to(home, torch.float64).sum(0)
    mean /= rows  # (C,)
    cov = torch.zeros(C, C, dtype=torch.float64, device=home)
    for s in states:
        centred = s.to(home, torch.float64) - mean  # (T, C)
        cov += centred.T @ centred
    var, vecs = torch.linalg.eigh(cov)  # ascending; (C,), (C, C) columns
    var = var.flip(0).clamp_min(0)  # descending, rounding below 0 is 0
    axes = vecs.flip(1)[:, :k].T  # (k, C) unit rows
    idx = axes.abs().argmax(dim=1)
    signs = torch.sign(axes[torch.arange(k, device=home), idx])
    axes = axes * torch.where(signs == 0, torch.ones_like(signs), signs)[:, None]
    total = var.sum()
    ratio = var[:k] / total if total > 0 else torch.zeros_like(var[:k])
    coords = torch.stack([(s.to(home, torch.float64) - mean) @ axes.T for s in states])
    return mean, axes, ratio, coords  # coords: (L+1, T, k)


def replace_head(
    z: torch.Tensor, head: int, mode: str, source: torch.Tensor | None = None
) -> torch.Tensor:
    """``z`` (B, nh, T, hs), the heads' outputs before the output projection, with ``head``'s
    slice replaced (a new tensor): ``zero``, nothing; ``mean``, its output averaged over the
    positions; ``patch``, ``source``'s (T_src, hs) position by position from the start, the
    positions past its end keeping their own (``engine.ablate`` says why)."""
    z = z.clone()
    if mode == "zero":
        z[:, head] = 0
    elif mode == "mean":
        z[:, head] = z[:, head].mean(dim=1, keepdim=True)  # (B, 1, hs) over the positions
    else:
        if source is None:
            raise ValueError("a patch needs the head's output on a source text")
        n = min(z.shape[2], source.shape[0])
        z[:, head, :n] = source[:n].to(z.device, z.dtype)
    return z
