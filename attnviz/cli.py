"""Command line: ``attnviz serve [--host H] [--port P] [--device D]``."""

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
    args = parser.parse_args(argv)
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
