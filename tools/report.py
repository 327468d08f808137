"""Run folder output: report.json (schema ``nearmiss.report/1``), report.md, files written atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

SCHEMA = "nearmiss.report/1"
STATUSES = ("repaired", "already_correct", "failing", "not_repaired", "rejected", "invalid_input")


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
