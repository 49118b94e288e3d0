"""The FastAPI application: API routers, the page, static files, error handlers."""

from __future__ import annotations

import logging

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES

from attnviz import __version__
from attnviz.api import api_router
from attnviz.api import export as export_api
from attnviz.api.errors import install_error_handlers
from attnviz.api.middleware import (
    BodyLimit,
    GZip,
    HeadAsGet,
    Methods,
    SecurityHeaders,
    SlashRedirect,
    TimeLimit,
    TrustedProxies,
)
from attnviz.api.visitor import Visitors
from attnviz.engine.device import resolve_device
from attnviz.learn.classroom import Classroom
from attnviz.limits import LIMITS, data_url_chars
from attnviz.pretrained import load_registry
from attnviz.services import compute
from attnviz.services.datadir import open_data_dir, server_secret
from attnviz.services.jobs import TraceJobs
from attnviz.services.recurrent import RecurrentService
from attnviz.services.trace_service import TraceService
from attnviz.services.training import TrainService
from attnviz.settings import Settings, get_settings
from attnviz.web import install_web
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from attnviz.wire.encoding import MIDDLEWARE_LEVEL, MIDDLEWARE_MIN_BYTES

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
    compute.configure(settings.workers, settings.remote_workers)
    log.info("attnviz %s computing on %s", __version__, app.state.device)
    # Models are loaded on the compute thread, where their tensors will be used.
    app.state.registry = compute.run(
        load_registry,
        settings.model_folders,
        app.state.device,
        builtin=settings.builtin_model,
        dtype=settings.dtype,
        backend=settings.backend,
        device_map=settings.device_map,
        max_memory=settings.memory_bytes,
        offload_folder=settings.offload_folder,
        ndif=settings.ndif,
        probe_bytes=settings.probe_mb * 2**20,
    )
    open_data_dir(settings.data_path)  # 0700: what is in it is the server's user's alone
    app.state.traces = TraceService(settings, app.state.device, app.state.registry)
    app.state.trace_jobs = TraceJobs(app.state.traces, settings)
    app.state.training = TrainService(settings, app.state.device, app.state.registry)
    app.state.recurrent = RecurrentService(settings)
    app.state.classroom = Classroom(settings)
    install_error_handlers(app)
    # GZip for the page and the small JSON answers. Traces are compressed by the trace service,
    # on the compute thread (a large JSON trace would hold the event loop), and large static
    # files once (web.py): the middleware passes a body that already has a Content-Encoding.
    # All three through attnviz.wire.encoding.
    # Added innermost first: a request meets TrustedProxies (a proxy's X-Forwarded-* from the
    # allowed proxies only), Visitors (who is asking; a new visitor's cookie on every answer,
    # refusals included), TimeLimit, BodyLimit, HeadAsGet, GZip, the security headers (which
    # read an HTML page before it is compressed), then Methods (OPTIONS, a 405's Allow).
    app.add_middleware(Methods, router=app.router)
    app.add_middleware(SecurityHeaders, settings=settings)
    app.add_middleware(
        GZip,
        minimum_size=MIDDLEWARE_MIN_BYTES,
        compresslevel=MIDDLEWARE_LEVEL,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, COMPACT_MEDIA_TYPE),
    )
    app.add_middleware(HeadAsGet)
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        # A trace's images as data URLs: they may take a body past max_body_bytes by this.
        image_bytes=LIMITS.max_images * data_url_chars(settings.max_image_bytes),
    )
    app.add_middleware(TimeLimit, seconds=settings.request_timeout_s)
    admin = settings.admin_token.get_secret_value() if settings.admin_token else None
    app.add_middleware(Visitors, secret=server_secret(settings), admin_token=admin)
    app.add_middleware(TrustedProxies, allowed=settings.forwarded_allow_ips)
    # A path with or without its trailing slash: redirected by SlashRedirect, relatively.
    app.router.redirect_slashes = False
    app.router.default = SlashRedirect(app.router)
    app.include_router(api_router)
    app.include_router(export_api.router)
    install_web(app)
    return app
