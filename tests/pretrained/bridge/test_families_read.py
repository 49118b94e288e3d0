"""What the transformers bridge reads of each family, found by running the model (issue 42), on
tiny random checkpoints of the families it serves, against transformers itself (eager
attention, the oracle):

- whether the attention goes through AttentionInterface is whether the function attnviz
  registers there is called, whatever the class says (StableLM's and Falcon's say no; a model
  whose code refuses the function, GPT-Neo's, is loaded with eager attention);
- predictions and the logit lens read the output head and the final norm wherever the model
  keeps them (OPT's norm on ``model.decoder``), and the logit scale it applies (Cohere's):
  top-k is the softmax of transformers' logits, the lens its hidden states through that norm
  and head;
- the windows said are the ones the model applies: each layer's keys hidden by the engine's
  rule for them are exactly those transformers' weights give nothing (ModernBERT's local
  layers, either side of the query; NeoMME's, whose sizes differ from layer to layer; GPT-Neo's
  local layer and BLOOM's none, read from the forward's weights, their masks being their own
  code's), and the page's words for them say which side they cut;
- the table in docs/models.md says of each family what its trace holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from attnviz.engine.layout import hidden_keys
from attnviz.pretrained.bridge import BridgedModel
from attnviz.pretrained.registry import ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from tests.support import checkpoints_bridge as bridge
from tests.support.checkpoints import SENTENCES

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = " ".join(SENTENCES[:2])  # 30-odd tokens: past every window here
DOCS = Path(__file__).parents[3] / "docs" / "models.md"
# The families the bridge serves (no native conversion), each made tiny by tests/support.
FAMILIES = ["bloom", "cohere", "electra", "falcon", "gpt_neo", "modernbert", "neomme", "opt",
            "stablelm", "starcoder2"]  # fmt: skip
# The oracle's final norm of each causal family, where transformers keeps it.
FINAL_NORMS = {
    "bloom": "transformer.ln_f",
    "cohere": "model.norm",
    "falcon": "transformer.ln_f",
    "gpt_neo": "transformer.ln_f",
    "opt": "model.decoder.final_layer_norm",
    "stablelm": "model.norm",
    "starcoder2": "model.norm",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bridge-families")


@pytest.fixture(scope="module")
def served(root):
    """Each family's folder and model (``--backend auto``), made when a test first asks."""
    made: dict[str, tuple[Path, BridgedModel]] = {}

    def get(family: str) -> tuple[Path, BridgedModel]:
        if family not in made:
            folder = getattr(bridge, f"make_tiny_{family}")(root / f"tiny-{family}")
            model = load_model(folder, CPU)
            assert isinstance(model, BridgedModel) and model.family == family
            made[family] = folder, model
        return made[family]

    return get


def traced(m: BridgedModel, fields: str):
    trace = run_text_trace(TextTraceRequest(model=m.name, text=TEXT), ModelRegistry([m]), None)
    return trace, select(trace, TraceQuery(fields=fields)).arrays


@pytest.mark.parametrize("family", ["stablelm", "falcon"])
def test_the_attention_function_is_found_called_whatever_the_class_says(served, family):
    folder, m = served(family)
    assert not type(m.hf).is_backend_compatible()  # the flag that used to decide
    assert m.no_qk is None and "queries" not in m.unavailable
    ids = m.tokenizer(TEXT).ids
    t = m.trace(ids)
    t.release()  # weights made again from the recorded q and k
    assert t.has_qk and t.forward_pattern is None
    out = bridge.hf_forward(folder, ids)
    for layer, want in enumerate(out.attentions):
        assert (t.pattern(layer) - want[0]).abs().max() < TOL


def test_a_model_whose_code_refuses_the_function_loads_eager_and_says_why(served):
    """GPT-Neo picks its attention class by name from a table without "attnviz": it loads
    with eager attention, which never calls the function, and keeps the forward's weights."""
    folder, m = served("gpt_neo")
    assert m.hf.config._attn_implementation == "eager"
    assert m.no_qk is not None and "AttentionInterface" in m.no_qk
    ids = m.tokenizer(TEXT).ids
    t = m.trace(ids)
    out = bridge.hf_forward(folder, ids)
    assert not t.has_qk and t.forward_pattern is not None
    for layer, want in enumerate(out.attentions):
        assert (t.forward_pattern[layer] - want[0]).abs().max() < TOL


