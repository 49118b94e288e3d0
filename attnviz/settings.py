"""All configuration, read once from the environment (prefix ``ATTNVIZ_``)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
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
    # Model folders (Hugging Face layout) to offer besides the default, separated by ":".
    models: str = ""
    # Load the default model (all-MiniLM-L6-v2) when its package is installed.
    builtin_model: bool = True
    # The most tokens one text trace may have; by default each model's own maximum (512 for
    # MiniLM, 1,024 for GPT-2). A host may set less.
    max_text_tokens: int | None = Field(None, ge=1, le=1_000_000)
    # The most numbers one JSON trace may carry (a full 128-token GPT-2 small trace has ~10M).
    max_json_values: int = Field(10_000_000, ge=1)
    # The last traces, kept so that a page's later requests reuse the forward (0: keep none).
    trace_cache_mb: int = Field(1024, ge=0)
    trace_cache_ttl_s: float = Field(600.0, gt=0)

    @property
    def model_folders(self) -> list[Path]:
        return [Path(p) for p in self.models.split(os.pathsep) if p.strip()]


@lru_cache
def get_settings() -> Settings:
    return Settings()
