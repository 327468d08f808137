"""Phase tables of benchmark runs (``python -m evals.bench --profile``).

Each run's report.json carries ``phases.total_s`` (self seconds per phase, ``tools.phases``);
``profile_tables`` turns the rows of ``evals.bench.run_case`` into one markdown table
(a row per case, the median row last) and a JSON summary.
"""

from __future__ import annotations

import statistics

from tools.phases import ordered


def ratio(row: dict) -> float | None:
    """Run wall seconds ÷ one warm full-suite evaluation of the candidate (its ``triage_eval`` phase).

    The ratio cancels the speed of the machine (and most of its load): a repair that
    costs a fixed number of evaluations plus little else keeps the same ratio anywhere.
    Returns None when the run has no ``triage_eval`` phase (invalid input) or it is 0.
    """
    ev = (row.get("phases") or {}).get("triage_eval")
    return round(row["wall_s"] / ev, 2) if ev else None


def profile_tables(rows: list[dict]) -> tuple[str, dict]:
    """Markdown table and JSON summary of the phases of benchmark rows.

    Args:
        rows: ``evals.bench.run_case`` rows: ``case``, ``status``, ``wall_s`` (seconds of the
            whole ``graph.run`` process) and ``phases`` (``{name: self seconds}``) when a report was written.

    Returns:
        ``(markdown, summary)``; ``other`` is wall minus the phases (interpreter start-up,
        graph and checkpoint overhead); medians are over the rows that have the column.
    """
    names = ordered({n for r in rows for n in (r.get("phases") or {})})
    cols = names + ["other", "wall", "wall/eval", "cpu", "load1"]
    table = []
    for r in rows:
        ph = r.get("phases") or {}
        vals = {n: ph.get(n) for n in names}
        vals["other"] = round(r["wall_s"] - sum(ph.values()), 2) if ph else None
        vals["wall"] = r["wall_s"]
        vals["wall/eval"] = ratio(r)
        vals["cpu"] = r.get("cpu_s")
        vals["load1"] = r.get("load1")
        table.append((r["case"], r.get("status", ""), vals))
    median = {}
    for c in cols:
        xs = [v[c] for _, _, v in table if v.get(c) is not None]
        median[c] = round(statistics.median(xs), 2) if xs else None
    fmt = lambda x: "" if x is None else f"{x:.2f}"  # noqa: E731
    md = ["| case | status | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 2)]
    for case, status, vals in table:
        md.append(f"| {case} | {status} | " + " | ".join(fmt(vals[c]) for c in cols) + " |")
    md.append("| **median** | | " + " | ".join(fmt(median[c]) for c in cols) + " |")
    md.append("")
    md.append("Seconds per phase (self time: a phase nested in another counts once). `wall`: the whole "
              "`graph.run` process; `wall/eval`: wall ÷ one warm full-suite evaluation of the candidate "
              "(`triage_eval`); `cpu`: user+sys seconds of the run and all its children (sandboxes, workers); "
              "`load1`: the machine's 1-minute load average when the run ended.")
    summary = {"columns": cols, "median": median,
               "rows": [{"case": c, "status": s, **v} for c, s, v in table]}
    return "\n".join(md) + "\n", summary
