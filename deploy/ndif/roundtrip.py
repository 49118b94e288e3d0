"""Round-trip check against a running self-hosted NDIF (start.sh), from the attnviz venv.

    python deploy/ndif/roundtrip.py HOST MODEL_FOLDER [--case ok|bad-model|down|bad-key|too-big]

``ok`` traces the first decoder layer's output remotely and locally and exits 1 unless they are
equal; every case prints each status update the websocket streamed (status, description) and,
on failure, the exception's type and message, as JSON lines.

Two client-side work-arounds for nnsight 0.8.1 with transformers 5.2x are applied here, and any
client needs them for a *local folder* model key:
  * ``LanguageModel(folder)`` alone fails ("Impossible to guess which tokenizer to use"): pass
    ``tokenizer=AutoTokenizer.from_pretrained(folder)``.
  * ``to_model_key()`` asks the Hub to canonicalise the repo id (``HfApi().model_info``), which
    rejects a path (HFValidationError): seed ``nnsight.modeling.huggingface._ID_CACHE[folder]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def emit(**fields) -> None:
    print(json.dumps(fields, default=str), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("folder")
    ap.add_argument("--case", default="ok")
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    import nnsight
    import nnsight.modeling.huggingface as hf
    import torch
    from nnsight import LanguageModel
    from nnsight.intervention.backends.remote import RemoteBackend
    from transformers import AutoTokenizer

    nnsight.CONFIG.API.HOST = args.host
    nnsight.CONFIG.APP.REMOTE_LOGGING = False  # no spinner; statuses are printed below
    if args.api_key is not None:
        nnsight.CONFIG.API.APIKEY = args.api_key

    seen: list = []
    original_note = RemoteBackend.note

    def note(self, response):
        seen.append((round(time.time() - started, 3), response.status.value, response.description))
        emit(
            status=response.status.value,
            description=response.description[:400],
            meta=response.meta,
            t=seen[-1][0],
        )
        return original_note(self, response)

    RemoteBackend.note = note

    folder = args.folder
    hf._ID_CACHE[folder] = folder
    model = LanguageModel(folder, tokenizer=AutoTokenizer.from_pretrained(folder))
    emit(model_key=model.to_model_key())
    if args.case == "bad-model":
        # A key the deployment cannot load: same class, a folder that does not exist.
        missing = folder.rstrip("/") + "-missing"
        hf._ID_CACHE[missing] = missing
        model.repo_id = missing
    if args.case == "too-big":
        # Room that the cluster does not have: the same tokenizer beside a config for a
        # ~7B-parameter Llama (no weights; the controller sizes models from the config).
        import shutil
        import tempfile

        from transformers import AutoConfig

        big = tempfile.mkdtemp(prefix="ndif-too-big-")
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(f"{folder}/{name}", big)
        cfg = AutoConfig.from_pretrained(folder)
        cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = 4096, 11008, 32
        cfg.num_attention_heads, cfg.num_key_value_heads = 32, 32
        cfg.save_pretrained(big)
        hf._ID_CACHE[big] = big
        model.repo_id = big

    with model.trace("hello world"):
        local = model.model.layers[0].output.save()
    local = local[0] if isinstance(local, tuple) else local

    for attempt in range(args.repeat if args.case == "ok" else 1):
        seen.clear()
        started = time.time()
        try:
            with model.trace("hello world", remote=True):
                remote = model.model.layers[0].output.save()
        except BaseException as error:  # noqa: BLE001 - reporting what the client sees
            emit(
                case=args.case,
                exception=f"{type(error).__module__}.{type(error).__qualname__}",
                message=str(error)[:2000],
                seconds=round(time.time() - started, 2),
            )
            return 0 if args.case != "ok" else 1
        remote = remote[0] if isinstance(remote, tuple) else remote
        equal = torch.equal(local, remote)
        emit(
            case=args.case,
            attempt=attempt + 1,
            seconds=round(time.time() - started, 2),
            shape=list(remote.shape),
            dtype=str(remote.dtype),
            equal=equal,
            max_abs_diff=float((local - remote).abs().max()),
        )
        if not equal:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
