"""Dependencies shared by the routers, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

import torch
from fastapi import Depends, Request

from attnviz.learn.classroom import Classroom
from attnviz.pretrained import ModelRegistry
from attnviz.services.jobs import TraceJobs
from attnviz.services.ownership import Caller
from attnviz.services.recurrent import RecurrentService
from attnviz.services.trace_service import TraceService
from attnviz.services.training import TrainService
from attnviz.settings import Settings


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _device(request: Request) -> torch.device:
    return request.app.state.device


async def _registry(request: Request) -> ModelRegistry:
    return request.app.state.registry


async def _traces(request: Request) -> TraceService:
    return request.app.state.traces


async def _jobs(request: Request) -> TraceJobs:
    return request.app.state.trace_jobs


async def _training(request: Request) -> TrainService:
    return request.app.state.training


async def _recurrent(request: Request) -> RecurrentService:
    return request.app.state.recurrent


async def _classroom(request: Request) -> Classroom:
    return request.app.state.classroom


async def _caller(request: Request) -> Caller:
    """Who is asking (``api.visitor.Visitors`` read it from the cookie or the bearer token)."""
    return request.scope["state"]["caller"]


SettingsDep = Annotated[Settings, Depends(_settings)]
DeviceDep = Annotated[torch.device, Depends(_device)]
RegistryDep = Annotated[ModelRegistry, Depends(_registry)]
TracesDep = Annotated[TraceService, Depends(_traces)]
JobsDep = Annotated[TraceJobs, Depends(_jobs)]
TrainingDep = Annotated[TrainService, Depends(_training)]
RecurrentDep = Annotated[RecurrentService, Depends(_recurrent)]
CallerDep = Annotated[Caller, Depends(_caller)]
ClassroomDep = Annotated[Classroom, Depends(_classroom)]
