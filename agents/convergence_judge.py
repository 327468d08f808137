"""Convergence judge: accept, retry (re-diagnose or re-patch), revert to the best so far, or abort.

Every decision carries a one-line reason that reaches the report (``decisions``). Guards:
attempt cap (``max_iterations``), evaluation cap (``max_evaluations``), wall-clock budget
(``time_budget``), token budget (``token_budget``; the LLM patcher also refuses a call that
would overrun it), no untried patch left (the patcher reports ``exhausted``), stagnation
(the best error not improved in ``stagnation_k`` consecutive attempts), oscillation (a
patch whose result equals the original or an earlier attempt's source, i.e. it undoes an
earlier edit) and regression (a worse patch is dropped: the next one starts from the best
so far).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import forget_runner, runner_stats, settings, source_hash
from kb import learn
from tools.phases import phase
from tools.records import EvalResult
from tools.repair.source_edit import unified_diff
from tools.report.run_folder import Status, build_report, write_run_folder

if TYPE_CHECKING:
    from graph.state import State


def convergence_judge(state: State) -> dict:
    """Decide what happens next; on accept or abort, write the report and the run folder.

    Reads ``error``, ``options``, ``triage``, ``audit``, ``iterations``, ``pending_patch``, ``last_eval``,
    ``last_source``, ``best_eval``, ``best_source``, ``candidate_source``, ``diagnosis``, ``since_best``,
    ``exhausted``, ``reason``, ``evaluations``, ``started_at``, ``tokens``, ``attempts``, ``decisions``, and
    for the report every key ``tools.report.run_folder.build_report`` reads. Writes ``attempts`` (one ``Attempt`` per
    applied patch), ``pending_patch``, ``last_eval``, ``last_source`` (cleared), ``best_source``,
    ``best_eval``, ``since_best``, ``route``, ``reason``, ``decisions``; at the end also ``verdict``,
    ``report`` and ``repaired_source``, and the run folder on disk (``tools.report.run_folder.write_run_folder``).
    """
    s = settings(state)
    if state.get("error"):
        return _finish(state, {}, "invalid_input", state["error"])
    triage = state.get("triage", {})
    audit: Mapping[str, Any] = state.get("audit") or {}
    if triage.get("status") == "escape":  # agents.triage: never run, never repaired
        return _finish(state, {}, "rejected", f"intent to escape, the candidate was not run: {triage.get('summary', '')}")
    if triage.get("status") == "pass" and not state.get("iterations"):
        if audit.get("passed"):
            return _finish(state, {}, "already_correct", "the candidate passes the whole suite and the audit")
        return _finish(state, {}, "rejected", "the candidate passes the suite but fails the integrity audit")
    if s.check:
        return _finish(state, {}, "failing", f"{triage.get('classification')}: {triage.get('summary', '')}")

    update: dict = {}
    patch = state.get("pending_patch")
    last = state.get("last_eval")
    n = state.get("iterations", 0)
    if patch is not None and last is not None:
        ev = EvalResult.model_validate(last)
        last_source = state["last_source"]
        assert last_source is not None, "the hardware runner writes last_source with last_eval"
        best = EvalResult(**state["best_eval"])
        record = {"n": n, "operator": patch["operator"], "description": patch["description"],
                  "line": patch.get("line"), "status": ev.status, "failing_variants": len(ev.failing()),
                  "audit": "" if not audit else ("clean" if audit.get("passed") else "rejected"),
                  "source_hash": source_hash(last_source), "diff": patch.get("diff", "")}
        update["attempts"] = [record]
        update["pending_patch"] = None
        update["last_eval"] = None
        update["last_source"] = None
        if ev.passed and audit.get("passed"):
            with phase("learn"):
                record["learned"] = learn.record(patch, state.get("diagnosis") or {}, state["best_source"], enabled=s.learn)
            return _finish(state, update, "repaired",
                           f"attempt {n} ({patch['operator']}) passes the search suite and the audit",
                           repaired=last_source)
        earlier = _earlier_source(state, record["source_hash"])
        if earlier:
            return _finish(state, update, "not_repaired",
                           f"oscillation: attempt {n} returns the candidate to the source of {earlier} "
                           "(it undoes an earlier edit)")
        if not ev.passed and _improves(ev.score(), best.score()):
            update["best_source"] = last_source
            update["best_eval"] = ev.model_dump()
            update["since_best"] = 0
            update["route"] = "retry_plan"
            update["reason"] = (f"attempt {n} improves ({len(ev.failing())} failing variants, "
                                f"was {len(best.failing())}): keep it and re-diagnose")
        else:
            update["since_best"] = state.get("since_best", 0) + 1
            update["route"] = "retry_patch"
            if ev.passed:
                verdict = "fails the audit"
            elif ev.score() > best.score():
                verdict = (f"regresses ({len(ev.failing())} failing variants, best so far "
                           f"{len(best.failing())})")
            else:
                verdict = "does not improve"
            update["reason"] = f"attempt {n} {verdict}: revert to the best so far"
            if update["since_best"] >= s.stagnation_k:
                return _finish(state, update, "not_repaired",
                               f"stagnation: the best error has not improved in {s.stagnation_k} consecutive "
                               f"attempts (last: {update['reason']})")
    elif state.get("exhausted"):
        return _finish(state, update, "not_repaired", state.get("reason") or "no untried patch left")

    if n >= s.max_iterations:
        return _finish(state, update, "not_repaired", f"attempt cap reached ({s.max_iterations})")
    if state.get("evaluations", 0) >= s.max_evaluations:
        return _finish(state, update, "not_repaired",
                       f"evaluation cap reached ({s.max_evaluations} sandboxed processes)")
    if time.time() - state.get("started_at", time.time()) > s.time_budget:
        return _finish(state, update, "not_repaired", f"time budget spent ({s.time_budget:.0f} s)")
    used = (state.get("tokens") or {}).get("total", 0)
    if used >= s.token_budget:
        return _finish(state, update, "not_repaired", f"token budget spent ({used} of {s.token_budget} tokens)")
    update.setdefault("route", "retry_patch")
    update.setdefault("reason", "no patch was applied: ask the patcher again")
    update["decisions"] = [{"n": n, "route": update["route"], "reason": update["reason"]}]
    return update


def _earlier_source(state: Mapping[str, Any], h: str) -> str | None:
    """Which earlier version (``the original`` or ``attempt N``) has content hash ``h``, if any."""
    if h == source_hash(state.get("candidate_source", "")):
        return "the original"
    return next((f"attempt {a['n']}" for a in state.get("attempts", []) if a.get("source_hash") == h), None)


def _finish(state: Mapping[str, Any], update: dict, status: Status, reason: str, repaired: str | None = None) -> dict:
    state = {**state, **update, "attempts": list(state.get("attempts", [])) + list(update.get("attempts", []))}
    if status == "not_repaired" and any(a.get("audit") == "rejected" for a in state["attempts"]):
        status, reason = "rejected", reason + "; every patch that passed the search suite failed the integrity audit"
    route = "accept" if status in ("repaired", "already_correct") else "abort"
    state["decisions"] = list(state.get("decisions", [])) + [{"n": state.get("iterations", 0), "route": route,
                                                              "reason": reason}]
    run_dir = state.get("run_dir")
    state["extra"] = {**(state.get("extra") or {}), **(runner_stats(run_dir) if run_dir else {})}
    report = build_report(state, status, reason, repaired, settings(state))
    diff = unified_diff(state.get("candidate_source", ""), repaired) if repaired else ""
    if run_dir:
        with phase("report"):
            write_run_folder(run_dir, report, state.get("candidate_source", ""), repaired, diff)
        forget_runner(run_dir)
    return {**update, "verdict": status, "reason": reason, "route": route, "report": report,
            "repaired_source": repaired, "decisions": [report["decisions"][-1]]}


def _improves(new: tuple[int, float], old: tuple[int, float]) -> bool:
    """Fewer failing variants, or as many with at least ten times less error (summed log10 lower by 1)."""
    return new[0] < old[0] or (new[0] == old[0] and new[1] < old[1] - 1.0)
