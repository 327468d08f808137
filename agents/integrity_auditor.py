"""Integrity auditor: static and dynamic anti-cheat checks, anti-degeneration, the repair process.

A candidate that passes the search suite is accepted only when this audit is clean. The
node gathers findings from the tools and decides nothing else:

- static checks of the source (``tools.integrity.static_checks``);
- an audit run in a fresh sandboxed process with the dynamic probes of
  ``tools.worker.dynamic_checks`` (``tools.integrity.audit.dynamic_findings``): for a repair on the first
  default variant plus the held-out variants the patcher never saw; for a candidate as given
  (triage ran it on the whole suite) on the default variants of one layout;
- for a repair: the original candidate runs after it in the same audit process, on the
  same variants, for the cost comparison (``tools.integrity.audit.degeneration_findings``);
- the reference, tolerances and suite hashed at triage are unchanged
  (``tools.integrity.audit.process_findings``);
- GPU compilation for the ``--targets`` and resource growth.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import runner, settings
from tools.integrity.audit import (
    audit_candidate,
    dynamic_findings,
    process_findings,
    protected_fingerprint,
    same_layout_variants,
)
from tools.phases import phase
from tools.records import Audit, CompileReport, EvalResult, Finding

if TYPE_CHECKING:
    from graph.state import State


def integrity_auditor(state: State) -> dict:
    """Audit the candidate under test (the last patch if it passed, else the original).

    Reads ``last_eval``, ``last_source``, ``candidate_source``, ``reference_source``, ``triage``, ``compile``,
    ``protected``, ``targets``, ``options``, ``iterations``, ``run_dir`` (and the runner's keys). Writes
    ``audit`` (a ``tools.records.Audit``) and ``evaluations``; on disk ``attempts/NN/audit.json`` (a repair)
    and ``integrity.log`` (error findings).
    """
    started = time.monotonic()
    last = EvalResult.model_validate(state["last_eval"]) if state.get("last_eval") is not None else None
    is_repair = last is not None and last.status == "pass"
    source = state["last_source"] if is_repair else state["candidate_source"]
    r = runner(state)
    early = _start_compile(r, source, last, state.get("targets", [])) if is_repair else None
    with phase("audit"):
        run = audit_candidate(r, source, state.get("reference_source"), state["candidate_source"] if is_repair else None,
                              None if is_repair else same_layout_variants(r.variants))
    findings: list[Finding] = list(run.findings)
    if is_repair:  # a structural repair of an Ascend resource limit (tiling loop) is not a rewrite
        from tools.repair.ascend_operators import ascend_allowance
        findings = ascend_allowance(findings, state, source)
    held = run.heldout
    if is_repair:
        seen_variants = held.variants + last.variants
    else:  # the original candidate: triage already ran it on the whole suite
        seen_variants = held.variants + EvalResult(**state["triage"]["eval"]).variants
    findings += process_findings(state.get("protected"), protected_fingerprint(
        state["reference_source"], settings(state).tolerance, r.suite_dir))
    # launches, input mutation and guard bands of the suite runs too (no audit facts there)
    findings += dynamic_findings(EvalResult(status=held.status, backend=held.backend, variants=seen_variants),
                                 r.backend.name)
    if is_repair:
        original = EvalResult(**state["triage"]["eval"])
        refused = {v.variant_id for v in seen_variants if v.unsupported} - set(original.unsupported())
        if refused:
            findings.append(Finding(check="drops_support", severity="error",
                                    message=f"the repair refuses inputs the candidate ran: {', '.join(sorted(refused))}"))
    original = CompileReport(**state["compile"]) if state.get("compile") else None
    if is_repair:
        sigs = {json.dumps(x, sort_keys=True): x for x in last.launch_signatures + held.launch_signatures}
        with phase("gpu_compile"):  # only the wait: the compile of the search launches overlapped the audit run
            comp = _finish_compile(r, source, sigs, early, state.get("targets", []))
        findings += compile_findings(comp, original)
    else:  # the original candidate: triage compiled it
        comp = original or CompileReport(targets=[])
        findings += compile_findings(comp, None)
    unsupported = sorted({v.variant_id for v in seen_variants if v.unsupported})
    # As given (--check), a refusal the candidate's own code raises on purpose (a `raise` or `assert`
    # line of the candidate, on inputs the reference accepts) fails unless the user accepts declared
    # limits; an exception from Triton or torch (tl.arange of a size that is not a power of two, a
    # block too large) is a limit of the kernel and stays a warning.
    refused = sorted({v.variant_id for v in seen_variants if v.unsupported and deliberate_refusal(v.message)})
    hard = not is_repair and not settings(state).accept_declared_limits and bool(refused)
    if unsupported:
        shown = refused if hard else unsupported
        findings.append(Finding(check="unsupported_inputs", severity="error" if hard else "warning",
                                message=f"raises on {len(shown)} derived variant(s) the reference accepts: "
                                        f"{', '.join(shown[:4])}"
                                        + (" (pass --accept-declared-limits to accept them)" if hard else "")))
    failing = [] if is_repair else EvalResult(**state["triage"]["eval"]).failing()
    for v in failing[:5]:
        findings.append(Finding(check="heldout", severity="error",
                                message=f"{v.variant_id}: {v.status}: {v.message[:200]}"))
    seen, unique = set(), []
    for f in findings:
        if f.check not in seen:
            seen.add(f.check)
            unique.append(f)
    audit = {"passed": not any(f.severity == "error" for f in unique),
             "findings": [f.model_dump() for f in unique], "heldout_status": held.status,
             "variants_checked": len(held.variants), "compile": comp.model_dump(),
             "wall_s": round(time.monotonic() - started, 3)}
    _log(state, source, unique)
    if is_repair:
        d = os.path.join(state["run_dir"], "attempts", f"{state.get('iterations', 0):02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "audit.json"), "w") as f:
            json.dump(audit, f, indent=1)
    return {"audit": Audit.model_validate(audit), "evaluations": r.evaluations}


def _start_compile(r, source: str, last: EvalResult, targets: list[str]):
    """Compile the repair's search-suite launches in a thread while the audit run goes on (another warm worker).

    Returns:
        ``(future, keys of the launches it compiles)``, or None when there is nothing to compile.
    """
    from concurrent.futures import ThreadPoolExecutor

    sigs = {json.dumps(x, sort_keys=True): x for x in last.launch_signatures}
    if not targets or not sigs:
        return None
    ex = ThreadPoolExecutor(1, thread_name_prefix="nearmiss-compile")
    fut = ex.submit(r.compile_check, source, list(sigs.values()), targets)
    ex.shutdown(wait=False)  # the thread ends with the compile; the result waits in the future
    return fut, set(sigs)


def _finish_compile(r, source: str, sigs: dict, early, targets: list[str]) -> CompileReport:
    """The repair's compile report: the early compile's, plus the held-out launches it did not cover.

    Same results, in the same order, as one ``compile_check`` over ``sigs`` (search launches first).
    """
    if early is None:
        return r.compile_check(source, list(sigs.values()), targets)
    fut, done = early
    first = fut.result()
    rest = [x for k, x in sigs.items() if k not in done]
    if not rest or first.error:
        return first
    more = r.compile_check(source, rest, targets)
    return CompileReport(targets=targets, results=first.results + more.results, error=more.error)


def deliberate_refusal(message: str) -> bool:
    """True when an exception's innermost candidate line (``tools.worker.main.describe_exception``) is a ``raise`` or ``assert``."""
    import re

    m = re.search(r"at candidate\.py:\d+: `([^`]*)`", message or "")
    return bool(m) and m.group(1).lstrip().startswith(("raise", "assert"))


def _log(state: Mapping[str, Any], source: str, findings: list[Finding]) -> None:
    """Append the audit's error findings to ``integrity.log`` in the run folder (one line each)."""
    errors = [f for f in findings if f.severity == "error"]
    if not errors or not state.get("run_dir"):
        return
    from agents.common import source_hash

    with open(os.path.join(state["run_dir"], "integrity.log"), "a") as f:
        for e in errors:
            f.write(f"attempt {state.get('iterations', 0)} {source_hash(source)} {e.check}: {e.message}\n")


#: A repair may not multiply a kernel's registers, spills or shared memory by more than this.
RESOURCE_GROWTH = 2.0


def compile_findings(comp: CompileReport, original: CompileReport | None) -> list[Finding]:
    """Findings from a compile report: failures per target, and resource growth against the original.

    Resources are compared per (kernel, target, launch signature). Registers and shared memory
    growing more than ``RESOURCE_GROWTH`` times is an error (a degenerate rewrite: unrolled
    loops, a large scratch buffer); spill growth is a warning only, because spilling flips
    with small changes in kernels with very wide blocks (shared case 02: one re-mask line
    takes sm_90 spills from 1820 to 16168 bytes in the reference fix itself).
    """
    out = []
    if comp.error:
        out.append(Finding(check="gpu_compile", severity="error", message=comp.error))
    for b in comp.failures():
        out.append(Finding(check="gpu_compile", severity="error",
                           message=f"{b.kernel} does not compile for {b.target}"
                                   f"{f' (line {b.line})' if b.line else ''}: {(b.error or '')[:300]}"))
    if original is None:
        return out
    before = {(r.kernel, r.target, r.signature): r for r in original.results if r.ok}
    for r in comp.results:
        o = before.get((r.kernel, r.target, r.signature))
        if not r.ok or o is None:
            continue
        for field, label, severity in (("registers", "registers", "error"),
                                       ("shared_bytes", "shared memory bytes", "error"),
                                       ("spill_bytes", "spill bytes", "warning")):
            a, b = getattr(o, field), getattr(r, field)
            if a is not None and b is not None and b > max(RESOURCE_GROWTH * a, a + 16):
                out.append(Finding(check="resource_growth" if severity == "error" else "spill_growth",
                                   severity=severity,
                                   message=f"{r.kernel} on {r.target}: {label} {a} -> {b} "
                                           f"(more than {RESOURCE_GROWTH:g}x the candidate's)"))
    return out
