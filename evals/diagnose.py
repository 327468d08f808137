"""Diagnosis table: ``python -m evals.diagnose [--cases DIR]``.

For each case folder (``reference.py`` + ``candidate.py``) it runs ``graph.run --check``
(triage only: the full suite and the diagnosis, no repair) and prints the symptoms, the
localisation relations and the likely fault class, beside the case's own label when the
folder has one (``case.toml`` ``fault``, or a ``case.json`` ``bug_class``), as a markdown
table. Nothing is repaired; the labels are only printed, never read by the product.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _label(case_dir: str) -> str:
    toml = os.path.join(case_dir, "case.toml")
    if os.path.exists(toml):
        with open(toml, "rb") as f:
            return str(tomllib.load(f).get("fault", ""))
    js = os.path.join(case_dir, "case.json")
    if os.path.exists(js):
        with open(js) as f:
            return str(json.load(f).get("bug_class", ""))[:90]
    return ""


def diagnose_case(case_dir: str, work: str, timeout: float = 900) -> dict:
    """Run ``graph.run --check`` on one case and return its diagnosis row."""
    name = os.path.basename(case_dir.rstrip("/"))
    task = os.path.join(work, name)
    os.makedirs(task)
    for f in ("reference.py", "candidate.py"):
        shutil.copy(os.path.join(case_dir, f), task)
    out = os.path.join(work, "out-" + name)
    p = subprocess.run([sys.executable, "-m", "graph.run", task, "--check", "--quiet", "--targets", "none",
                        "--out", out], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    row = {"case": name, "exit": p.returncode, "label": _label(case_dir)}
    rep = os.path.join(out, "report.json")
    if os.path.exists(rep):
        with open(rep) as f:
            r = json.load(f)
        d = r.get("diagnosis") or {}
        row.update(status=r["status"], symptoms=d.get("symptoms", []),
                   relations=[f"{x['name']}{':' + x['detail'] if x.get('detail') else ''}"
                              for x in d.get("localisation", [])],
                   fault=(d.get("fault_class") or {}).get("name", ""), smallest=d.get("smallest_failing"),
                   wall_s=r.get("wall_s"))
    return row


def main(argv: list[str] | None = None) -> int:
    """Print the diagnosis table of every case folder."""
    ap = argparse.ArgumentParser(prog="python -m evals.diagnose")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "diagnosis.json"))
    a = ap.parse_args(argv)
    names = sorted(d for d in os.listdir(a.cases) if os.path.isfile(os.path.join(a.cases, d, "candidate.py")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="nearmiss-diag-") as work:
        for n in names:
            rows.append(diagnose_case(os.path.join(a.cases, n), work))
            print(f"{n}: exit {rows[-1]['exit']}, {rows[-1].get('fault', '?')}", file=sys.stderr)
    print("| case | exit | fault class | relations | symptoms | smallest failing | label |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['case']} | {r['exit']} | {r.get('fault', '')} | {', '.join(r.get('relations', []))} | "
              f"{', '.join(r.get('symptoms', []))} | {r.get('smallest') or ''} | {r['label']} |")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
