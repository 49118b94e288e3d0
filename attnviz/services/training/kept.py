"""A training run in the store (``services.store``) and back: what ``GET /api/train/{id}``, its
export and its download answer, kept in the run's folder from the moment it is accepted (a run
waiting in line: its request and its row, ``queued``), as it trains (at each checkpoint) and
once it ends (with each variant's model folder); a run read back from there after a restart,
and a waiting one put back in line (``requeue``)."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from attnviz.engine import Transformer, TransformerConfig
from attnviz.schemas.train import TrainCheckpoint, TrainClaim, TrainRequest
from attnviz.services.store import NewerIndex, Row, RunStore, StoreError, access_record
from attnviz.services.training.report import columns
from attnviz.services.training.runs import LiveRun, Plan, model_name
from attnviz.training.export import save_run
from attnviz.training.trainer import Run, Step

log = logging.getLogger(__name__)

KIND = "run"
FORMAT = 1  # run.json's layout
WAITING = ("queued", "running")  # the states of a run not ended (its row's too)
# Checkpoints written to the store ahead of their event, by variant (``save``'s ``ahead``).
Ahead = dict[int, list[TrainCheckpoint]]
# A run put back in line after a restart starts its event log past this many ids more than
# the last (a log held at most this many before: years of a waiting run's ``queue`` events).
LOG_GAP = 1_000_000


def variant_folder(i: int) -> str:
    return f"variant-{i}"


def last_step(run: LiveRun) -> int:
    """The step of the run's last checkpoint (what an interrupted run keeps)."""
    for v in reversed(run.variants):
        if v.checkpoints:
            return v.checkpoints[-1].step
    return 0


def _record(run: LiveRun, state: str, reason: str | None,
            ahead: Ahead | None = None) -> dict:  # fmt: skip
    ahead = ahead or {}
    with run.lock:
        variants = [
            {
                "state": v.state if state in WAITING or v.state not in ("waiting", "running")
                else "cancelled",
                "model": v.model,
                "history": columns(v.history),
                "checkpoints": [c.model_dump(mode="json")
                                for c in [*v.checkpoints, *ahead.get(i, [])]],  # fmt: skip
                "induction": v.induction,
                "alignment": v.alignment,
                "folder": variant_folder(i) if v.result is not None else None,
                "weights": v.weights,  # its model as of a checkpoint (save_weights)
            }
            for i, v in enumerate(run.variants)
        ]  # fmt: skip
        return {
            "format": FORMAT,
            "id": run.id,
            "state": state,
            "reason": reason,
            "created": run.created,
            "baseline": run.baseline,
            "step_time": run.step_time,
            "claims": None if run.claims is None else [c.model_dump() for c in run.claims],
            # its events, its end included (written just before it is told), and the events
            # of the checkpoints written ahead of being told
            "seq": run.seq + (state not in WAITING) + sum(len(c) for c in ahead.values()),
            "base": run.base,
            "operator": run.exempt,
            "variants": variants,
        }


def _write_model(folder: Path, result: Run, run: LiveRun) -> None:
    task = run.plan.task
    if not task.encoder_decoder:
        save_run(result, task, folder)
        return
    # An encoder-decoder is no sentence-mode folder (training.export refuses it): its
    # configuration and weights, which the Train tab decodes with after a restart.
    state = {k: v.detach().cpu().contiguous() for k, v in result.model.state_dict().items()}
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    config = {"model_type": "attnviz-encoder-decoder", **dataclasses.asdict(result.cfg)}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _writer(result: Run, run: LiveRun) -> Callable[[Path], None]:
    return lambda folder: _write_model(folder, result, run)


def weights_folder(i: int, step: int) -> str:
    return f"checkpoint-{i}-step-{step}"


def save_weights(store: RunStore, run: LiveRun, i: int, so_far: Run) -> None:
    """Variant ``i``'s model as of its last checkpoint (``so_far``: the run so far, its model
    the one training) into the run's folder, for the run to keep if the server stops before it
    ends. The folder ``run.json`` names now stays until the next ``save`` names this one (it
    follows at once: the worker's checkpoint), so a stop at any moment leaves ``run.json``
    naming a folder that is there. A write that fails is logged; the run goes on."""
    step = so_far.checkpoints[-1].step
    name = weights_folder(i, step)
    variant = run.variants[i]
    try:
        named = (variant.weights or {}).get("folder")
        for old in store.folder(run.id).glob(f"checkpoint-{i}-step-*"):
            if old.name not in (named, name):
                shutil.rmtree(old, ignore_errors=True)
        snapshot = dataclasses.replace(so_far, state="cancelled")  # where it stopped, so far
        store.write_folder(run.id, name, _writer(snapshot, run))
    except NewerIndex:  # a newer attnviz's data directory: logged once by the store
        return
    except Exception:  # the store is a copy: a failure to write it never stops the run
        log.exception("run %s: its model at step %d not written to the store", run.id, step)
        return
    with run.lock:
        variant.weights = {"folder": name, "step": step}


