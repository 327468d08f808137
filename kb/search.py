"""Search the knowledge base: ``python -m kb.search "TEXT" [--symptom NAME ...] [--category C ...] [-k N]``.

Prints the best patterns with their combined score, the symptom and dense parts, and the
repair operators; ``--learned`` also lists learned repairs matching the symptoms.
``--filter`` keeps only patterns listing one of the given symptoms/categories instead of
boosting them. Exit 2 with one line on stderr on bad input or an unavailable store.
"""

from __future__ import annotations

import argparse
import sys

from kb.retrieve import PatternError
from kb.store import StoreError, open_store
from tools.diagnosis.diagnostics import SYMPTOMS


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m kb.search``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m kb.search", description=__doc__.splitlines()[0])
    ap.add_argument("text", nargs="?", default="", help="free text, e.g. a diagnosis summary")
    ap.add_argument("--symptom", action="append", default=[], help="symptom name (repeatable)")
    ap.add_argument("--category", action="append", default=[], help="kernel category (repeatable)")
    ap.add_argument("-k", type=int, default=5, help="number of patterns (default 5)")
    ap.add_argument("--filter", action="store_true", help="require a listed symptom/category instead of boosting")
    ap.add_argument("--learned", action="store_true", help="also list learned repairs for the symptoms")
    ap.add_argument("--location", help="embedded store folder or :memory: (default: server or cache folder)")
    a = ap.parse_args(argv)
    if not a.text and not a.symptom and not a.category:
        print("kb.search: give a text, --symptom or --category", file=sys.stderr)
        return 2
    unknown = [s for s in a.symptom if s not in SYMPTOMS]
    if unknown:
        print(f"kb.search: note: unknown symptom(s) {', '.join(unknown)} weigh nothing", file=sys.stderr)
    try:
        with open_store(a.location) as store:
            hits = store.search(a.text, a.symptom, a.category, limit=a.k, require_symptoms=a.filter,
                                require_categories=a.filter)
            learned = store.learned(a.symptom, a.category) if a.learned else []
    except (PatternError, StoreError) as e:
        print(f"kb.search: {e}", file=sys.stderr)
        return 2
    for h in hits:
        ops = ", ".join(o["id"] for o in h.pattern["operators"]) or "(LLM only)"
        dense = "" if h.dense is None else f" dense={h.dense:.3f}"
        print(f"{h.score:6.2f}  {h.pattern['id']:<26} symptoms={h.symptom:.2f}{dense}  [{ops}]  {h.pattern['title']}")
    for e in learned:
        print(f"learned {e['match']:.2f}  {e['operator']} {e.get('params') or ''} x{e.get('count', 1)}: {e.get('description', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
