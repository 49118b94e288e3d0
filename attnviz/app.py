"""The FastAPI application: API routers, the page, static files, error handlers."""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware

from attnviz import __version__
from attnviz.api import api_router
from attnviz.api.errors import install_error_handlers
from attnviz.engine.device import resolve_device
from attnviz.pretrained import load_registry
from attnviz.schemas import COMPACT_MEDIA_TYPE
from attnviz.services import compute
from attnviz.services.traces import TraceService
from attnviz.settings import Settings, get_settings
from attnviz.web import install_web

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    # FastAPIOffline: /docs and /redoc load Swagger UI and ReDoc from the installed package,
    # not from a CDN.
    app = FastAPIOffline(
        title="attnviz",
        version=__version__,
        summary="Per-layer, per-head attention and embedding trajectories of a transparent "
        "transformer, on inputs you edit.",
    )
    app.state.settings = settings
    app.state.device = resolve_device(settings.device)
    log.info("attnviz %s computing on %s", __version__, app.state.device)
    # Models are loaded on the compute thread, where their tensors will be used.
    app.state.registry = compute.run(
        load_registry, settings.model_folders, app.state.device, builtin=settings.builtin_model
    )
    app.state.traces = TraceService(settings, app.state.device, app.state.registry)
    install_error_handlers(app)
    # A JSON trace at the caps is ~30 MB; level 1 shrinks it ~4x in ~0.3 s, worth it off-host.
    # The compact form is compressed where it pays (its 8-bit thumbnails), by the trace service,
    # with zstd or gzip.
    app.add_middleware(
        GZipMiddleware,
        minimum_size=1024,
        compresslevel=1,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, COMPACT_MEDIA_TYPE),
    )
    app.include_router(api_router)
    install_web(app)
    return app
