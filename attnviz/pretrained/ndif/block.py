"""The one trace attnviz sends to an NDIF deployment, and what it computes there.

``run_plan`` is the body of the trace; it never changes the model's weights, and it keeps only
what its plan (``Plan``, plain data) asks for, reduced before it is saved: every head's 8-bit
thumbnail, its mean entropy (each row's when asked), its largest score, the rule each layer's
attention used, one layer's q, k and v, the top tokens of the positions asked for, the
trajectories' principal axes and every token's coordinates on them (the hidden states themselves
stay there), every head's output of the layers a patch reads. Heads the plan knocks out are
replaced in their layer's attention output, after its rule is read. A 126-layer x 128-head model
at 512 tokens sends back tens of MB, not the 8 GB of its weights (``plan_bytes``).

Plain torch and ``attnviz.engine.reduce`` (itself plain torch): nnsight ships these functions'
source with the request (``client.register``), so the deployment needs nothing of attnviz. The
attention of a layer is read where transformers' attention modules call their attention
function (nnsight's ``.source``: the last ``attention_interface_*`` call of the module): its
queries and keys after the rotary embedding and any q/k norm, its values, its mask, its scaling
and soft-cap. Where the call returned weights (eager attention), they are the model's own; else
softmax(q k^T * scaling) under the mask, checked against the call's output (``check``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from attnviz.engine.reduce import (
    PCA_AXES,
    entropy,
    logit_scale,
    max_pool,
    principal_axes,
    quantize,
    read_rows,
    regroup,
    replace_head,
)

# Keyword arguments of an attention call that change its numbers in ways the rule here does not
# model: the trace is refused (the client names them) rather than wrong.
UNMODELLED = ("s_aux", "sinks", "attention_sinks", "alibi", "position_bias")
# Scores of a few heads, or vocabulary logits of a few rows, made at once (float32).
CHUNK_BYTES = 32 * 2**20


def envoy_at(model: Any, path: str) -> Any:
    """The module at ``path`` ("model.layers.3.self_attn") of an nnsight model."""
    e = model
    for part in path.split("."):
        e = e[int(part)] if part.isdigit() else getattr(e, part)
    return e


def attention_op(attn: Any) -> Any:
    """The attention call of an attention module (its forward's last ``attention_interface``
    operation, as nnsight's ``.source`` names them)."""
    names = [n for n in attn.source.names if n.startswith("attention_interface_")]
    return getattr(attn.source, names[-1])


def hidden_of(
    mask: torch.Tensor | None, T: int, S: int, causal: bool, window: int | None, device: Any
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The keys hidden from each query, (T, S) booleans, and a bias added to the logits (T, S)
    when the mask is one: from the mask as the attention call received it ((B, 1, T, S): True
    where seen, or 0 and the dtype's minimum), else from the call's causal rule and window."""
    if mask is not None:
        m = mask[0, 0, :, -S:] if mask.dim() == 4 else mask
        if m.dtype == torch.bool:
            return ~m, None
        hidden = m <= torch.finfo(m.dtype).min / 2
        if bool(((m == 0) | hidden).all()):
            return hidden, None
        return hidden, m.float().masked_fill(hidden, 0.0)
    if not causal and window is None:
        return None, None
    i = torch.arange(S - T, S, device=device)[:, None]  # (T, 1) query positions
    j = torch.arange(S, device=device)[None, :]  # (1, S) key positions
    hidden = j > i if causal else torch.zeros(T, S, dtype=torch.bool, device=device)
    if window is not None:
        hidden = hidden | ((i - j) >= window)
    return hidden, None


def _causal(hidden: torch.Tensor) -> bool:
    """Whether ``hidden`` (T, S) hides exactly the keys after each query (the last T of S)."""
    if hidden.is_meta:
        return True
    T, S = hidden.shape
    return bool(torch.equal(hidden, torch.ones(T, S, dtype=torch.bool).triu(S - T + 1)))


def layer_scores(
    q: torch.Tensor, k: torch.Tensor, scaling: float, hidden: torch.Tensor | None,
    bias: torch.Tensor | None,
) -> torch.Tensor:  # fmt: skip
    """(H, T, hs) x (H, S, hs) -> (H, T, S) float32 logits, -inf where hidden."""
    s = torch.matmul(q.float(), k.float().transpose(-2, -1)) * scaling
    if bias is not None:
        s = s + bias
    return s if hidden is None else s.masked_fill(hidden, float("-inf"))


def layer_weights(scores: torch.Tensor, softcap: float | None) -> torch.Tensor:
    """The softmax of the soft-capped scores (H, T, S), in float32."""
    if softcap is not None:
        capped = torch.tanh(scores / softcap) * softcap
        scores = capped.masked_fill(torch.isneginf(scores), float("-inf"))
    return torch.softmax(scores, dim=-1, dtype=torch.float32)


def read_call(attn: Any, op: Any, causal_default: bool) -> dict:
    """What one attention call was given: q (H, T, hs), k and v (H_kv, S, hs), the mask, the
    scaling, soft-cap and window, and the names of what it took that the rule does not model."""
    args, kwargs = op.inputs
    q, k, v = args[1][0], args[2][0], args[3][0]
    mask = args[4] if len(args) > 4 else kwargs.get("attention_mask")
    scaling = kwargs.get("scaling")
    if scaling is None:
        scaling = 1.0 / math.sqrt(q.shape[-1])
    window = kwargs.get("sliding_window") or getattr(attn, "sliding_window", None)
    return {
        "q": q, "k": k, "v": v, "mask": mask, "scaling": float(scaling),
        "softcap": kwargs.get("softcap"), "window": window if mask is None else None,
        "causal": bool(getattr(attn, "is_causal", causal_default)),
        "unmodelled": [n for n in UNMODELLED if kwargs.get(n) is not None],
    }  # fmt: skip


def _sent(t: torch.Tensor) -> torch.Tensor:
    """A tensor as the answer holds it: on the CPU (a meta one as it is: the bytes test)."""
    return t.detach() if t.is_meta else t.detach().cpu()


def reduce_layer(plan: dict, layer: int, call: dict, output: Any) -> dict:
    """One layer's part of the answer: its rule, and what the plan asks of its weights. (No
    decorator on a function the trace calls: nnsight would send the decorator's source.)"""
    with torch.no_grad():
        return _reduce_layer(plan, layer, call, output)


def _reduce_layer(plan: dict, layer: int, call: dict, output: Any) -> dict:
    q, k, v = call["q"], call["k"], call["v"]
    H, T, S = q.shape[0], q.shape[1], k.shape[1]
    group = H // k.shape[0]  # query heads per key/value head
    kk = k.repeat_interleave(group, dim=0)  # (H, S, hs)
    hidden, bias = hidden_of(call["mask"], T, S, call["causal"], call["window"], q.device)
    got: dict = {
        "scaling": call["scaling"],
        "softcap": call["softcap"],
        "unmodelled": call["unmodelled"],
        # The keys hidden from each query: the causal triangle said in one word, else sent.
        "triangle": hidden is not None and bias is None and _causal(hidden),
        "hidden": None if hidden is None or _causal(hidden) else _sent(hidden),
        "bias": None if bias is None else _sent(bias),
    }
    forward = output[1] if isinstance(output, tuple) and len(output) > 1 else None
    thumbs, want_entropy = plan.get("thumbs"), plan.get("base", False)
    want_rows = want_entropy and plan.get("rows", False)  # each row's, not only each head's mean
    step = max(1, CHUNK_BYTES // max(1, T * S * 4))  # heads at once
    values, scales, rows, means, ranges = [], [], [], [], []
    err = torch.zeros((), device=q.device)
    if not want_entropy and thumbs is None:
        step = H  # nothing asked of the weights: the loop below is skipped
    attn_out = output[0] if isinstance(output, tuple) else output  # (1, T, H, hs)
    for h in range(0, H if want_entropy or thumbs is not None else 0, step):
        hs = slice(h, min(h + step, H))
        s = layer_scores(q[hs], kk[hs], call["scaling"], hidden, bias)  # (h, T, S)
        w = layer_weights(s, call["softcap"])
        if forward is not None:
            w = forward[0, hs].float()  # the model's own weights (eager attention)
        if want_entropy:
            e = entropy(w)  # (h, T)
            means.append(_sent(e.mean(-1)))
            if want_rows:
                rows.append(_sent(e))
            ranges.append(_sent(s.masked_fill(torch.isneginf(s), 0).abs().amax(dim=(-2, -1))))
            vv = v.repeat_interleave(group, dim=0)[hs].float()  # (h, S, hs)
            mine = torch.matmul(w, vv)  # (h, T, hs) what the rule's weights give
            theirs = attn_out[0, :, hs].float().transpose(0, 1)  # (h, T, hs)
            err = torch.maximum(err, (mine - theirs).abs().max())
        if thumbs is not None:
            x = w[..., -T:]
            if thumbs["regroup"]:
                x = regroup(x, thumbs["groups"], thumbs["hide"], thumbs["merge"])
            if thumbs["pool"] > 1:
                x = max_pool(x, thumbs["pool"])
            qv, sc = quantize(x)
            values.append(_sent(qv))
            scales.append(_sent(sc))
    if want_entropy:
        got["entropy_mean"] = torch.cat(means)  # (H,)
        if want_rows:
            got["entropy"] = torch.cat(rows)  # (H, T)
        got["score_range"] = torch.cat(ranges)  # (H,)
        got["check"] = _sent(err)  # the largest difference from the call's own output
        got["eager"] = forward is not None
    if thumbs is not None:
        got["thumbs"] = torch.cat(values)  # (H, s, s) uint8
        got["thumb_scale"] = torch.cat(scales)  # (H,)
    if layer in plan.get("qkv", ()):
        got["q"], got["k"], got["v"] = _sent(q.float()), _sent(k.float()), _sent(v.float())
    return got


def predictions(
    plan: dict, rows: dict, norm: Any, head: Any, softcap: float | None, logits: torch.Tensor
) -> dict:  # fmt: skip
    """The top tokens of the rows of hidden states the plan asks for (``rows``: state index ->
    (P, C), the last already normed), with the targets' probabilities and ranks (``rows``),
    each row's logits its head's, soft-capped, times the logit scale (``scale``) that makes the
    first one the model's own ``logits`` of it (V,) (``reduce.logit_scale``, as the bridge's
    probe finds it: Cohere's, Granite's; None, and no rows, when no one number does)."""
    with torch.no_grad():
        return _predictions(plan, rows, norm, head, softcap, logits)


def _predictions(
    plan: dict, rows: dict, norm: Any, head: Any, softcap: float | None, logits: torch.Tensor
) -> dict:  # fmt: skip
    ask = plan["predict"]
    targets = torch.tensor(ask["targets"])
    last = max(rows)
    step = max(1, CHUNK_BYTES // (8 * ask["vocab"]))

    def capped(x: torch.Tensor) -> torch.Tensor:
        made = head(x)
        return torch.tanh(made / softcap) * softcap if softcap else made

    scale = logit_scale(capped(rows[last][:1])[0], logits, ask["tolerance"])
    if scale is None:
        return {"rows": {}, "scale": None}

    def unembed(x: torch.Tensor) -> torch.Tensor:
        made = capped(x)
        return made * scale if scale != 1.0 else made

    top = ask["kind"] == "top_k"
    k = ask["k"] if top else 1
    out = {}
    for i, x in sorted(rows.items()):
        if top and i != last:
            continue  # the output's top tokens: the last state alone
        x = x if i == last else norm(x)
        ids, probs, tprob, trank = read_rows(unembed, x, targets, k, step)
        out[i] = {"ids": _sent(ids), "probs": _sent(probs), "target_probs": _sent(tprob),
                  "target_ranks": _sent(trank)}  # fmt: skip
    return {"rows": out, "scale": scale}


def plan_bytes(plan: dict, layers: int, heads: int, kv_heads: int, n: int, d: int, hs: int) -> int:
    """The bytes of the answer to ``plan`` for a model of that shape on ``n`` tokens (float32,
    8-bit thumbnails), from the shapes alone."""
    total = layers * (4 * 2 + 16)  # scaling, soft-cap and check of each layer
    if plan.get("base"):
        total += layers * heads * 2 * 4  # each head's mean entropy and score range
        if plan.get("rows"):
            total += layers * heads * n * 4  # each row's entropy
    thumbs = plan.get("thumbs")
    if thumbs is not None:
        s = thumbs["side"]
        total += layers * heads * (s * s + 4)
    total += len(plan.get("qkv", ())) * (heads + 2 * kv_heads) * n * hs * 4
    if plan.get("states"):
        total += (layers + 2) * n * d * 4  # the hidden states and the token vectors
    if plan.get("pca"):
        k = min(PCA_AXES, d)
        total += (1 + k) * d * 8 + k * 8 + (layers + 1) * n * k * 8  # mean, axes, ratio, coords
    ask = plan.get("predict")
    if ask is not None:
        rows = 1 if ask["kind"] == "top_k" else layers + 1
        k = ask["k"] if ask["kind"] == "top_k" else 1
        total += rows * len(ask["positions"]) * (8 * k + 8)
    return total


def knocked(output: Any, ablations: list) -> Any:
    """An attention call's output (the heads' outputs side by side, (1, T, H, hs), alone or
    first of a tuple) with the plan's heads of its layer knocked out (``reduce.replace_head``,
    the engine's rule)."""
    with torch.no_grad():
        out = output[0] if isinstance(output, tuple) else output
        z = out.transpose(1, 2)  # (1, H, T, hs): the engine's hook_z
        for a in ablations:
            z = replace_head(z, a["head"], a["mode"], a["source"])
        new = z.transpose(1, 2).contiguous()  # (1, T, H, hs)
    return (new, *output[1:]) if isinstance(output, tuple) else new


def _hidden(output: Any) -> torch.Tensor:
    """A decoder layer's hidden states (1, T, C), whether it returns them alone or first."""
    return output[0] if isinstance(output, tuple) else output


def run_plan(model: Any, plan: dict) -> dict:
    """The trace's body: one forward of ``model`` (an nnsight model, inside its trace), every
    layer read in the order it runs, and only what ``plan`` asks for kept."""
    paths = plan["paths"]
    keep_states = bool(plan.get("states"))
    pca = bool(plan.get("pca"))
    predict = plan.get("predict")
    positions = None if predict is None else torch.tensor(predict["positions"])
    got: dict = {"layers": []}
    states: list[torch.Tensor] = []
    spread: list[torch.Tensor] = []  # for the PCA: each state where its layer ran
    rows: dict[int, torch.Tensor] = {}

    def keep(i: int, h: torch.Tensor) -> None:
        if keep_states:
            states.append(_sent(h[0].float()))
        if pca:
            spread.append(h[0].detach().clone())
        if positions is not None:
            rows[i] = h[0, positions.to(h.device)].detach()

    if keep_states:
        got["embeddings"] = _sent(envoy_at(model, paths["embed"]).output[0].float())
    n = len(paths["attention"])
    for i in range(n):
        if i == 0:
            args, kwargs = envoy_at(model, paths["layers"][0]).inputs
            keep(0, args[0] if args else kwargs["hidden_states"])
        attn = envoy_at(model, paths["attention"][i])
        op = attention_op(attn)
        call = read_call(attn, op, True)
        got["layers"].append(reduce_layer(plan, i, call, op.output))
        if i in plan.get("heads_out", ()):  # a clean forward's, for a patch: (H, T, hs)
            out = op.output[0] if isinstance(op.output, tuple) else op.output
            got.setdefault("heads_out", {})[i] = _sent(out[0].transpose(0, 1).float())
        knock = [a for a in plan.get("ablate", ()) if a["layer"] == i]
        if knock:  # after this layer's rule is read and checked: the model's own output
            op.output = knocked(op.output, knock)
        if i < n - 1 and (keep_states or pca or positions is not None):
            keep(i + 1, _hidden(envoy_at(model, paths["layers"][i]).output))
    if keep_states or pca or positions is not None:  # the last, already normed
        last = paths["final"][-1] if paths["final"] else paths["layers"][-1]
        keep(n, _hidden(envoy_at(model, last).output))
    if keep_states:
        got["states"] = torch.stack(states)  # (L+1, T, C)
    if pca:
        mean, axes, ratio, coords = principal_axes(spread, PCA_AXES)
        spread.clear()
        got["pca"] = {"mean": _sent(mean), "axes": _sent(axes), "ratio": _sent(ratio),
                      "coords": _sent(coords)}  # fmt: skip
    if predict is not None:
        final = [envoy_at(model, path) for path in paths["final"]]

        def norm(x: torch.Tensor) -> torch.Tensor:  # the final norm (and all after the layers)
            for module in final:
                x = module(x)
            return x

        head = envoy_at(model, paths["head"])
        assert positions is not None
        out = model.output  # the model's own logits, to find its logit scale
        logits = out.logits if hasattr(out, "logits") else out[0]  # (1, T, V)
        first = logits[0, positions[0].to(logits.device)]  # (V,) the first position asked
        got["predict"] = predictions(plan, rows, norm, head, predict.get("softcap"), first)
    return got
