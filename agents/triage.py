"""Triage: validate the task, build the suite, run the candidate on all of it, classify."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import emit, make_run_dir, runner, settings, source_hash, targets
from tools.compile.gpu import TargetError
from tools.diagnosis.diagnostics import diagnosis_of
from tools.evaluate.backends import BackendUnavailable, select_backend
from tools.evaluate.runner import SuiteError
from tools.integrity.audit import protected_fingerprint
from tools.integrity.static_checks import escape_findings
from tools.phases import phase
from tools.records import Audit, Diagnosis
from tools.replay import replay_command
from tools.report.run_folder import write_file_atomic
from tools.suite.task import TaskError, validate_sources
from tools.suite.variants import fit_budget

if TYPE_CHECKING:
    from graph.state import State
    from tools.settings import Settings

CLASSIFICATION = {"escape": "intent to escape", "pass": "pass", "mismatch": "numerical mismatch", "timeout": "timeout",
                  "compile_error": "compile error", "runtime_error": "runtime error"}


def triage(state: State) -> dict:
    """Classify the candidate: compile error, runtime error, timeout, numerical mismatch, or pass.

    Reads ``candidate_source``, ``reference_source``, ``name``, ``options``, ``run_dir`` (when the CLI
    prepared it). Writes ``started_at``, ``iterations``, ``evaluations``, ``tokens``, ``extra``, ``run_dir``,
    ``backend``, ``suite``, ``targets``, ``protected``, ``compile``, ``triage``, ``diagnosis``, ``best_source``,
    ``best_eval``; on invalid input only ``error`` and ``verdict`` (with the counters); on a static finding
    that shows intent to escape (``tools.integrity.static_checks.escape_findings``) only ``triage`` (status
    "escape") and ``audit`` (the findings), before anything runs. On disk:
    ``reference.py`` and ``original.py`` in the run folder.
    """
    started = time.time()
    s = settings(state)
    update: dict = {"started_at": started, "iterations": 0, "evaluations": 0,
                    "tokens": {"prompt": 0, "completion": 0, "total": 0}, "extra": {}}
    run_dir = state.get("run_dir") or _run_dir(s.out, state.get("name", "task"))
    update["run_dir"] = run_dir
    try:
        validate_sources(state.get("reference_source", ""), state.get("candidate_source", ""))
        escape = escape_findings(state.get("candidate_source", ""))
        if escape:  # intent to escape or harm: the candidate is never run (nor the reference)
            _keep_sources(run_dir, state)
            return {**update, "triage": {"status": "escape", "classification": "intent to escape",
                                         "summary": escape[0].message},
                    "audit": Audit(passed=False, findings=escape)}
        update["backend"] = select_backend(s.backend).name
        tgts = targets(state)
        r = runner({**state, **update})
    except (TaskError, BackendUnavailable, TargetError) as e:
        return {**update, "error": str(e), "verdict": "invalid_input"}
    except SuiteError as e:
        return {**update, "error": f"reference.py: {e}", "verdict": "invalid_input"}
    _keep_sources(run_dir, state)
    for v in r.variants:
        v["replay"] = replay_command(run_dir, v["id"])
    emit("triage", f"suite of {len(r.variants)} variants built; running the candidate on all of them")
    with phase("triage_eval"):
        ev = r.evaluate(state["candidate_source"], r.ids())
    moved = fit_budget(r.variants, {v.variant_id: v.wall_s for v in ev.variants},
                       {v.variant_id for v in ev.variants if v.status == "pass"}, s.suite_budget)
    search = ev.subset(r.ids("search"))  # the best evaluation the loop compares against
    with phase("gpu_compile"):
        comp = r.compile_check(state["candidate_source"], ev.launch_signatures, tgts)
    with phase("diagnosis"):
        diag = diagnosis_of(ev, r.variants, r.ids("search"), comp, source_hash(state["candidate_source"]),
                            state["candidate_source"])
    if ev.status != "pass" or not comp.ok:  # the patcher will run: its retrieval may need the model
        _preload_embedding(s, diag)
    status, classification = ev.status, CLASSIFICATION[ev.status]
    if not comp.ok and ev.status in ("pass", "mismatch", "timeout"):
        # The interpreter ran it, a GPU compiler refuses it: a compile error of its own.
        bad = comp.failures()
        status = "compile_error"
        classification = "compile error for " + ", ".join(sorted({b.target for b in bad})) if bad else \
            "compile error"
    protected = protected_fingerprint(state["reference_source"], s.tolerance, r.suite_dir)
    return {**update, "suite": r.variants, "evaluations": r.evaluations, "targets": tgts, "protected": protected,
            "compile": comp.model_dump(),
            "triage": {"status": status, "classification": classification, "eval": ev.model_dump(),
                       "summary": diag["summary"]},
            "diagnosis": Diagnosis.model_validate(diag), "best_source": state["candidate_source"], "best_eval": search.model_dump(),
            "extra": {"suite_variants": len(r.variants), "startup_s": list(r.startup_s), "moved_to_heldout": moved}}


def _preload_embedding(s: Settings, diag: Mapping[str, Any]) -> None:
    """Start loading the retrieval model only when retrieval will need it (its query is not cached).

    The model load costs seconds of CPU (about 10 s on a loaded 2-core machine); a query whose
    embedding is on disk (``kb.embed``) needs no model. Started here, it overlaps the compile
    check and planning. ``Settings.embed_preload`` (``NEARMISS_EMBED_PRELOAD=0``) turns it off.
    """
    if s.check or s.patcher not in ("patterns", "auto") or not s.embed_preload:
        return
    if not (diag.get("summary") or diag.get("findings")):  # no text: symptom ranking only, no model
        return
    from kb import embed
    from kb.store import query_text

    if embed.loaded():
        return
    if not embed.is_cached(query_text(list(diag.get("symptoms", [])), diag.get("summary", ""), diag.get("findings"))):
        embed.preload()


def _keep_sources(run_dir: str, state: Mapping[str, Any]) -> None:
    """Keep the reference and the original candidate in the run folder (the replay commands read them)."""

    for name, key in (("reference.py", "reference_source"), ("original.py", "candidate_source")):
        path = os.path.join(run_dir, name)
        if not os.path.exists(path):
            write_file_atomic(path, state[key])


def _run_dir(out: str | None, name: str) -> str:
    """The run folder: ``out`` when it is prepared for this run (no report in it yet), else a fresh one."""

    if out and os.path.isdir(out) and not os.path.exists(os.path.join(out, "report.json")):
        return os.path.abspath(out)
    return make_run_dir(out, name)
