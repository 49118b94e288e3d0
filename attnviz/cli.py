"""Command line: ``attnviz serve [--host H] [--port P] [--device D]``, ``attnviz bench``,
``attnviz export --text T -o trace.html``, ``attnviz export --server URL --run ID -o run.html``,
``attnviz build-model FOLDER`` (the shipped character model, rebuilt from its recipe)."""

from __future__ import annotations

import argparse
import ctypes
import logging
import os
from typing import Any, get_args

from attnviz import __version__
from attnviz.limits import EXPORT_BUDGET
from attnviz.settings import MAX_MEMORY_RULE, BackendChoice, DeviceMap, DType


def _malloc_settings() -> None:
    """glibc only: blocks from 1 MiB up (tensors, a JSON trace's text, its compressed body) get
    mappings of their own, unmapped when freed. By default the first such block freed raises
    that threshold to 32 MB, and from then on the megabytes of every large response are carved
    from malloc's heaps, between the trace cache's blocks: freed, they stay resident, and the
    server's memory grows under load. Not lower: every block over the threshold costs a mapping
    and fresh zeroed pages, and a training step allocates dozens of a few hundred KiB (at 256
    KiB the default induction run took 30% longer). MALLOC_MMAP_THRESHOLD_ in the environment
    wins."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt(-3, 1024 * 1024)  # M_MMAP_THRESHOLD (fixed: no longer raised)
    mallopt(-1, 1024 * 1024)  # M_TRIM_THRESHOLD: the heaps' free tops back sooner
    # Raised while a trace's tensors are computed (a forward reuses its blocks layer to layer),
    # back after, with the heaps' free pages returned (services/heap.py).
    from attnviz.services import heap

    heap.fixed(1024 * 1024, 1024 * 1024, libc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnviz", description="Attention visualizer.")
    parser.add_argument("--version", action="version", version=f"attnviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for build in (_serve_parser, _bench_parser, _export_parser, _build_model_parser):
        build(sub)
    args = parser.parse_args(argv)
    return args.handler(args, parser)


# -- attnviz serve ----------------------------------------------------------------------------


def _serve_parser(sub: Any) -> None:
    serve = sub.add_parser("serve", help="serve the web app and its API")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1, ATTNVIZ_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8000, ATTNVIZ_PORT)")
    serve.add_argument("--device", help="auto, cpu, cuda or cuda:N (default auto, ATTNVIZ_DEVICE)")
    serve.add_argument(
        "--dtype",
        choices=get_args(DType),
        help="the models' parameters: auto (the checkpoint's half precision on a GPU, float32 on "
        "a CPU), float32, bfloat16 or float16 (default auto, ATTNVIZ_DTYPE)",
    )
    serve.add_argument(
        "--backend",
        choices=get_args(BackendChoice),
        help="what runs the model folders: auto (attnviz's engine for the families it converts, "
        "transformers for the rest: pip install 'attnviz[transformers]'), native, "
        "transformers, or ndif (every --model a repo id the NDIF deployment at NDIF_HOST runs, "
        "its key NDIF_API_KEY: pip install 'attnviz[ndif]'; a model named ndif:<repo id> goes "
        "there whatever the backend) (default auto, ATTNVIZ_BACKEND)",
    )
    serve.add_argument(
        "--device-map",
        choices=get_args(DeviceMap),
        help="spread each model over the devices, a native model by attnviz's engine, one "
        "served through transformers by accelerate: none (the whole model on --device), auto or "
        "balanced (over the GPUs evenly, then the CPU, then, through transformers only, the "
        "disk), sequential (each GPU filled in turn) (default none, ATTNVIZ_DEVICE_MAP)",
    )
    serve.add_argument(
        "--max-memory",
        metavar="PAIRS",
        help=f"with --device-map, each device's memory for the layers: {MAX_MEMORY_RULE} "
        "(default: the free memory of every GPU and of the CPU, ATTNVIZ_MAX_MEMORY)",
    )
    serve.add_argument(
        "--offload-folder",
        metavar="FOLDER",
        help="with --device-map, where the layers that fit on no device are kept, for models "
        "served through transformers (the native engine computes from memory and refuses it) "
        "(default: none go to disk, ATTNVIZ_OFFLOAD_FOLDER)",
    )
    serve.add_argument(
        "--model",
        action="append",
        metavar="FOLDER",
        help="also offer the model in this Hugging Face folder, or ndif:<repo id> for one on "
        "NDIF (repeatable; added to ATTNVIZ_MODELS)",
    )
    serve.set_defaults(handler=_serve)


# The settings ``attnviz serve``'s flags of the same names give.
SERVE_FLAGS = ("host", "port", "device", "dtype", "backend", "device_map", "max_memory",
               "offload_folder")  # fmt: skip


def _serve_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags give: they win over the environment's (``Settings(**these)``);
    ``--model`` folders join those of ATTNVIZ_MODELS."""
    overrides = {f: getattr(args, f) for f in SERVE_FLAGS if getattr(args, f) is not None}
    if args.model:
        earlier = [p for p in os.environ.get("ATTNVIZ_MODELS", "").split(os.pathsep) if p]
        overrides["models"] = os.pathsep.join(earlier + args.model)
    return overrides


