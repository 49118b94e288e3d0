"""HTTP API: one router per resource."""

from fastapi import APIRouter

from attnviz.api import (
    atlas,
    composition,
    corpus,
    health,
    learn,
    models,
    presets,
    recurrent,
    trace,
    train,
)

api_router = APIRouter()
api_router.include_router(health.router)
api_router.include_router(presets.router)
api_router.include_router(models.router)
api_router.include_router(atlas.router)
api_router.include_router(composition.router)
api_router.include_router(corpus.router)
api_router.include_router(trace.router)
api_router.include_router(train.router)
api_router.include_router(recurrent.router)
api_router.include_router(learn.router)