def settle(store: RunStore, run_id: str) -> int:
    """An interrupted run's folder made final, as a finished run's is: the checkpoint folders
    its ``run.json`` does not name (the one written ahead of being named, a half-written one)
    removed, then its bytes measured into its row (what the disk budget counts). Returns them."""
    try:
        variants = store.read_json(run_id, "run.json").get("variants") or []
        named = {str(w.get("folder")) for v in variants if isinstance(w := v.get("weights"), dict)}
    except (StoreError, AttributeError) as exc:  # unreadable: its load skips it, logged
        log.warning("run %s: its checkpoints not pruned (%s)", run_id, exc)
        named = None
    folder = store.folder(run_id)
    if named is not None:
        for old in [*folder.glob("checkpoint-*"), *folder.glob(".checkpoint-*.tmp")]:
            if old.name not in named:
                shutil.rmtree(old, ignore_errors=True)
    return store.measure(run_id)


def save(store: RunStore, run: LiveRun, replica: str, *, state: str | None = None,
         reason: str | None = None, ahead: Ahead | None = None) -> bool:  # fmt: skip
    """The run as it is now into its folder, then its row: ``state`` (its end, with ``reason``)
    writes its models too and marks it finished; ``queued``: it waits in line (accepted, not
    started); without, it is running (a checkpoint), with ``ahead`` the checkpoints of each
    variant not yet told (stored before anyone hears of them). A write that fails is logged:
    the run goes on, kept in memory only. Whether it was written."""
    ended = state is not None and state not in WAITING
    try:
        store.check_writable()  # nothing of it written where a newer attnviz has the index
        folder = store.folder(run.id)
        if not (folder / "request.json").exists():
            store.write_json(run.id, "request.json", run.request.model_dump(mode="json"))
        if ended:
            for i, v in enumerate(run.variants):
                if v.result is not None and not (folder / variant_folder(i)).is_dir():
                    store.write_folder(run.id, variant_folder(i),
                                       _writer(v.result, run))  # fmt: skip
        store.write_json(run.id, "run.json", _record(run, state or "running", reason, ahead))
        with run.lock:
            access = dataclasses.replace(run.access, viewers=dict(run.access.viewers))
        store.write_json(run.id, "access.json", access_record(access))
        store.put(run.id, KIND, replica=replica, access=access, state=state or "running",
                  step=last_step(run), created=run.created,
                  finished=time.time() if ended else None, title=run.name,
                  address=run.address)  # fmt: skip
        if ended:  # its models are whole in its variants' folders: the checkpoints' go
            for old in folder.glob("checkpoint-*"):
                shutil.rmtree(old, ignore_errors=True)
            store.measure(run.id)  # its folder is final: what the disk budget counts
    except NewerIndex:  # a newer attnviz's data directory: logged once by the store
        return False
    except Exception:  # the store is a copy: a failure to write it never stops the run
        log.exception("run %s: could not be written to the store in %s", run.id, store.root)
        return False
    if ended:
        run.stored = True
    return True


