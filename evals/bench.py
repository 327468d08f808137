"""Benchmark: run the debugger on every case of ``evals/cases`` and print Debug Pass@1.

Usage: ``python -m evals.bench [--cases DIR] [--limit N] [--extra "ARGS"] [--suite-only]
[--patcher auto|patterns|llm] [--mode debug|regenerate] [--k 3] [--profile]``

With ``--profile`` it also prints the seconds of each phase of every run (``phases`` of
report.json, ``tools.phases``) per case and as a median, with the ratio of the run's wall
time to one warm full-suite evaluation of the candidate (its ``triage_eval`` phase), and
writes ``evals/results/profile.md`` and ``profile.json`` (``--out X.json``: ``X-profile.*``).

With ``--suite-only`` it repairs nothing: per case it prints the suite size, the time to
evaluate the candidate on it and the evaluation overhead (``evals.suite_timing``), and writes
``evals/results/suite-warm.json`` (or ``suite-cold.json`` under ``NEARMISS_WARM=0``).

Each case folder holds ``reference.py``, ``candidate.py`` and ``fixed.py`` (the expected
fix). Only the first two are copied into the task folder the product sees. Debug Pass@1
is the fraction of cases whose run exits 0 with status ``repaired`` (one run per case: the
offline engine is deterministic). Per case it prints status, attempts, evaluations and wall
seconds, and writes ``evals/results/latest.json``. ``--mode regenerate`` adds the regenerate
baseline (``evals.regenerate``): k fresh generations per case from the same model, compared
with Debug Pass@1 and tokens per success in one markdown table and a PNG beside ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from rich.console import Console
from rich.table import Table

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_case(case_dir: str, work: str, extra: list[str], timeout: float) -> dict:
    """Run ``graph.run`` on one case; return its row (status, exit code, attempts, evaluations, wall seconds)."""
    name = os.path.basename(case_dir.rstrip("/"))
    task = os.path.join(work, "task-" + name)
    os.makedirs(task)
    for f in ("reference.py", "candidate.py"):
        if os.path.exists(os.path.join(case_dir, f)):
            shutil.copy(os.path.join(case_dir, f), task)
    out = os.path.join(work, "out-" + name)
    t0 = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cg = _cpu_cgroup(name)
    try:
        p = subprocess.run([sys.executable, "-m", "graph.run", task, "--out", out, "--quiet", *extra], cwd=ROOT,
                           capture_output=True, text=True, timeout=timeout,
                           preexec_fn=(lambda: _join_cgroup(cg)) if cg else None)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    wall = time.monotonic() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = _cgroup_cpu_s(cg)
    if cpu is None:  # reaped children only: a warm worker killed at exit is not counted
        cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    status = {"timeout": "timeout", 2: "invalid_input"}.get(rc, "error")
    row = {"case": name, "exit": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
           "load1": round(os.getloadavg()[0], 2), "status": status}
    if rc == 2:
        row["error"] = (p.stderr.strip().splitlines() or [""])[-1][:200]
    rep = os.path.join(out, "report.json")
    if os.path.exists(rep):
        with open(rep) as f:
            r = json.load(f)
        row.update(status=r["status"], attempts=r["iterations"], evaluations=r["evaluations"],
                   operators=[a["operator"] for a in r["attempts"]], startup_s=r.get("startup_s"),
                   tokens=r["tokens"]["total"], phases=(r.get("phases") or {}).get("total_s"),
                   fault_class=((r.get("diagnosis") or {}).get("fault_class") or {}).get("name"))
    return row


#: cgroup-v1 CPU accounting controller; when writable, each run's CPU seconds include every process it starts
CPUACCT = "/sys/fs/cgroup/cpuacct"


def _cpu_cgroup(name: str) -> str | None:
    """A fresh cpuacct cgroup for one run, or None when the machine does not let us create one."""
    path = os.path.join(CPUACCT, f"nearmiss-bench-{os.getpid()}-{name}")
    try:
        os.makedirs(path, exist_ok=True)
        return path if os.access(os.path.join(path, "cgroup.procs"), os.W_OK) else None
    except OSError:
        return None


def _join_cgroup(path: str) -> None:
    """In the child before exec: move this process into ``path`` (its descendants follow)."""
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    except OSError:
        pass


def _cgroup_cpu_s(path: str | None) -> float | None:
    """User+system CPU seconds of every process that ran in the cgroup; the cgroup is removed."""
    if not path:
        return None
    try:
        with open(os.path.join(path, "cpuacct.usage")) as f:
            ns = int(f.read().strip())
    except (OSError, ValueError):
        ns = None
    for _ in range(50):  # its processes may still be exiting
        try:
            os.rmdir(path)
            break
        except OSError:
            time.sleep(0.1)
    return None if ns is None else ns / 1e9


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and write ``evals/results/latest.json``."""
    ap = argparse.ArgumentParser(prog="python -m evals.bench")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--extra", default="", help="arguments passed to graph.run")
    ap.add_argument("--out", default=None, help="result file (default evals/results/latest.json)")
    ap.add_argument("--suite-only", action="store_true", help="time the suite per case; repair nothing")
    ap.add_argument("--mode", choices=["debug", "regenerate", "compare"], default="debug",
                    help="regenerate: also k fresh generations per case from the same model, compared with debug; "
                         "compare: Debug with --patcher auto (offline engine, then the model) against Regenerate "
                         "Pass@1..k, tokens and wall per success (evals.regenerate.compare_run)")
    ap.add_argument("--k", type=int, default=3, help="generations per case in --mode regenerate")
    ap.add_argument("--jobs", type=int, default=1, help="--mode compare: cases run at a time (threads)")
    ap.add_argument("--debug-model-only", action="store_true",
                    help="--mode compare: also a Debug arm with --patcher llm (the model alone, no offline engine)")
    ap.add_argument("--model-only-extra", default="", help="--mode compare: more graph.run arguments for that arm")
    ap.add_argument("--patcher", choices=["auto", "patterns", "llm"], default=None, help="passed to graph.run")
    ap.add_argument("--profile", action="store_true",
                    help="print the seconds of each phase per case and their median; write evals/results/profile.md "
                         "and profile.json (or beside --out)")
    a = ap.parse_args(argv)
    extra = a.extra.split() + (["--patcher", a.patcher] if a.patcher else [])
    if not a.suite_only and (a.mode in ("regenerate", "compare") or a.patcher in ("llm", "auto")):
        from tools.llm.client import LLMConfigError, config_from_env

        try:
            config_from_env()
        except LLMConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    names = sorted(d for d in os.listdir(a.cases) if os.path.isdir(os.path.join(a.cases, d)))
    if a.limit:
        names = names[: a.limit]
    if a.suite_only:
        from evals.suite_timing import run

        summary = run(a.cases, names, Console())
        default = "suite-warm.json" if summary["warm_worker"] else "suite-cold.json"
        _write(a.out or os.path.join(HERE, "results", default), summary)
        return 0
    a.out = a.out or os.path.join(HERE, "results", "latest.json")
    work = tempfile.mkdtemp(prefix="nearmiss-bench-")
    if a.mode == "compare":  # per case: Debug, Regenerate k, optionally Debug model-only (evals.regenerate)
        from evals.regenerate import compare_run

        try:
            return compare_run(a.cases, names, work, a.k, a.extra.split(), a.timeout, a.out, Console(), a.jobs,
                               a.debug_model_only, a.model_only_extra.split())
        finally:
            shutil.rmtree(work, ignore_errors=True)
    console = Console()
    rows = []
    for name in names:
        rows.append(run_case(os.path.join(a.cases, name), work, extra, a.timeout))
        r = rows[-1]
        console.print(f"{name}: {r['status']} ({r['wall_s']} s)", style="dim")
    passed = sum(r["status"] == "repaired" and r["exit"] == 0 for r in rows)
    table = Table(title=f"Debug Pass@1: {passed}/{len(rows)}")
    for col in ("case", "status", "attempts", "evaluations", "wall s", "operators"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["case"], r["status"], str(r.get("attempts", "")), str(r.get("evaluations", "")),
                      f"{r['wall_s']:.1f}", ", ".join(r.get("operators", [])))
    console.print(table)
    summary = {"pass_at_1": passed / len(rows) if rows else 0.0, "passed": passed, "cases": len(rows),
               "median_wall_s": statistics.median([r["wall_s"] for r in rows]) if rows else 0.0,
               "median_startup_s": statistics.median([s for r in rows for s in (r.get("startup_s") or [])] or [0.0]),
               "rows": rows, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    console.print(f"Debug Pass@1 = {summary['pass_at_1']:.3f}; median wall {summary['median_wall_s']:.1f} s per case; "
                  f"median sandbox start-up {summary['median_startup_s']:.2f} s per process")
    _write(a.out, summary)
    if a.profile:
        from evals.profile import profile_tables

        default = os.path.join(HERE, "results", "latest.json")
        base = os.path.join(HERE, "results", "profile") if a.out == default else os.path.splitext(a.out)[0] + "-profile"
        md, prof = profile_tables(rows)
        console.print(md, markup=False, highlight=False)
        _write(base + ".json", prof)
        with open(base + ".md", "w") as f:
            f.write(md)
        console.print(f"profile written to {base}.md and {base}.json")
    rc = 0
    if a.mode == "regenerate":
        from evals.regenerate import compare

        rc = compare(a.cases, names, rows, work, a.k, a.extra.split(), a.timeout, a.out, a.patcher, console)
    shutil.rmtree(work, ignore_errors=True)
    return rc


def _write(path: str, summary: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