@pytest.mark.parametrize("family", sorted(FINAL_NORMS))
def test_predictions_and_the_lens_are_transformers_head_and_final_norm(served, family):
    folder, m = served(family)
    trace, part = traced(m, "top_k,lens")
    assert not {"top_k", "lens"} & set(trace.meta["unavailable"])
    ids = trace.meta["token_ids"]
    hf = bridge.hf_model(folder)
    norm = hf.get_submodule(FINAL_NORMS[family])
    scale = getattr(hf.config, "logit_scale", 1.0)  # Cohere's: logits = lm_head(x) * scale
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
        states = [h[0] for h in out.hidden_states]
        lensed = [hf.lm_head(norm(h)) * scale for h in states[:-1]] + [out.logits[0]]
        lensed = torch.stack(lensed)  # (L+1, T, V)
    probs = out.logits[0].softmax(-1)  # (T, V)
    top = part["top_k"]
    assert (top["ids"] == probs.topk(top["k"]).indices).all()
    assert (top["probs"] - probs.gather(1, top["ids"].long())).abs().max() < TOL
    lens = part["lens"]
    lp = lensed.softmax(-1)  # (L+1, T, V)
    assert (lens["ids"] == lp.argmax(-1)).all()
    assert (lens["probs"] - lp.max(-1).values).abs().max() < TOL


@pytest.mark.parametrize("family", ["modernbert", "neomme", "starcoder2", "opt", "electra",
                                    "gpt_neo", "bloom"])  # fmt: skip
def test_the_windows_said_are_the_ones_the_model_applies(served, family):
    """Each layer's keys that the engine's rule hides for the window the trace says are the
    keys transformers' weights give nothing, in every head; each window's words say what it
    hides: the last w keys in a decoder, w - 1 on each side in an encoder."""
    folder, m = served(family)
    trace, _ = traced(m, "attentions")
    windows = trace.meta["attention"]["windows"]
    notes = trace.meta["attention"]["window_notes"]
    ids = trace.meta["token_ids"]
    out = bridge.hf_forward(folder, ids)
    T = len(ids)
    for layer, weights in enumerate(out.attentions):
        nothing = (weights[0] == 0).all(0)  # (T, T)
        rule = hidden_keys(T, T, 0, m.cfg.causal, windows[layer], CPU)
        assert torch.equal(rule, nothing), (layer, windows[layer])
        w = windows[layer]
        if w is None:
            assert notes[layer] is None
        elif m.cfg.causal:
            assert f"only the last {w} tokens, itself included" in notes[layer]
        else:
            assert f"only the {w - 1} tokens on each side of it, and itself" in notes[layer]
    if family == "modernbert":  # layer 0 global; 1 and 2 see 8 keys either side, and their own
        assert windows == [None, bridge.MODERNBERT_WINDOW + 1, bridge.MODERNBERT_WINDOW + 1]
    if family == "gpt_neo":  # a global layer, then a local one: its config's window_size
        assert windows == [None, bridge.WINDOW]
    if family == "bloom":  # ALiBi: a bias that fades with distance, no key ever cut
        assert windows == [None, None]
    if family == "neomme":  # 3 and 6 keys either side, a global layer: each layer's own size
        assert windows == [None if w is None else w + 1 for w in bridge.NEOMME_HALF_WINDOWS]
        assert windows == [4, 7, None, 4]


def windows_cell(windows: list[int | None], causal: bool) -> str:
    """The windows column of the docs' table: what a trace's ``attention.windows`` says."""
    at = [i for i, w in enumerate(windows) if w is not None]
    if not at:
        return "none"
    sizes = ", ".join(str(w) for w in sorted({windows[i] for i in at}))
    some = ("layer " if len(at) == 1 else "layers ") + ", ".join(map(str, at))
    where = "every layer" if len(at) == len(windows) else some
    return f"{sizes} ({where}{'' if causal else '; both sides'})"


def docs_table() -> dict[str, list[str]]:
    """The rows of docs/models.md's table of what the bridge reads, by family."""
    text = DOCS.read_text(encoding="utf-8")
    head = text.index("| `model_type` | attention weights |")
    rows = {}
    for line in text[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[re.sub(r"`", "", cells[0])] = cells[1:]
    return rows


@pytest.mark.parametrize("family", FAMILIES)
def test_the_docs_table_says_what_a_trace_holds(served, family):
    """One row per family the bridge is tested with, each cell what the trace says: weights,
    queries and keys, predictions, lens (yes: the field is there; no: ``unavailable`` names
    it), windows (``attention.windows``)."""
    _, m = served(family)
    trace, _ = traced(m, "attentions")
    lacking = trace.meta["unavailable"]
    said = ["no" if f in lacking else "yes" for f in ("attentions", "queries", "top_k", "lens")]
    windows = trace.meta["attention"]["windows"]
    said.append(windows_cell(windows, m.cfg.causal))
    table = docs_table()
    assert sorted(table) == FAMILIES
    assert table[family] == said