def _serve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    overrides = _serve_overrides(args)
    _malloc_settings()
    import uvicorn
    from pydantic import ValidationError

    from attnviz.app import create_app
    from attnviz.settings import Settings

    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        parser.error("; ".join(_setting_error(e, overrides) for e in exc.errors()))
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        app = create_app(settings)
    except ValueError as exc:
        parser.error(str(exc))
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        # Forwarded headers are the app's to read, from its allowed proxies only (TrustedProxies
        # in api/middleware.py): read once, never again by uvicorn.
        proxy_headers=False,
    )
    return 0


def _setting_error(err, flags: dict[str, Any] | None = None) -> str:
    """``ATTNVIZ_WORKERS: Input should be ...`` for a setting's validation error; ``--port: ...``
    for one a flag gave (in ``flags``)."""
    name = str(err["loc"][0]) if err.get("loc") else "settings"
    if name in (flags or {}) and name in SERVE_FLAGS:
        name = f"--{name.replace('_', '-')}"
    elif not name.isupper():
        name = f"ATTNVIZ_{name.upper()}"
    msg = str(err["msg"]).removeprefix("Value error, ").removeprefix(f"{name} ")
    return f"{name}: {msg}"


# -- attnviz bench ----------------------------------------------------------------------------


def _bench_parser(sub: Any) -> None:
    """The options every bench may take, then one flag per bench of ``attnviz.bench.BENCHES``
    (and that bench's own options)."""
    from attnviz.bench import BENCHES, SERVE

    bench = sub.add_parser("bench", help=SERVE.help)
    bench.add_argument(
        "--tokens", help="text lengths in tokens (default 16,128,512; --shape: 512,2048,4096)"
    )
    bench.add_argument("--repeat", type=int, default=5, help="texts per length (default 5)")
    bench.add_argument(
        "--clients", type=int, help="for throughput (default 16; 0 skips it; --hosted: 64)"
    )
    bench.add_argument(
        "--seconds", type=float, help="of throughput per kind (default 5; --hosted: 30)"
    )
    bench.add_argument(
        "--browser",
        action="store_true",
        dest="use_browser",
        help="also time the page's cold start (Playwright, Lighthouse) and typing to every view "
        "drawn, in Chromium",
    )
    bench.add_argument(
        "--browser-tokens", default="8,128,512", help="lengths for --browser (default 8,128,512)"
    )
    bench.add_argument("--chromium", default="/usr/bin/chromium", help="the browser to drive")
    bench.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    bench.add_argument("--model", metavar="FOLDER", help="a model folder (default: MiniLM)")
    bench.add_argument(
        "--json", action="store_true", help="also print the figures as one JSON object, last"
    )
    for row in BENCHES:
        assert row.flag is not None
        if row.choices:
            bench.add_argument(row.flag, choices=list(row.choices), help=row.help)
        else:
            bench.add_argument(row.flag, action="store_true", help=row.help)
        for flag, kwargs in row.extra:
            bench.add_argument(flag, **kwargs)
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``attnviz bench``: the bench the flags pick (``attnviz.bench.chosen``), run with the
    options it takes, its table printed (and with ``--json`` its figures)."""
    from pathlib import Path

    from attnviz.bench import chosen

    logging.basicConfig(level="INFO", format="%(message)s")

    def lengths(flag: str, text: str) -> list[int]:
        try:
            out = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            parser.error(f"{flag}: {text!r} is not a list of numbers")
        if not out or min(out) < 3:
            parser.error(f"{flag}: lengths of at least 3 tokens")
        return out

    bench = chosen(args)
    values = {
        **vars(args),
        # Not given: the bench's own default (``run``'s).
        "tokens": lengths("--tokens", args.tokens) if args.tokens is not None else None,
        "browser_tokens": tuple(lengths("--browser-tokens", args.browser_tokens)),
    }
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    values["model"] = Path(args.model) if args.model else None
    if "generate" in bench.options and args.generate < 0:
        parser.error("--generate: 0 or more tokens")
    options = {k: values[k] for k in bench.options if values[k] is not None}
    module = bench.module()
    result = module.run(**options)
    print(module.table(result))
    if args.json:
        print(module.as_json(result))
    return 0


# -- attnviz export ---------------------------------------------------------------------------


def _export_parser(sub: Any) -> None:
    export = sub.add_parser(
        "export",
        help="one self-contained HTML file of a model's trace of a text: the page's views, "
        "offline (no server, no network)",
    )
    export.add_argument("--model", help="a model name or folder (default: all-MiniLM-L6-v2)")
    export.add_argument("--text", help="the text to trace")
    export.add_argument(
        "--run",
        metavar="ID",
        help="instead: a training run that has ended, read from --server (its views, with the "
        "checkpoints to scrub)",
    )
    export.add_argument(
        "--server", metavar="URL", help="with --run: the attnviz server that trained it"
    )
    export.add_argument(
        "--link",
        metavar="URL",
        help="instead: the page's share link (its address, or #s=... alone): the toy table it "
        "holds (the toy lab's views) or its sentence, with its selection",
    )
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file")
    export.add_argument("--layer", type=int, default=1, help="the layer shown first (1-based)")
    export.add_argument("--head", type=int, default=1, help="the head shown first (1-based)")
    export.add_argument(
        "--query", type=int, help="the query token shown first (1-based; default the first word)"
    )
    export.add_argument(
        "--key", type=int, help="Why this score's key (1-based; default the query's winning key)"
    )
    export.add_argument("--hide-special", action="store_true", help="hide the special tokens")
    export.add_argument("--merge-words", action="store_true", help="merge word pieces")
    export.add_argument(
        "--budget",
        type=int,
        default=EXPORT_BUDGET,
        metavar="BYTES",
        help="the file's size the optional parts (more heads exact, the layer aggregates) may "
        f"fill (default {EXPORT_BUDGET}); what the views draw first is always in it",
    )
    export.add_argument("--device", help="auto, cpu, cuda or cuda:N (default auto, ATTNVIZ_DEVICE)")
    export.set_defaults(handler=_export)


def _output_file(value: str) -> str | None:
    """Why ``-o`` cannot be written, before anything is computed (None: it can). A folder that
    does not exist, a path that is a folder or under a file, a place this process may not
    write are each refused in one line naming the option and the rule; the file is tried as it
    will be (opened to append, so nothing in it is lost; removed again when it was not there)."""
    from pathlib import Path

    path = Path(value).expanduser()
    where = path.parent
    if path.is_dir():
        return f"{value} is a folder; give the HTML file's own path (e.g. {path / 'trace.html'})"
    if not where.exists():
        return (
            f"the folder {where} does not exist; create it first, or name a file in one that does"
        )
    if not where.is_dir():
        return f"{where} is a file, not a folder; the HTML file goes in a folder"
    existed = path.exists()
    try:
        with path.open("ab"):
            pass
    except OSError as exc:
        return f"{value} cannot be written here ({exc.strerror or exc})"
    if not existed:
        path.unlink(missing_ok=True)
    return None


def _export(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``attnviz export``: the trace computed here (or a server's run), written as one HTML
    file. The output file is checked first: a place it cannot be written is refused before any
    trace is computed."""
    from pathlib import Path

    refusal = _output_file(args.output)
    if refusal is not None:  # one line, exit code 2, as argparse's own refusals
        parser.exit(2, f"attnviz export: error: -o/--output: {refusal}\n")
    if args.link is not None:
        return _export_link(args, parser)
    if args.run is not None or args.server is not None:
        return _export_run(args, parser)
    if args.text is None:
        parser.error("--text: the text to trace (or --run ID --server URL: a training run)")
    if args.device:
        from attnviz.python.local import configure

        configure(device=args.device)  # the trace service's device, over ATTNVIZ_DEVICE
    for flag in ("layer", "head", "query", "key"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            parser.error(f"--{flag}: counts from 1")
    if args.budget < 0:
        parser.error("--budget: a number of bytes, 0 or more")
    import attnviz
    from attnviz.python.html import ExportError

    try:
        trace = attnviz.trace(model=args.model, text=args.text, fields="thumbs", thumb=1)
    except attnviz.TraceError as exc:
        parser.error(str(exc))
    counts = {"layer": trace.layers, "head": trace.heads, "query": len(trace.tokens),
              "key": len(trace.tokens)}  # fmt: skip
    for flag, count in counts.items():
        value = getattr(args, flag)
        if value is not None and value > count:
            parser.error(f"--{flag}: {value} is past the last ({count}; counts from 1)")
    try:
        path = trace.save_html(
            Path(args.output),
            layer=args.layer - 1,
            head=args.head - 1,
            query=None if args.query is None else args.query - 1,
            key=None if args.key is None else args.key - 1,
            hide_special=args.hide_special,
            merge_words=args.merge_words,
            budget=args.budget,
        )
    except ExportError as exc:
        parser.error(str(exc))
    except OSError as exc:  # the place changed while the trace was computed (or the disk filled)
        parser.exit(2, f"attnviz export: error: -o/--output: {args.output} could not be "
                    f"written ({exc.strerror or exc})\n")  # fmt: skip
    size = path.stat().st_size
    print(f"{path}: {size:,} bytes, {len(trace.tokens)} tokens, {trace.meta.get('model')}")
    return 0


def _export_link(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``attnviz export --link URL``: the toy table (or the sentence) of a share link, traced
    here and written as one HTML file with the link's selection."""
    from pathlib import Path

    for flag in ("text", "run", "server", "model", "query", "key"):
        if getattr(args, flag) is not None:
            parser.error(f"--{flag}: a link holds what to trace; give --link alone")
    if args.device:
        from attnviz.python.local import configure

        configure(device=args.device)  # the trace service's device, over ATTNVIZ_DEVICE
    import attnviz
    from attnviz.python.html import ExportError, toy_html
    from attnviz.python.link import LinkError, read_link, trace_toy

    try:
        link = read_link(args.link)
        if link.toy is not None and link.view is not None:
            trace = trace_toy(link.toy)
            view = {k: link.view[k] for k in ("vlayer", "a", "b", "trails")}
            html = toy_html(trace, layer=link.view["layer"], head=link.view["head"], view=view)
            path = Path(args.output)
            path.write_text(html, encoding="utf-8")
            what = f"toy table, {len(trace.tokens)} tokens"
        else:
            s = link.sentence or {}
            trace = attnviz.trace(model=s["model"], text=s["text"], fields="thumbs", thumb=1)
            chosen = {"layer": s["layer"], "head": s["head"], "query": s["query"],
                      "hide_special": s["hide_special"], "merge_words": s["merge_words"],
                      "budget": args.budget}  # fmt: skip
            try:
                path = trace.save_html(Path(args.output), key=s["key"], **chosen)
            except ExportError as exc:
                if not str(exc).startswith("key:"):
                    raise
                # A key the link's query cannot see (picked before the query moved): the page
                # shows the query's winning key then, and so does the file.
                path = trace.save_html(Path(args.output), **chosen)
            what = f"{len(trace.tokens)} tokens, {trace.meta.get('model')}"
    except LinkError as exc:
        parser.error(f"--link: {exc}")
    except (attnviz.TraceError, ExportError) as exc:
        parser.error(f"--link: the link's {exc}")
    print(f"{path}: {path.stat().st_size:,} bytes, {what}")
    return 0


def _export_run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``attnviz export --server URL --run ID``: the server's run, written as one HTML file."""
    from pathlib import Path

    if args.run is None or args.server is None:
        parser.error("--run and --server: a run is read from the server that trained it; give both")
    if args.text is not None:
        parser.error("--text: a text or a run, not both")
    if not args.server.startswith(("http://", "https://")):
        parser.error(f"--server: {args.server!r} is not an http:// or https:// URL")
    import attnviz
    from attnviz.python.html import ExportError

    try:
        path = attnviz.Client(args.server).save_run_html(args.run, Path(args.output))
    except (attnviz.TraceError, ExportError) as exc:
        parser.error(f"--run: {exc}")
    except OSError as exc:  # the server could not be reached
        parser.error(f"--server: {args.server}: {exc}")
    print(f"{path}: {path.stat().st_size:,} bytes, run {args.run}")
    return 0


# -- attnviz build-model ----------------------------------------------------------------------


def _build_model_parser(sub: Any) -> None:
    build = sub.add_parser(
        "build-model",
        help="rebuild the character model that ships with attnviz from its recipe "
        "(attnviz/training/shipped.py): train it on one CPU thread and write its folder",
    )
    build.add_argument(
        "folder",
        metavar="FOLDER",
        help="where to write config.json, model.safetensors, tokenizer.json and recipe.json "
        "(attnviz/models/charlm-pydoc replaces the shipped one)",
    )
    build.set_defaults(handler=_build_model)


def _build_model(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``attnviz build-model FOLDER``: the shipped model trained from its recipe, with its
    progress every 100 steps, then its held-out loss beside the bigram model's."""
    from pathlib import Path

    from attnviz.training.shipped import RECIPE, build

    folder = Path(args.folder)
    if folder.exists() and not folder.is_dir():
        parser.error(f"FOLDER: {folder} is a file, not a folder")
    steps = RECIPE.opt.steps

    def progress(step: Any) -> None:
        if step.step % 100 == 0 or step.step == steps:
            print(
                f"step {step.step}/{steps}: loss {step.loss:.3f}, {step.seconds:.0f} s", flush=True
            )

    facts = build(folder, RECIPE, progress)
    size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    print(
        f"{folder}: {size:,} bytes, {facts['parameters']:,} parameters, held-out loss "
        f"{facts['heldout_loss']:.4f} nats a character (a bigram model's: "
        f"{facts['bigram_loss']:.4f}), trained in {facts['build_seconds']:.0f} s"
    )
    return 0