def load_model(folder: Path, device: torch.device) -> Transformer:
    """The model in a variant's folder (its config.json and model.safetensors)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        names = {f.name for f in dataclasses.fields(TransformerConfig)}
        fields = {k: v for k, v in config.items() if k in names}
        if isinstance(fields.get("layer_types"), list):
            fields["layer_types"] = tuple(fields["layer_types"])
        model = Transformer(TransformerConfig(**fields))
        model.load_state_dict(load_file(folder / "model.safetensors"))
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        raise StoreError(f"{folder}: {exc}") from exc
    return model.to(device).eval()


def load(store: RunStore, row: Row, plan_for: Callable[[TrainRequest], Plan],
         device: torch.device) -> LiveRun:  # fmt: skip
    """The stored run ``row`` names, finished (an ``interrupted`` one as of its last
    checkpoint). ``StoreError`` when its folder is missing or cannot be read."""
    try:
        req = TrainRequest.model_validate(store.read_json(row.id, "request.json"))
        data = store.read_json(row.id, "run.json")
        plan = plan_for(req)
        run = LiveRun(row.id, req, plan, row.access())
        run.name = row.title  # its owner's name for it, kept in its row
        run.seen = row.seen is not None
        stored = data["variants"]
        if len(stored) != len(run.variants):
            raise ValueError(f"{len(stored)} variants stored, {len(run.variants)} planned")
        run.created = float(data["created"])
        run.baseline = data.get("baseline")
        run.step_time = float(data.get("step_time") or 0.0)
        claims = data.get("claims")
        run.claims = None if claims is None else [TrainClaim(**c) for c in claims]
        state, reason = row.state, data.get("reason")
        if state != "interrupted" and state != data["state"]:
            raise ValueError(f"the index says {row.state}, run.json {data['state']}")
        weighed: list[int] = []  # an interrupted run's models: the steps they are as of
        for i, (v, s) in enumerate(zip(run.variants, stored, strict=True)):
            h = s["history"]
            v.history = [Step(step=a, loss=b, grad_norms=c, seconds=d)
                         for a, b, c, d in zip(h["step"], h["loss"], h["grad_norms"],
                                               h["seconds"], strict=True)]  # fmt: skip
            v.checkpoints = [TrainCheckpoint.model_validate(c) for c in s["checkpoints"]]
            v.induction, v.alignment = s.get("induction"), s.get("alignment")
            v.state = s["state"] if s["state"] not in ("waiting", "running") else "cancelled"
            v.model = s.get("model")
            if s.get("folder") and state != "interrupted":
                model = load_model(store.folder(row.id) / variant_folder(i), device)
                v.result = Run(cfg=model.cfg, model=model, state=v.state,  # type: ignore[arg-type]
                               history=v.history)  # fmt: skip
            elif state == "interrupted":
                v.result = _weights(store, row.id, s.get("weights"), v.history, device)
                if v.result is None:
                    v.model = None
                else:  # opens in sentence mode under the name it would have had
                    v.model, v.weights = model_name(run, v), s["weights"]
                    weighed.append(v.weights["step"])  # type: ignore[index]
        if state == "interrupted":
            # Where run.json says it stopped: the row is written after it, so a stop between
            # the two leaves the row a checkpoint behind.
            reason = interrupted(last_step(run), weighed, len(run.variants))
    except StoreError:
        raise
    except Exception as exc:  # a folder that does not read as a run: skipped by the caller
        raise StoreError(f"{store.folder(row.id)}: {type(exc).__name__}: {exc}") from exc
    run.state, run.reason, run.ended, run.stored = state, reason, time.monotonic(), True
    # Its stream replays its end: its state (with the ``seq`` it had), then nothing; a stream
    # resumed after any of its events gets the end once.
    end = ("end", json.dumps({"state": state, "reason": reason}, separators=(",", ":")))
    run.base = int(data.get("base") or 0)
    run.events = [end] * max(1, int(data.get("seq") or 1) - run.base)
    return run


def _weights(store: RunStore, run_id: str, weights: dict | None, history: list[Step],
             device: torch.device) -> Run | None:  # fmt: skip
    """An interrupted variant's model as of the checkpoint its weights were stored at, or None
    (none stored, or a folder that cannot be read: logged)."""
    if not weights:
        return None
    try:
        model = load_model(store.folder(run_id) / str(weights["folder"]), device)
        step = int(weights["step"])
    except (StoreError, KeyError, TypeError, ValueError) as exc:
        log.warning("run %s: its model at a checkpoint cannot be read (%s)", run_id, exc)
        return None
    return Run(cfg=model.cfg, model=model, state="cancelled",
               history=[h for h in history if h.step <= step])  # fmt: skip


def interrupted(step: int, weighed: list[int], variants: int) -> str:
    """What an interrupted run says: where it stopped, and what it kept of its models."""
    said = (
        f"interrupted at step {step}: the server stopped while it trained; its losses and "
        "checkpoints up to there are kept"
    )
    if not weighed:
        return f"{said}, not its model"
    if variants == 1:
        return f"{said}, and its model as of step {weighed[0]}"
    return f"{said}, and {len(weighed)} of its {variants} models as of their last checkpoints"


def requeue(store: RunStore, row: Row, plan_for: Callable[[TrainRequest], Plan]) -> LiveRun:
    """The run ``row`` names, which waited in line when the server stopped, waiting again: its
    id, owner, client address (the per-address cap counts it), request and time of arrival as
    they were, its event log starting past the old one's ids. ``StoreError`` when its folder
    cannot be read; ``TrainRefused`` (from ``plan_for``) when its request no longer plans under
    this server's bounds."""
    try:
        req = TrainRequest.model_validate(store.read_json(row.id, "request.json"))
        data = store.read_json(row.id, "run.json")
        created = float(data["created"])
        base = int(data.get("seq") or 0) + LOG_GAP  # its ids so far, and the gap
        exempt = bool(data.get("operator"))
    except StoreError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(f"{store.folder(row.id)}: {type(exc).__name__}: {exc}") from exc
    run = LiveRun(row.id, req, plan_for(req), row.access())
    run.created, run.base, run.exempt, run.state = created, base, exempt, "queued"
    run.name, run.address = row.title, row.address
    return run
