"""Triage: validate the task, build the suite, run the candidate on all of it, classify."""

from __future__ import annotations

import time

from agents.common import make_run_dir, runner, settings
from tools.backends import BackendUnavailable, select_backend
from tools.diagnostics import diagnose
from tools.runner import SuiteError
from tools.task import TaskError, validate_sources

CLASSIFICATION = {"pass": "pass", "mismatch": "numerical mismatch", "timeout": "timeout",
                  "compile_error": "compile error", "runtime_error": "runtime error"}


def triage(state: dict) -> dict:
    """Classify the candidate: compile error, runtime error, timeout, numerical mismatch, or pass."""
    started = time.time()
    s = settings(state)
    update: dict = {"started_at": started, "iterations": 0, "evaluations": 0,
                    "tokens": {"prompt": 0, "completion": 0, "total": 0}, "extra": {}}
    run_dir = state.get("run_dir") or _run_dir(s.out, state.get("name", "task"))
    update["run_dir"] = run_dir
    try:
        validate_sources(state.get("reference_source", ""), state.get("candidate_source", ""))
        update["backend"] = select_backend(s.backend).name
        r = runner({**state, **update})
    except (TaskError, BackendUnavailable) as e:
        return {**update, "error": str(e), "verdict": "invalid_input"}
    except SuiteError as e:
        return {**update, "error": f"reference.py: {e}", "verdict": "invalid_input"}
    ev = r.evaluate(state["candidate_source"], r.ids())
    search = ev.subset(r.ids("search"))
    diag = diagnose(search if not search.passed else ev, r.variants)
    return {**update, "suite": r.variants, "evaluations": r.evaluations,
            "triage": {"status": ev.status, "classification": CLASSIFICATION[ev.status], "eval": ev.model_dump(),
                       "summary": diag["summary"]},
            "diagnosis": diag, "best_source": state["candidate_source"], "best_eval": search.model_dump(),
            "extra": {"suite_variants": len(r.variants), "startup_s": list(r.startup_s)}}


def _run_dir(out: str | None, name: str) -> str:
    """The run folder: ``out`` when it is prepared for this run (no report in it yet), else a fresh one."""
    import os

    if out and os.path.isdir(out) and not os.path.exists(os.path.join(out, "report.json")):
        return os.path.abspath(out)
    return make_run_dir(out, name)
