"""Suite size and evaluation overhead per case (``python -m evals.bench --suite-only``).

For each case: build the full-coverage suite from the reference (and the candidate's
constants), then evaluate the candidate on every variant, twice; the second evaluation is the
steady state a repair run sees (the warm worker already holds torch and triton). The
**overhead** of an evaluation is everything but the kernel's forward passes: process start
or fork, loading inputs and the candidate, writing and comparing outputs —
``1 - sum(forward seconds) / evaluation wall seconds``. Run it with ``NEARMISS_WARM=0`` for
the figure without the warm worker (a fresh interpreter per evaluation).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

from rich.console import Console
from rich.table import Table


def time_case(case_dir: str, work: str) -> dict:
    """Suite size, build seconds and per-evaluation overhead of one case folder.

    Returns:
        ``{"case", "variants", "search", "heldout", "build_s", "eval_s", "forward_s",
        "overhead_share", "first_eval_s"}``; seconds are wall-clock, the share is in [0, 1].
    """
    from tools.evaluate.backends import select_backend
    from tools.evaluate.runner import Runner

    with open(os.path.join(case_dir, "reference.py")) as f:
        reference = f.read()
    with open(os.path.join(case_dir, "candidate.py")) as f:
        candidate = f.read()
    r = Runner(os.path.join(work, os.path.basename(case_dir.rstrip("/"))), reference, select_backend("auto"))
    t0 = time.monotonic()
    r.build_suite(candidate)
    build = time.monotonic() - t0
    ids = r.ids()
    t0 = time.monotonic()
    r.evaluate(candidate, ids)
    first = time.monotonic() - t0
    t0 = time.monotonic()
    ev = r.evaluate(candidate, ids)
    wall = time.monotonic() - t0
    fwd = sum(v.wall_s for v in ev.variants)
    return {"case": os.path.basename(case_dir.rstrip("/")), "variants": len(ids), "search": len(r.ids("search")),
            "heldout": len(r.ids("heldout")), "build_s": round(build, 2), "first_eval_s": round(first, 2),
            "eval_s": round(wall, 2), "forward_s": round(fwd, 2),
            "overhead_share": round(max(0.0, 1.0 - fwd / wall), 4) if wall > 0 else 0.0, "status": ev.status}


def run(cases_dir: str, names: list[str], console: Console) -> dict:
    """Time every case; print a table; return the summary (rows and the median overhead share)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="nearmiss-suite-") as work:
        for name in names:
            rows.append(time_case(os.path.join(cases_dir, name), work))
            console.print(f"{name}: {rows[-1]['variants']} variants, {rows[-1]['eval_s']} s", style="dim")
    warm = os.environ.get("NEARMISS_WARM", "1") != "0"
    table = Table(title=f"Suite per case ({'warm worker' if warm else 'fresh interpreter per evaluation'})")
    for col in ("case", "variants (search/held-out)", "build s", "eval s", "forward s", "overhead"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["case"], f"{r['variants']} ({r['search']}/{r['heldout']})", f"{r['build_s']:.1f}",
                      f"{r['eval_s']:.1f}", f"{r['forward_s']:.1f}", f"{r['overhead_share']:.1%}")
    console.print(table)
    med = statistics.median([r["overhead_share"] for r in rows]) if rows else 0.0
    console.print(f"median evaluation overhead: {med:.1%} of the suite's wall time")
    return {"warm_worker": warm, "median_overhead_share": med, "rows": rows, "date": time.strftime("%Y-%m-%d %H:%M:%S")}
