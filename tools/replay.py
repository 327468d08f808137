"""Replay one suite variant of a run: ``python -m tools.replay RUN_DIR VARIANT_ID [--source FILE]``.

The suite is deterministic (seeded, derived from the reference and the original
candidate's constants), so a run folder's ``reference.py`` and ``original.py`` rebuild it;
the chosen source (default: the original candidate) is then evaluated on that one variant in
the sandbox, and the comparison with its localisation is printed. Exit 0 when the variant
passes, 1 when it fails, 2 on bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile


def replay_command(run_dir: str, variant_id: str) -> str:
    """The one-line shell command that replays ``variant_id`` of the run in ``run_dir`` (this Python, so the venv's)."""
    return f"{shlex.quote(sys.executable)} -m tools.replay {shlex.quote(run_dir)} {shlex.quote(variant_id)}"


def main(argv: list[str] | None = None) -> int:
    """Rebuild the suite of a run folder and evaluate one source on one variant; see the module docstring."""
    p = argparse.ArgumentParser(prog="python -m tools.replay", description=__doc__.splitlines()[0])
    p.add_argument("run_dir")
    p.add_argument("variant", help="variant id, e.g. 'size/N=61/seed1' (report.md lists them)")
    p.add_argument("--source", help="candidate file to evaluate (default: RUN_DIR/original.py)")
    p.add_argument("--backend", default="auto")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds for the evaluation")
    args = p.parse_args(argv)
    ref = os.path.join(args.run_dir, "reference.py")
    orig = os.path.join(args.run_dir, "original.py")
    src = args.source or orig
    for path in (ref, orig, src):
        if not os.path.isfile(path):
            print(f"error: {path}: no such file (is {args.run_dir} a nearmiss run folder?)", file=sys.stderr)
            return 2
    from tools.evaluate.backends import BackendUnavailable, select_backend
    from tools.evaluate.runner import Runner, SuiteError

    with open(ref) as f:
        reference = f.read()
    with open(orig) as f:
        original = f.read()
    with open(src) as f:
        source = f.read()
    try:
        backend = select_backend(args.backend)
    except BackendUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nearmiss-replay-") as work:
        r = Runner(work, reference, backend, timeout_s=args.timeout)
        try:
            r.build_suite(original)
        except SuiteError as e:
            print(f"error: {ref}: {e}", file=sys.stderr)
            return 2
        if args.variant not in r.ids():
            print(f"error: no variant {args.variant!r} in this suite; variants: {', '.join(r.ids())}", file=sys.stderr)
            return 2
        meta = next(v for v in r.variants if v["id"] == args.variant)
        ev = r.evaluate(source, [args.variant])
    v = ev.variants[0] if ev.variants else None
    print(f"{args.variant}: {meta['description']}; shapes {meta['shapes']}, dtypes {meta['dtypes']}")
    if v is None:
        print(f"  {ev.status}: {ev.message}")
        return 1
    print(f"  {v.status}{' (refused: unsupported input)' if v.unsupported else ''}: {v.message or 'within tolerance'}")
    for e in v.errors:
        if e.relations:
            print(f"  output {e.output_index} relations: {', '.join(e.relations)}")
    return 0 if v.status == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
