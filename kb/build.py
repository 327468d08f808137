"""Build (or check) the pattern index: ``python -m kb.build [--force] [--location DIR|:memory:]``.

Embeds every ``kb/patterns/*.toml`` file into the store (``kb.store``: ``NEARMISS_QDRANT_URL``
when set, else the embedded store in the cache folder) unless the index was built from the
same files. Exit 0 on success, 2 with one line on stderr when a pattern file is malformed or
the store cannot be opened.
"""

from __future__ import annotations

import argparse
import sys
import time

from kb.retrieve import PatternError, load_patterns
from kb.store import KBStore, StoreError


def main(argv: list[str] | None = None) -> int:
    """Command line of ``python -m kb.build``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m kb.build", description=__doc__.splitlines()[0])
    ap.add_argument("--force", action="store_true", help="rebuild even when the index is current")
    ap.add_argument("--location", help="embedded store folder or :memory: (default: server or cache folder)")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        with KBStore(a.location) as store:
            rebuilt = store.ensure_index(force=a.force)
            where = store.where
    except (PatternError, StoreError) as e:
        print(f"kb.build: {e}", file=sys.stderr)
        return 2
    n = len(load_patterns())
    print(f"{'built' if rebuilt else 'up to date'}: {n} patterns in {where} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
