"""All configuration, read once from the environment (prefix ``ATTNVIZ_``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATTNVIZ_", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    # "auto" picks CUDA when torch sees a GPU, else the CPU. ATTNVIZ_DEVICE=cpu forces the CPU.
    device: str = "auto"
    log_level: Literal["debug", "info", "warning", "error"] = "info"


@lru_cache
def get_settings() -> Settings:
    return Settings()
