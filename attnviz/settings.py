"""All configuration, read once from the environment (prefix ``ATTNVIZ_``)."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from attnviz.limits import LIMITS

REMOTE_WORKERS = 8  # remote models' computations at once, by default (``remote_workers``)
# The memory a model's load probe may build, by default (``probe_mb``): the transformers
# bridge's check of what a model's attention records and which keys each layer's window hides.
PROBE_MB = 2048

# The parameters' dtype: "auto" is the checkpoint's (bfloat16 or float16) on a GPU and float32
# on a CPU; the others force it. One definition: the CLI's --dtype offers these.
DType = Literal["auto", "float32", "bfloat16", "float16"]
# What runs the model folders: "auto", attnviz's own engine when it has a conversion for the
# folder's model_type, else Hugging Face transformers; or one of them for every folder. One
# definition: the CLI's --backend offers these.
# "ndif": every model is a repo id (or a folder) served by the NDIF deployment at NDIF_HOST.
BackendChoice = Literal["auto", "native", "transformers", "ndif"]
# How a model's layers are spread over the devices (accelerate's device_map): "none" puts the
# whole model on ``device``; the others are accelerate's plans over the GPUs, then the CPU, then
# the disk. One definition: the CLI's --device-map offers these.
DeviceMap = Literal["none", "auto", "balanced", "sequential"]
# One device's memory in --max-memory, as accelerate reads it: bytes, or a number and a unit.
# One definition: the native engine's placement reads its capacities with ``size_bytes`` too.
SIZE_UNITS = {"tib": 2**40, "gib": 2**30, "mib": 2**20, "kib": 2**10,
              "tb": 10**12, "gb": 10**9, "mb": 10**6, "kb": 10**3, "b": 1}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d*\.?\d+)\s*(tib|gib|mib|kib|tb|gb|mb|kb|b)?\s*$", re.IGNORECASE)
MAX_MEMORY_RULE = (
    "DEVICE=SIZE pairs separated by commas, DEVICE a GPU's index, cpu or disk, SIZE bytes or a "
    "number with TiB, GiB, MiB, KiB, TB, GB, MB, KB or B (e.g. 0=20GiB,1=20GiB,cpu=64GiB)"
)

NEEDS_A_MAP = "applies to a device map: set --device-map auto, balanced or sequential"


def size_bytes(text: str) -> int:
    """``"20GiB"``, ``"1.5GB"`` or ``"1024"`` in bytes (a ValueError otherwise)."""
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size")
    unit = (match.group(2) or "").lower()
    return int(float(match.group(1)) * SIZE_UNITS.get(unit, 1))


def memory_key(device: str) -> int | str:
    """A --max-memory device as accelerate's max_memory names it: a GPU's index, cpu, disk."""
    key = device.strip().lower()
    if key.isdigit():
        return int(key)
    if key in ("cpu", "disk"):
        return key
    raise ValueError(f"{device!r} is not a GPU's index, cpu or disk")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ATTNVIZ_", frozen=True, populate_by_name=True)

    host: str = "127.0.0.1"
    # ATTNVIZ_PORT, else PORT (what Hugging Face Spaces, Cloud Run and others set), else 8000.
    port: int = Field(8000, ge=1, le=65535, validation_alias=AliasChoices("ATTNVIZ_PORT", "PORT"))
    # "auto" picks CUDA when torch sees a GPU, else the CPU. ATTNVIZ_DEVICE=cpu forces the CPU.
    device: str = "auto"
    # The pretrained models' parameter dtype (ATTNVIZ_DTYPE, --dtype): see DType. A model whose
    # weights in it do not fit the device's free memory is refused at start.
    dtype: DType = "auto"
    # What runs the model folders (ATTNVIZ_BACKEND, --backend): see BackendChoice; transformers
    # is the optional extra attnviz[transformers].
    backend: BackendChoice = "auto"
    # How a model's layers are spread over the devices (ATTNVIZ_DEVICE_MAP, --device-map): see
    # DeviceMap; the transformers backend passes it to from_pretrained (accelerate places them).
    device_map: DeviceMap = "none"
    # Each device's memory for the layers (ATTNVIZ_MAX_MEMORY, --max-memory
    # "0=20GiB,cpu=64GiB"): accelerate's max_memory; unset, the free memory of every GPU torch
    # sees and of the CPU. Only with a device map.
    max_memory: Annotated[dict[str, str] | None, NoDecode] = None
    # Where layers that fit on no device are kept on disk (ATTNVIZ_OFFLOAD_FOLDER,
    # --offload-folder); unset, nothing goes to disk. Only with a device map.
    offload_folder: Path | None = None
    # The attention a model served through transformers may build at load, in MB
    # (ATTNVIZ_PROBE_MB): its probe runs every layer on a few tokens, and past a window its
    # config names on enough tokens to see which keys the window hides (every layer's weights
    # where they fit, else the masks alone); a window no probe within this can read is refused.
    probe_mb: int = Field(PROBE_MB, ge=16, le=1_048_576)
    # The NDIF deployment that runs --backend ndif's models and those named ndif:<repo id>
    # (NDIF_HOST, an http(s) URL; its key NDIF_API_KEY, none for a self-hosted one without keys).
    ndif_host: str | None = Field(
        None, validation_alias=AliasChoices("ATTNVIZ_NDIF_HOST", "NDIF_HOST", "ndif_host")
    )
    ndif_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ATTNVIZ_NDIF_API_KEY", "NDIF_API_KEY", "ndif_api_key")
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Model folders (Hugging Face layout) to offer besides the default, separated by ":".
    models: str = ""
    # Load the built-in models: the default model (all-MiniLM-L6-v2) when its package is
    # installed, and the character model that ships in the package (training/shipped.py).
    builtin_model: bool = True
    # The most tokens one text trace may have; by default each model's own maximum (512 for
    # MiniLM, 1,024 for GPT-2). A host may set less.
    max_text_tokens: int | None = Field(None, ge=1, le=1_000_000)
    # The most numbers one JSON trace may carry (a full 128-token GPT-2 small trace has ~10M).
    max_json_values: int = Field(10_000_000, ge=1)
    # The last traces, kept so that a page's later requests reuse the forward (0: keep none).
    trace_cache_mb: int = Field(256, ge=0)
    trace_cache_ttl_s: float = Field(600.0, gt=0)
    # For development: every trace answer's meta is validated against its model
    # (schemas/trace_meta.py, every key declared) before it is sent; one that does not match is
    # a 500. The test suite turns it on.
    check_meta: bool = False

    # -- a hosted demo: bounded work ------------------------------------------------------------
    # Computations at once. One uses every core already (torch spreads each operation); more
    # only helps on a GPU host, where encoding on the CPU can overlap the GPU's work.
    workers: int = Field(1, ge=1, le=64)
    # Remote models' computations at once (NDIF's), beside those: each mostly waits for its
    # deployment (its queue, the model loading there), never holding a worker above.
    remote_workers: int = Field(REMOTE_WORKERS, ge=1, le=256)
    # A request that cannot start computing within this many seconds gets 503 with Retry-After;
    # one whose expected wait is longer gets it at once. Cache hits skip the queue of misses.
    max_wait_s: float = Field(2.0, gt=0, le=600)
    # The most requests waiting to compute at once (503 past it).
    max_queue: int = Field(32, ge=1, le=10_000)
    # The whole of one request (reading its body, waiting, computing, answering), in seconds:
    # 503 past it.
    request_timeout_s: float = Field(30.0, gt=0, le=3600)
    # A text trace expected to take longer than this many seconds (its tokens x layers x the
    # model's size, at the pace measured on this server) runs as a job the page follows, when
    # the request asks for one (Prefer: respond-async): 202 at once, its progress, cancel.
    trace_job_after_s: float = Field(5.0, ge=0, le=3600)
    # The longest one such job may compute, in seconds; past it the job ends as failed, saying
    # so. The request limit above does not bound a job.
    trace_job_s: float = Field(300.0, gt=0, le=86_400)
    # Such jobs computing or waiting that one client address may have at once (a client that
    # keeps no cookie is a new visitor at every request; a page asks two at most, a knocked-out
    # trace and its clean run); past it 429 with Retry-After. The operator's token is exempt.
    trace_jobs_per_address: int = Field(4, ge=2, le=1000)
    # Request bodies larger than this get 413 before they are read. The largest valid toy
    # request (64 x 64 table and four custom 64 x 64 matrices at full precision) is ~0.5 MB.
    max_body_bytes: int = Field(512 * 1024, ge=1024, le=64 * 2**20)
    # One image's bytes (a trace's images, each a data URL; a file or bytes in Python): 422
    # naming it past this. A body that carries images may be larger than max_body_bytes by
    # their data URLs (max_images of them, each at most this in base64), and no more.
    max_image_bytes: int = Field(10 * 2**20, ge=1024, le=LIMITS.image_bytes_ceiling)
    # Who may embed the page in a frame: the CSP frame-ancestors sources ('none', 'self' or
    # origins such as https://example.org, separated by spaces).
    frame_ancestors: str = "'none'"
    # Proxies whose X-Forwarded-For names the client (for fair turns per client) and whose
    # X-Forwarded-Proto the scheme (a Secure cookie), separated by commas (addresses, networks);
    # "*" trusts any. From any other client both headers are ignored (api.middleware).
    forwarded_allow_ips: str = "127.0.0.1"

    # -- training runs (the Train mode) ---------------------------------------------------------
    # Runs training at once, and as many recurrent comparisons (a count of their own); another
    # start waits in line (train_queue). Each has a thread; on a CPU they share its cores with
    # the traces.
    train_slots: int = Field(1, ge=0, le=64)
    # Runs waiting for a slot, first come first served (a waiting run holds no thread), and as
    # many comparisons in a line of their own (services.line); a start past them gets 503 with
    # Retry-After. Each visitor may have one run going and one waiting, and one comparison.
    train_queue: int = Field(8, ge=0, le=1000)
    # Runs going or waiting that one client address may have at once (a classroom behind one
    # NAT is several visitors at one address: a few times a visitor's two), and as many
    # comparisons; past it 429 with Retry-After. The operator's token is exempt.
    train_per_address: int = Field(4, ge=2, le=1000)
    # Bounds on one run: a request over a cap gets 422 naming the field; a run stops at the
    # time limit with what it has learned.
    train_max_steps: int = Field(5000, ge=1, le=1_000_000)
    train_max_seconds: float = Field(120.0, gt=0, le=86_400)
    train_max_params: int = Field(2_000_000, ge=1000, le=10**9)
    train_max_text_chars: int = Field(200_000, ge=1000, le=10**8)
    # Finished runs kept (in the data directory, and their models in memory); past it the
    # oldest unshared one goes first. A run that is gone answers 404 saying when it was removed.
    train_keep_runs: int = Field(64, ge=1, le=1000)
    # Finished runs (training runs, comparisons) older than this many days are removed from
    # the data directory. Unset: kept until a bound below removes them.
    data_max_age_days: float | None = Field(30.0, gt=0)
    # The data directory's disk budget for runs, in MB: past it the oldest unshared run goes
    # first, the shared ones last.
    data_max_mb: float = Field(1024.0, gt=0)
    # How long a server's hold on a run it trains or keeps in line lasts past its last renewal
    # (it renews every third of it), in seconds: past it another server on the data directory
    # takes the run over (a server killed on another host is known gone only so).
    data_lease_s: float = Field(30.0, ge=1, le=3600)
    # This replica's name, the prefix of its run ids, so that a proxy sends every request about
    # a run to the replica that trains it (deploy/nginx). Lowercase letters and digits.
    replica: str = Field("", pattern=r"^[a-z0-9]{0,16}$")
    # Learners whose Learn progress the server keeps (learn.sqlite3 in the data directory):
    # past it the one seen least recently is forgotten first.
    learn_max_learners: int = Field(500, ge=1, le=100_000)
    # A learner not seen for this many days is forgotten. Unset: kept until the bound above.
    learn_keep_days: float | None = Field(90.0, gt=0)

    # -- visitors and the operator --------------------------------------------------------------
    # What the server keeps between restarts (the generated secret). Unset: the user's data
    # folder (platformdirs' user_data_dir("attnviz"), ~/.local/share/attnviz on Linux).
    data_dir: Path | None = None
    # The key that signs each visitor's cookie (and bearer token). Unset: one is generated once
    # and kept in the data directory (mode 0600). Replicas behind one proxy share one.
    secret: SecretStr | None = None
    # The operator's bearer token (Authorization: Bearer ...): lists, cancels and shares every
    # run. Unset: no operator.
    admin_token: SecretStr | None = None

    @field_validator("port", mode="before")
    @classmethod
    def _not_a_service_link(cls, value: object) -> object:
        if isinstance(value, str) and value.startswith("tcp://"):
            raise ValueError(
                f"is {value!r}: Kubernetes sets that for a Service named attnviz "
                "(a service link); set enableServiceLinks: false in the pod spec, or "
                "ATTNVIZ_PORT to a number"
            )
        return value

    @field_validator("max_memory", mode="before")
    @classmethod
    def _memory_pairs(cls, value: object) -> object:
        """``"0=20GiB,cpu=64GiB"`` (the flag's and the variable's form) as a dict."""
        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        pairs = {}
        for item in value.split(","):
            device, eq, size = item.partition("=")
            if not eq:
                raise ValueError(f"{item.strip()!r} is not DEVICE=SIZE: {MAX_MEMORY_RULE}")
            pairs[device.strip()] = size.strip()
        return pairs

    @field_validator("max_memory")
    @classmethod
    def _memory_rule(cls, value: dict[str, str] | None, info: ValidationInfo) -> object:
        if value is None:
            return None
        for device, size in value.items():
            try:
                memory_key(device)
                size_bytes(size)
            except ValueError as exc:
                raise ValueError(f"{device}={size}: {exc}; {MAX_MEMORY_RULE}") from exc
        if info.data.get("device_map") == "none":
            raise ValueError(NEEDS_A_MAP)
        return value

    @field_validator("offload_folder")
    @classmethod
    def _offload_rule(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if value is not None and info.data.get("device_map") == "none":
            raise ValueError(NEEDS_A_MAP)
        return value

    @property
    def memory_bytes(self) -> dict[int | str, int] | None:
        """``max_memory`` as accelerate's max_memory takes it: GPU indices as ints, bytes."""
        if self.max_memory is None:
            return None
        return {memory_key(k): size_bytes(v) for k, v in self.max_memory.items()}

    @property
    def data_path(self) -> Path:
        """The data directory: ``data_dir``, else the user's data folder."""
        if self.data_dir is not None:
            return self.data_dir
        from platformdirs import user_data_dir

        return Path(user_data_dir("attnviz"))

    @property
    def ndif(self) -> tuple[str | None, str]:
        """The NDIF deployment's host and key (``pretrained.ndif.open_ndif``)."""
        key = self.ndif_api_key.get_secret_value() if self.ndif_api_key is not None else ""
        return self.ndif_host, key

    @property
    def model_folders(self) -> list[Path]:
        """The models to offer: folders, and ``ndif:<repo id>`` names (whose colon is also the
        separator: joined again here)."""
        parts = [p for p in self.models.split(os.pathsep) if p.strip()]
        out: list[str] = []
        for p in parts:
            if out and out[-1] == "ndif":
                out[-1] = f"ndif:{p}"
            else:
                out.append(p)
        return [Path(p) for p in out]


@lru_cache
def get_settings() -> Settings:
    return Settings()
