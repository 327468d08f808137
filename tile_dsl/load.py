"""Load a DSL program from a file or from source text (a model's answer)."""

from __future__ import annotations

import os
import re

from tile_dsl import ir
from tile_dsl.dsl import DSLError, trace


def op_name(stem: str) -> str:
    """A C identifier for the operator from a file stem or task name (``max-pool 1d`` -> ``max_pool_1d``)."""
    name = re.sub(r"\W+", "_", stem).strip("_").lower() or "op"
    return "op_" + name if name[0].isdigit() else name


def load_program_source(source: str, filename: str = "program.py", name: str | None = None) -> ir.Program:
    """Execute DSL source defining ``program(k)`` and trace it.

    The source is Python and runs in this process: load a model's answer only in a
    subprocess (``tile_dsl.check``).

    Args:
        source: Python text defining ``program(k)``.
        filename: name used in error messages (``filename:LINE``).
        name: operator name (default from ``filename``).

    Raises:
        DSLError: a syntax error, no ``program``, or any error while tracing, with its line.
    """
    base = os.path.basename(filename)
    try:
        code = compile(source, base, "exec")
    except SyntaxError as e:
        raise DSLError(f"SyntaxError: {e.msg}", f"{base}:{e.lineno}") from None
    ns: dict = {"__name__": "tile_dsl_program"}
    try:
        exec(code, ns)  # noqa: S102 - the DSL is Python by design; callers isolate untrusted text
    except Exception as e:  # noqa: BLE001 - any error at the program's top level, with its line
        tb, line = e.__traceback__, None
        while tb is not None:  # the innermost frame of the program itself
            if tb.tb_frame.f_code.co_filename == base:
                line = f"{base}:{tb.tb_lineno}"
            tb = tb.tb_next
        raise DSLError(f"{type(e).__name__}: {e}", line) from None
    if not callable(ns.get("program")):
        raise DSLError(f"{base}: defines no function program(k)")
    return trace(ns["program"], op_name(name or os.path.splitext(base)[0]))


def load_program(path: str, name: str | None = None) -> ir.Program:
    """Read and trace the DSL file at ``path`` (see ``load_program_source``).

    Raises:
        OSError: unreadable file.
        DSLError: as ``load_program_source``.
    """
    with open(path) as f:
        return load_program_source(f.read(), path, name)
