"""Helpers shared by the nodes: settings from the state, and the task's runner."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from typing import Any

from tools.evaluate.backends import select_backend
from tools.evaluate.runner import Runner
from tools.phases import phase
from tools.settings import Settings

_RUNNERS: dict[str, Runner] = {}


def settings(state: Mapping[str, Any]) -> Settings:
    """Settings of this run (``state["options"]`` over defaults)."""
    return Settings.from_options(state.get("options"))


def source_hash(source: str) -> str:
    """Short content hash of a source, used to remember tried patches."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def make_run_dir(out: str | None, name: str) -> str:
    """Create a fresh run folder; never reuse an existing one (a suffix is added)."""
    base = out or os.path.join("runs", f"{time.strftime('%Y%m%d-%H%M%S')}-{name or 'task'}")
    path, k = base, 1
    while os.path.exists(path) and os.listdir(path):
        k += 1
        path = f"{base}-{k}"
    os.makedirs(path, exist_ok=True)
    return os.path.abspath(path)


def emit(node: str, message: str, **data) -> None:
    """Send a progress event on the graph's ``custom`` stream (no-op outside a graph run).

    Nodes report long inner steps this way instead of printing; the CLI shows them.
    """
    from langgraph.config import get_stream_writer

    try:
        write = get_stream_writer()
    except RuntimeError:  # called outside a graph (a unit test calling the node directly)
        return
    write({"node": node, "message": message, **data})


def runner(state: Mapping[str, Any]) -> Runner:
    """The ``Runner`` of this run, created (and its suite built) on first use in this process.

    After a resume in a new process the suite is rebuilt (it is deterministic) and the
    evaluation count continues from ``state["evaluations"]``.
    """
    run_dir = state["run_dir"]
    r = _RUNNERS.get(run_dir)
    if r is None:
        s = settings(state)
        r = Runner(os.path.join(run_dir, "work"), state["reference_source"], select_backend(s.backend),
                   timeout_s=s.timeout, tolerance=s.tolerance)
        with phase("suite_build"):
            r.build_suite(state.get("candidate_source", ""))
        splits = {v["id"]: v["split"] for v in state.get("suite") or []}
        for v in r.variants:  # a resumed run keeps the splits triage fitted to the suite budget
            v["split"] = splits.get(v["id"], v["split"])
        # The state owns the evaluation count: a runner re-created after ``--resume`` in a new
        # process continues from the checkpointed count, so ``--max-evaluations`` still holds.
        r.evaluations = int(state.get("evaluations") or 0)
        _RUNNERS[run_dir] = r
    return r


def targets(state: Mapping[str, Any]) -> list[str]:
    """GPU targets of this run (``--targets``), resolved; see ``tools.compile.gpu.parse_targets``."""
    from tools.compile.gpu import parse_targets
    from tools.evaluate.backends import local_target

    return parse_targets(settings(state).targets, local_target())


def runner_stats(run_dir: str) -> dict:
    """Start-up seconds of each sandboxed process of this run so far (empty if no runner)."""
    r = _RUNNERS.get(run_dir)
    return {"startup_s": [round(x, 3) for x in r.startup_s]} if r else {}


def forget_runner(run_dir: str) -> None:
    """Drop the cached runner of a finished run."""
    _RUNNERS.pop(run_dir, None)
