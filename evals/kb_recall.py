"""Retrieval recall of the knowledge base: is the right pattern in the top 3 for each labelled case?

Usage: ``python -m evals.kb_recall [--cases DIR] [--labels FILE] [-k 3] [--json]``

A case is labelled by ``case.toml`` in its folder (``pattern = "<id>"``, eval data the
product never reads) or by ``--labels FILE``, a TOML table mapping case folder names to
pattern ids (``evals/shared_case_labels.toml`` for the shared cases). For each labelled
case the real graph nodes run triage and the instrumentation planner on
``reference.py`` / ``candidate.py`` (sandboxed, Triton interpreter), and the offline
engine's ranking (``kb.engine.rank``: retrieval plus what the patterns' operators find in
the candidate; learned entries are not counted) orders the patterns. Prints one row per
case, recall@k, the seconds to build the in-memory index (loading the embedding model)
and per retrieval. Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import tomllib

from agents.instrumentation_planner import instrumentation_planner
from agents.triage import triage
from kb.engine import rank
from kb.store import KBStore

HERE = os.path.dirname(os.path.abspath(__file__))


def labels_for(cases: str, labels_file: str | None) -> dict[str, str]:
    """Case folder name -> pattern id, from ``--labels`` or each folder's ``case.toml``.

    Raises:
        ValueError: the labels file is not a TOML table of strings.
    """
    if labels_file:
        with open(labels_file, "rb") as f:
            table = tomllib.load(f)
        if not all(isinstance(v, str) for v in table.values()):
            raise ValueError(f"{labels_file}: every value must be a pattern id string")
        return dict(table)
    out = {}
    for name in sorted(os.listdir(cases)):
        path = os.path.join(cases, name, "case.toml")
        if os.path.exists(path):
            with open(path, "rb") as f:
                pat = tomllib.load(f).get("pattern")
            if isinstance(pat, str):
                out[name] = pat
    return out


def diagnose_case(case_dir: str, work: str) -> dict:
    """Triage and diagnose one case with the graph's own nodes; returns the diagnosis (empty when it passes)."""
    with open(os.path.join(case_dir, "reference.py")) as f:
        ref = f.read()
    with open(os.path.join(case_dir, "candidate.py")) as f:
        cand = f.read()
    state = {"candidate_source": cand, "reference_source": ref, "name": os.path.basename(case_dir),
             "options": {"out": work, "targets": "none", "backend": "interpreter"}}
    state.update(triage(state))
    if state.get("error"):
        raise ValueError(f"{case_dir}: {state['error']}")
    if state["triage"].get("status") == "mismatch":
        state.update(instrumentation_planner(state))
    return {**(state.get("diagnosis") or {}), "source": cand}


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m evals.kb_recall``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m evals.kb_recall", description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=os.path.join(HERE, "cases"), help="folder of case folders")
    ap.add_argument("--labels", help="TOML file: case folder name = pattern id (default: each case.toml)")
    ap.add_argument("-k", type=int, default=3, help="rank cut-off (default 3)")
    ap.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    a = ap.parse_args(argv)
    try:
        labels = labels_for(a.cases, a.labels)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as e:
        print(f"kb_recall: {e}", file=sys.stderr)
        return 2
    missing = [n for n in labels if not os.path.isdir(os.path.join(a.cases, n))]
    if not labels or missing:
        print(f"kb_recall: {a.cases}: no labelled cases" + (f" (missing: {', '.join(missing)})" if missing else ""),
              file=sys.stderr)
        return 2
    rows = []
    t0 = time.perf_counter()
    store = KBStore(":memory:")  # the shipped patterns only: learned entries of earlier runs must not help
    store.ensure_index()
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="kb_recall-") as work:
        for name, want in labels.items():
            try:
                diag = diagnose_case(os.path.join(a.cases, name), os.path.join(work, name))
            except (OSError, ValueError) as e:
                print(f"kb_recall: {e}", file=sys.stderr)
                return 2
            t0 = time.perf_counter()
            _, ranked, dense = rank(diag.pop("source"), diag, None, store)
            secs = time.perf_counter() - t0
            top = [p["id"] for _, p, _ in ranked[: a.k]]
            pos = next((i + 1 for i, (_, p, _) in enumerate(ranked) if p["id"] == want), None)
            rows.append({"case": name, "label": want, "hit": want in top, "rank": pos, "top": top,
                         "symptoms": diag.get("symptoms", []), "retrieval_s": round(secs, 3), "dense": dense})
            if not a.json:
                print(f"{'HIT ' if want in top else 'MISS'} {name:<34} {want:<24} rank {pos}  top {top}  "
                      f"symptoms {diag.get('symptoms', [])}  {secs:.2f} s", flush=True)
    store.close()
    hits = sum(r["hit"] for r in rows)
    secs = [r["retrieval_s"] for r in rows]
    summary = {f"recall_at_{a.k}": hits / len(rows), "hits": hits, "cases": len(rows),
               "index_build_s": round(build_s, 2), "retrieval_s_median": sorted(secs)[len(secs) // 2]}
    if a.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
    else:
        print(f"recall@{a.k} = {summary[f'recall_at_{a.k}']:.3f} ({hits}/{len(rows)}); in-memory index with the "
              f"embedding model loaded in {build_s:.1f} s, then retrieval median {summary['retrieval_s_median']} s "
              "per diagnosis")
    return 0


if __name__ == "__main__":
    sys.exit(main())
