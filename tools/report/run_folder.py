"""Run folder output: report.json (schema ``nearmiss.report/1``), report.md, files written atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from typing import Any, Literal, get_args

SCHEMA = "nearmiss.report/1"
Status = Literal["repaired", "already_correct", "failing", "not_repaired", "rejected", "invalid_input"]
"""A run's verdict (ARCHITECTURE §2-3)."""
STATUSES: tuple[str, ...] = get_args(Status)
EXIT_CODES: dict[str, int] = {"repaired": 0, "already_correct": 0, "failing": 1, "not_repaired": 1, "rejected": 1,
                              "invalid_input": 2}
"""Process exit code of each verdict (ARCHITECTURE §2): 0 repaired or correct, 1 not, 2 invalid input."""


def build_report(state: dict, status: Status, reason: str, repaired: str | None, settings: Any = None) -> dict:
    """The report dict (ARCHITECTURE §3, schema ``nearmiss.report/1``) of a finished run.

    Args:
        state: the graph state at the end of the run (``graph.state.State``).
        status: the verdict, one of ``STATUSES``.
        reason: the one-line reason of the last decision.
        repaired: the accepted repair's source, or None.
        settings: the run's ``tools.settings.Settings`` (for the LLM endpoint in the ``llm`` section).

    Returns:
        A JSON-ready dict: the state's typed records (``tools.records``) are dumped to dicts.
    """
    from tools.records import plain

    audit = state.get("audit") or {"passed": None, "findings": []}
    attempts = list(state.get("attempts", []))
    triage = dict(state.get("triage") or {})
    triage.pop("eval", None)
    run_dir = state.get("run_dir")
    extra = state.get("extra") or {}
    return plain({
        "schema": SCHEMA,
        "name": state.get("name", ""),
        "status": status,
        "reason": reason,
        "backend": state.get("backend"),
        "iterations": state.get("iterations", 0),
        "evaluations": state.get("evaluations", 0),
        "wall_s": round(time.time() - state.get("started_at", time.time()), 3),
        "tokens": state.get("tokens") or {"prompt": 0, "completion": 0, "total": 0},
        "triage": triage,
        "diagnosis": state.get("diagnosis") or {},
        "integrity": {"passed": audit.get("passed"), "findings": audit.get("findings", []),
                      "wall_s": audit.get("wall_s")},
        "targets": state.get("targets", []),
        "compile": {"candidate": state.get("compile"), "repair": audit.get("compile") if repaired else None},
        "attempts": attempts,
        "reviews": list(state.get("reviews", [])),
        "decisions": list(state.get("decisions", [])),
        "llm": _llm_section(state, settings),
        "suite_variants": extra.get("suite_variants"),
        "suite": state.get("suite") or [],
        "startup_s": extra.get("startup_s"),
        "startup_s_median": sorted(extra["startup_s"])[len(extra["startup_s"]) // 2] if extra.get("startup_s") else None,
        "repaired_path": f"{run_dir}/repaired.py" if repaired and run_dir else None,
        "error": state.get("error") or None,
    })


def _llm_section(state: dict, settings: Any) -> dict | None:
    """Endpoint and per-call token records of the LLM patcher, or None when it was never called."""
    calls = list(state.get("llm_calls", []))
    if not calls:
        return None
    model, replay = getattr(settings, "llm_model", None), getattr(settings, "llm_replay", None)
    if replay and not model:  # a replayed run names the model of the recording
        from tools.llm.record import ReplayError, recorded_model

        try:
            model = recorded_model(replay)
        except ReplayError:
            pass
    return {"model": model, "base_url": getattr(settings, "llm_base_url", None),
            "record": getattr(settings, "llm_record", None), "replay": replay, "calls": calls}


def write_atomic(directory: str, files: dict[str, str]) -> None:
    """Write a folder of text files so that it appears complete or not at all.

    The files go to a temporary sibling folder that is then renamed into place; an existing
    folder of the same name is replaced.
    """
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    for name, text in files.items():
        with open(os.path.join(tmp, name), "w") as f:
            f.write(text)
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.replace(tmp, directory)


def write_file_atomic(path: str, text: str) -> None:
    """Write one text file atomically (temporary file, then rename)."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def render_markdown(report: dict, diff: str = "") -> str:
    """Human-readable report: verdict, diagnosis, diff, checks, cost."""
    lines = [f"# nearmiss report: {report.get('name', '')}", "",
             f"**Status: {report['status']}** — {report.get('reason', '')}", "",
             f"- backend: {report.get('backend')}",
             f"- iterations: {report.get('iterations')}, evaluations: {report.get('evaluations')}, "
             f"wall: {report.get('wall_s', 0):.1f} s, tokens: {report.get('tokens', {}).get('total', 0)}", ""]
    tri = report.get("triage") or {}
    if tri:
        lines += ["## Triage", "", f"{tri.get('classification', '')}: {tri.get('summary', '')}", ""]
    diag = report.get("diagnosis") or {}
    if diag:
        lines += ["## Diagnosis", "", f"Symptoms: {', '.join(diag.get('symptoms', [])) or 'none'}", ""]
        fault = diag.get("fault_class") or {}
        if fault.get("name"):
            lines += [f"Likely fault: **{fault['name']}** — {fault.get('reading', '')} "
                      f"(from {', '.join(fault.get('because', [])) or 'no symptom'})", ""]
        lines += [f"- {f}" for f in diag.get("findings", [])] + [""]
        suite = {v["id"]: v for v in report.get("suite", [])}
        small = diag.get("smallest_failing")
        if small and small in suite:
            v = suite[small]
            lines += [f"Smallest failing input: `{small}` — {v.get('description', '')}; shapes {v.get('shapes')}, "
                      f"dtypes {v.get('dtypes')}", ""]
        replays = [suite[i] for i in diag.get("failing", [])[:6] if i in suite and suite[i].get("replay")]
        if replays:
            n = len(diag.get("failing", []))
            lines += [f"Replay a failing variant ({'the first ' + str(len(replays)) + ' of ' + str(n) if n > len(replays) else 'all ' + str(n)}; "
                      "exit 0 pass, 1 fail; `--source FILE` replays another version):", "", "```"]
            lines += [v["replay"] for v in replays] + ["```", ""]
    if diff:
        lines += ["## Repair", "", "```diff", diff.rstrip(), "```", ""]
    comp = report.get("compile") or {}
    rows = []
    for who in ("candidate", "repair"):
        for r in ((comp.get(who) or {}).get("results") or []):
            rows.append(f"| {who} | {r['kernel']} | {r['target']} | {'ok' if r['ok'] else ('skipped' if r['ok'] is None else 'FAILED')} "
                        f"| {r.get('registers') if r.get('registers') is not None else ''} "
                        f"| {r.get('spill_bytes') if r.get('spill_bytes') is not None else ''} "
                        f"| {r.get('shared_bytes') if r.get('shared_bytes') is not None else ''} "
                        f"| {r.get('num_warps') or ''} | {r.get('ub_bytes') if r.get('ub_bytes') is not None else ''} "
                        f"| {r.get('note') or ''} |")
    if rows:
        lines += ["## GPU compilation", "", f"Targets: {', '.join(report.get('targets') or [])}", "",
                  "| of | kernel | target | compiles | registers | spill bytes | shared bytes | warps | UB bytes | note |",
                  "|---|---|---|---|---|---|---|---|---|---|", *rows, ""]
        errs = [r for who in ("candidate", "repair") for r in ((comp.get(who) or {}).get("results") or [])
                if r["ok"] is False]
        lines += [f"- {r['kernel']} ({r['target']}, line {r.get('line')}): {r['error'][:400]}" for r in errs]
        lines.append("")
    integ = report.get("integrity") or {}
    lines += ["## Integrity", "", f"passed: {integ.get('passed')}"
              + (f" (audit {integ['wall_s']:.1f} s)" if integ.get("wall_s") is not None else ""), ""]
    if integ.get("findings"):
        lines += ["| severity | check | finding |", "|---|---|---|"]
        lines += [f"| {f['severity']} | {f['check']} | {f['message'].replace('|', '/')} |" for f in integ["findings"]]
        lines.append("")
    if report.get("attempts"):
        lines += ["## Attempts", "", "| # | operator | edit | search suite | audit |", "|---|---|---|---|---|"]
        for a in report["attempts"]:
            lines.append(f"| {a['n']} | {a['operator']} | {a['description']} | {a['status']} | {a.get('audit', '')} |")
        lines.append("")
    llm = report.get("llm") or {}
    if llm.get("calls"):
        lines += ["## LLM calls", "", f"Model {llm.get('model')} at {llm.get('base_url')}", "",
                  "| # | prompt | completion | total | usage from | outcome |", "|---|---|---|---|---|---|"]
        lines += [f"| {c['n']} | {c.get('prompt_tokens', 0)} | {c.get('completion_tokens', 0)} | "
                  f"{c.get('total_tokens', 0)} | {c.get('usage_source', '')} | {c['outcome']} |" for c in llm["calls"]]
        lines.append("")
    return "\n".join(lines)


def write_run_folder(run_dir: str, report: dict, original: str, repaired: str | None, diff: str = "") -> None:
    """Write ``original.py``, ``repaired.py`` (if any), ``report.json`` and ``report.md`` into ``run_dir``."""
    write_file_atomic(os.path.join(run_dir, "original.py"), original)
    if repaired is not None:
        write_file_atomic(os.path.join(run_dir, "repaired.py"), repaired)
    write_file_atomic(os.path.join(run_dir, "report.json"), json.dumps(report, indent=1))
    write_file_atomic(os.path.join(run_dir, "report.md"), render_markdown(report, diff))
