"""Command line: ``attnviz serve [--host H] [--port P] [--device D]``, ``attnviz bench``."""

from __future__ import annotations

import argparse
import logging
import os

from attnviz import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnviz", description="Attention visualizer.")
    parser.add_argument("--version", action="version", version=f"attnviz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the web app and its API")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1, ATTNVIZ_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8000, ATTNVIZ_PORT)")
    serve.add_argument("--device", help="auto, cpu, cuda or cuda:N (default auto, ATTNVIZ_DEVICE)")
    serve.add_argument(
        "--model",
        action="append",
        metavar="FOLDER",
        help="also offer the BERT or GPT-2 model in this Hugging Face folder (repeatable; "
        "added to ATTNVIZ_MODELS)",
    )
    bench = sub.add_parser(
        "bench",
        help="start a server on a free loopback port, measure it beside the Hugging Face "
        "forward, stop it",
    )
    bench.add_argument(
        "--tokens", default="16,128,512", help="text lengths in tokens (default 16,128,512)"
    )
    bench.add_argument("--repeat", type=int, default=5, help="texts per length (default 5)")
    bench.add_argument("--clients", type=int, default=16, help="for throughput; 0 skips it")
    bench.add_argument("--seconds", type=float, default=5.0, help="of throughput per kind")
    bench.add_argument(
        "--browser", action="store_true", help="also time typing to every view drawn in Chromium"
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
    args = parser.parse_args(argv)
    if args.command == "bench":
        return _bench(args, parser)
    if args.model:
        earlier = [p for p in os.environ.get("ATTNVIZ_MODELS", "").split(os.pathsep) if p]
        os.environ["ATTNVIZ_MODELS"] = os.pathsep.join(earlier + args.model)

    # Flags win over the environment; Settings reads the environment.
    for flag in ("host", "port", "device"):
        value = getattr(args, flag)
        if value is not None:
            os.environ[f"ATTNVIZ_{flag.upper()}"] = str(value)

    import uvicorn

    from attnviz.app import create_app
    from attnviz.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        app = create_app(settings)
    except ValueError as exc:
        parser.error(str(exc))
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=settings.log_level)
    return 0


def _bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from pathlib import Path

    from attnviz import bench

    logging.basicConfig(level="INFO", format="%(message)s")

    def lengths(flag: str, text: str) -> list[int]:
        try:
            out = [int(t) for t in text.split(",") if t.strip()]
        except ValueError:
            parser.error(f"{flag}: {text!r} is not a list of numbers")
        if not out or min(out) < 3:
            parser.error(f"{flag}: lengths of at least 3 tokens")
        return out

    tokens = lengths("--tokens", args.tokens)
    browser_tokens = tuple(lengths("--browser-tokens", args.browser_tokens))
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    model = Path(args.model) if args.model else None
    report = bench.run(
        tokens,
        repeat=args.repeat,
        clients=args.clients,
        seconds=args.seconds,
        use_browser=args.browser,
        browser_tokens=browser_tokens,
        chromium=args.chromium,
        device=args.device,
        model_folder=model,
    )
    print(bench.table(report))
    if args.json:
        print(bench.report_json(report))
    return 0
