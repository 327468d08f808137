"""Offline compile gate for Huawei Ascend NPUs: Triton kernels through triton-ascend and bishengir.

A kernel that is right on the interpreter and compiles for ``sm_90`` can still fail on an
Ascend NPU: its vector core works out of a 192 KB Unified Buffer (UB), a ``tl.dot`` tile
must fit the cube unit's L0C buffer, and the launch grid is bound to physical cores. This
module compiles every launched kernel, with the signature recorded in the interpreter run
(``tools.compile.gpu.record_launch``), for an Ascend SoC as far as it goes without CANN:

1. ``triton-ascend`` 3.2.0 lowers the kernel to Triton IR and then to its linalg/HIVM
   adapter IR (``ttadapter``);
2. ``bishengir-compile`` (package ``ascendnpu-ir`` 1.2.0) runs the HFusion and HIVM passes
   on it (``--enable-hfusion-compile --enable-hivm-compile --enable-triton-kernel-compile``),
   including the UB/L1 address plan (``hivm-plan-memory``), and stops at CANN's ``hivmc``.
   A kernel that gets there passes: "reached HIVM, hivmc not available".

``triton-ascend`` installs under the import name ``triton``, so it lives in its own virtual
environment (``.venv-ascend``, made by ``scripts/setup.sh``); the compile runs in a
sandboxed worker started with that environment's Python (``python -m tools.worker.main
ascend_compile JOB``). That process never imports torch: only the candidate's top-level
statements that run without it (imports of triton/math, constants, ``@triton.jit``
functions) are executed. ``torch-npu`` is never installed (without CANN it breaks
``import torch``).

Limits checked besides the compiler's own (sources):

* grid product <= 65535 programs: triton-ascend docs, migration_guide/architecture_difference.md
  ("Multi-Core Task Parallelism Strategy": the 65,535 grid limit), and vllm-ascend PR #10138
  ("rtKernelLaunch requires coreDim (the product of all grid dimensions) to be <= 65535";
  the runtime raises "grid should be less than 65536");
* 32-byte aligned tensor start addresses for vector kernels (512 bytes with the cube unit):
  triton-ascend docs, migration guide "memory access alignment";
* UB 192 KB on Atlas A2 (910B): triton-ascend docs, programming_guide/index.md ("A2 UB is
  192KB (1572864 bits)"), and the compiler's own figure (``ub overflow, requires N bits while
  1572864 bits available``), reported as it says it; L0C ("cc") likewise from the compiler
  (``cc overflow, requires N bits while 1048576 bits available`` = 128 KiB on 910B3).
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from tools.compile.gpu import ASCEND_TARGETS

#: Largest grid product (programs per launch). Source: triton-ascend programming guide (see module docstring).
GRID_LIMIT = 65535
#: Unified Buffer bytes of an Atlas A2 (910B) AI core: 1572864 bits, as bishengir-compile reports it.
UB_BYTES = 196608
#: Start-address alignment for vector kernels, bytes. Source: triton-ascend migration guide.
ALIGN_BYTES = 32
#: What a kernel that reached the end of the offline pipeline is reported as.
REACHED = "reached HIVM, hivmc not available"
#: bishengir-compile flags (the ones triton-ascend's A2/A3 pipeline passes, plus the plan-memory dump).
BISHENG_FLAGS = ["--enable-hfusion-compile=true", "--enable-hivm-compile=true", "--enable-triton-kernel-compile=true",
                 "--mlir-print-ir-after=hivm-plan-memory"]


class AscendUnavailable(Exception):
    """The Ascend environment (``.venv-ascend``) is missing: usage error, exit code 2."""


def is_ascend(target: str) -> bool:
    """True for an Ascend ``--targets`` name (``ascend910b3``, ``ascend910b4``)."""
    return target.lower() in ASCEND_TARGETS


def ascend_python() -> str | None:
    """Python of the Ascend environment: ``$NEARMISS_ASCEND_PYTHON`` or ``<project>/.venv-ascend/bin/python``.

    Returns:
        The interpreter path, or None when it does not exist.
    """
    p = os.environ.get("NEARMISS_ASCEND_PYTHON") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".venv-ascend", "bin", "python")
    return p if os.path.exists(p) else None


def require_env(targets: list[str]) -> None:
    """Raise ``AscendUnavailable`` (one line) when an Ascend target is asked for and the environment is absent."""
    if any(is_ascend(t) for t in targets) and ascend_python() is None:
        raise AscendUnavailable("--targets: the Ascend environment .venv-ascend is absent (run scripts/setup.sh)")


# --------------------------------------------------------------- interpreter side
def launch_facts(fn, args: tuple, kwargs: dict) -> dict:
    """Grid size and unaligned pointers of one launch (called in the interpreter process, never raises).

    Args:
        fn: the kernel's Python function.
        args, kwargs: the launch arguments; ``kwargs["grid"]`` is the grid (tuple or callable of the
            bound arguments, as Triton calls it).

    Returns:
        ``{"grid": programs or None, "unaligned": [pointer params whose address % 32 != 0]}``.
    """
    out: dict = {"grid": None, "unaligned": []}
    try:
        kw = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
        bound = inspect.getcallargs(fn, *args, **kw)
        out["unaligned"] = [k for k, v in bound.items()
                            if hasattr(v, "data_ptr") and hasattr(v, "dtype") and v.data_ptr() % ALIGN_BYTES]
        grid = kwargs.get("grid")
        grid = grid(bound) if callable(grid) else grid
        if isinstance(grid, int):
            grid = (grid,)
        n = 1
        for g in grid:
            n *= int(g)
        out["grid"] = n
    except Exception:  # noqa: BLE001 - facts we cannot read are not checked
        pass
    return out


def merge_facts(rec: dict, facts: dict) -> None:
    """Keep the largest grid and every unaligned pointer seen for one launch signature."""
    if facts.get("grid") is not None:
        rec["grid"] = max(rec.get("grid") or 0, facts["grid"])
    if facts.get("unaligned"):
        rec["unaligned"] = sorted(set(rec.get("unaligned") or []) | set(facts["unaligned"]))


# --------------------------------------------------------------- verdicts
_UB = re.compile(r"ub overflow, requires (\d+) bits while (\d+) bits available")
_CC = re.compile(r"cc overflow(?:, requires (\d+) bits while (\d+) bits available)?", re.I)
_DTYPE = re.compile(r"(unsupported|not support)\w*[^\n]*?(dtype|type|uint|u?i(8|16|32|64)|f64|fp64|float64)", re.I)
_ALIGN = re.compile(r"align", re.I)


def classify(message: str) -> dict:
    """The kind of an Ascend compile failure and its figures.

    Args:
        message: the compiler's (or the launch check's) message.

    Returns:
        ``{"kind": "ub_overflow"|"l0c_overflow"|"grid"|"dtype"|"alignment"|"other",
        "needed_bytes": int|None, "limit_bytes": int|None}``.
    """
    m = _UB.search(message)
    if m:
        return {"kind": "ub_overflow", "needed_bytes": int(m.group(1)) // 8, "limit_bytes": int(m.group(2)) // 8}
    m = _CC.search(message)
    if m:
        return {"kind": "l0c_overflow", "needed_bytes": int(m.group(1)) // 8 if m.group(1) else None,
                "limit_bytes": int(m.group(2)) // 8 if m.group(2) else None}
    if message.startswith("grid "):
        return {"kind": "grid", "needed_bytes": None, "limit_bytes": None}
    if _DTYPE.search(message):
        return {"kind": "dtype", "needed_bytes": None, "limit_bytes": None}
    if _ALIGN.search(message):
        return {"kind": "alignment", "needed_bytes": None, "limit_bytes": None}
    return {"kind": "other", "needed_bytes": None, "limit_bytes": None}


def summary(message: str) -> str:
    """A leading "UB overflow: needs N bytes, limit M bytes; " for a compiler message with figures ('' otherwise)."""
    c = classify(message)
    name = {"ub_overflow": "UB overflow", "l0c_overflow": "L0C overflow"}.get(c["kind"])
    if not name or c["needed_bytes"] is None:
        return ""
    return f"{name}: needs {c['needed_bytes']} bytes, limit {c['limit_bytes']} bytes; "


def finding_line(source: str, kernel: str, kind: str) -> int | None:
    """Candidate line an Ascend finding points at (bishengir locates its errors in the adapter IR, not the source).

    UB overflow: the kernel's ``tl.arange`` / ``tl.zeros`` / ``tl.full`` whose size is the largest
    constexpr or literal; L0C overflow: its first ``tl.dot``; otherwise the ``def`` line.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel), None)
    if fn is None:
        return None
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    if kind == "l0c_overflow":
        dots = [c.lineno for c in calls if c.func.attr == "dot"]
        return min(dots) if dots else fn.lineno
    if kind == "ub_overflow":
        sized = [c.lineno for c in calls if c.func.attr in ("arange", "zeros", "full", "load")]
        return min(sized) if sized else fn.lineno
    return fn.lineno


def finding(rec: dict, source: str) -> dict | None:
    """A failed Ascend compile record as a finding: kind, line, figure needed, limit, message (None if it passed)."""
    if rec.get("ok") is not False or not rec.get("error"):
        return None
    c = classify(rec["error"])
    return {**c, "kernel": rec["kernel"], "target": rec["target"], "line": rec.get("line")
            or finding_line(source, rec["kernel"], c["kind"]), "message": rec["error"]}


# --------------------------------------------------------------- Ascend-environment side
def _kernels_module(path: str, name: str = "nearmiss_candidate_ascend"):
    """Execute the candidate's top-level statements one by one, skipping those that fail (torch is absent).

    Line numbers are kept (each statement is compiled with its own position in the file), so
    Triton's ``inspect.getsource`` and error locations point into the candidate.
    """
    import types

    with open(path) as f:
        source = f.read()
    tree = ast.parse(source, path)
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef) or (isinstance(stmt, ast.If) and "__name__" in ast.dump(stmt.test)):
            continue
        try:
            exec(compile(ast.Module([stmt], []), path, "exec"), mod.__dict__)  # noqa: S102 - sandboxed worker
        except Exception:  # noqa: BLE001, S112 - statements needing torch are not part of a kernel
            continue
    return mod, source


def _bishengir() -> str:
    import ascendnpuir

    return os.path.join(os.path.dirname(ascendnpuir.__file__), "bin", "bishengir-compile")


def ub_planned(dump: str) -> int | None:
    """UB bytes planned by ``hivm-plan-memory``: the largest offset + size of a UB ``pointer_cast``.

    Args:
        dump: bishengir's IR printed after the PlanMemory pass.
    """
    consts = {m.group(1): int(m.group(2)) for m in re.finditer(r"(%c\w*)\s*=\s*arith\.constant\s+(\d+)\s*:\s*i64", dump)}
    consts.update({f"%c{v}_i64": int(v) for v in re.findall(r"%c(\d+)_i64", dump)})
    widths = {"f32": 4, "i32": 4, "f16": 2, "bf16": 2, "i16": 2, "i8": 1, "i1": 1, "f64": 8, "i64": 8}
    best = None
    for m in re.finditer(r"hivm\.hir\.pointer_cast\((%\w+)\)[^\n]*?:\s*memref<([0-9x]+)x(\w+),[^>]*address_space<ub>", dump):
        off = consts.get(m.group(1))
        if off is None:
            continue
        n = 1
        for d in m.group(2).split("x"):
            n *= int(d)
        end = off + n * widths.get(m.group(3), 4)
        best = end if best is None else max(best, end)
    return best


def compile_launch(fn, launch: dict, target: str) -> dict:
    """Compile one recorded launch for one Ascend SoC as far as CANN's ``hivmc``; never raises.

    Args:
        fn: the kernel's ``JITFunction`` (triton-ascend's ``triton``).
        launch: a ``record_launch`` record.
        target: an ``ASCEND_TARGETS`` key.

    Returns:
        ``{"kernel", "target", "ok", "error", "ub_bytes", "note", "seconds"}``.
    """
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    from tools.compile.gpu import _constexpr_value, signature_key

    rec = {"kernel": launch["kernel"], "target": target, "ok": False, "error": None, "signature": signature_key(launch)}
    t0 = time.monotonic()
    try:
        soc = GPUTarget("npu", ASCEND_TARGETS[target], 0)
        sig = dict(launch["signature"])
        const = {k: _constexpr_value(v) for k, v in launch["constexprs"].items()}
        backend = make_backend(soc)
        options = backend.parse_options({})
        stages: dict = {}
        backend.add_stages(stages, options)
        ctx = ir.context()
        ir.load_dialects(ctx)
        backend.load_dialects(ctx)
        mod = ASTSource(fn, sig, constants=const).make_ir(options, backend.get_codegen_implementation(),
                                                          backend.get_module_map(), ctx)
        md = {"hash": rec["signature"], "target": soc, **options.__dict__}
        adapter = stages["ttadapter"](stages["ttir"](mod, md), md)
    except Exception as e:  # noqa: BLE001 - the compiler's error is the verdict
        rec["error"] = f"triton-ascend: {type(e).__name__}: {' '.join(str(e).split())}"[:1200]
        rec["transient"] = isinstance(e, (OSError, MemoryError))  # the environment's failure, not a verdict
        rec["seconds"] = round(time.monotonic() - t0, 3)
        return rec
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "kernel.ttadapter.mlir")
        with open(src, "w") as f:
            f.write(adapter)
        try:
            r = subprocess.run([_bishengir(), src, f"--target={ASCEND_TARGETS[target]}", *BISHENG_FLAGS,
                                "-o", os.path.join(d, "kernel")], capture_output=True, text=True, timeout=300, cwd=d)
            out = r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired) as e:
            rec["error"] = f"bishengir-compile: {e}"
            rec["transient"] = True
            rec["seconds"] = round(time.monotonic() - t0, 3)
            return rec
    errors = [ln.split("error:", 1)[1].strip() for ln in out.splitlines() if "error:" in ln]
    real = [e for e in errors if "hivmc" not in e and "Failed to run BiShengHIR pipeline" not in e]
    if r.returncode == 0:
        rec.update(ok=True, note="compiled by bishengir-compile and hivmc")
    elif not real and "hivmc" in out:
        rec.update(ok=True, note=REACHED)
    else:
        msg = " ".join((real or errors or [out.strip()[-600:]])[0].split())
        rec["error"] = (summary(msg) + "bishengir-compile: " + msg)[:1200]
    if rec["ok"]:
        rec["ub_bytes"] = ub_planned(out)
    rec["seconds"] = round(time.monotonic() - t0, 3)
    return rec


def launch_checks(launch: dict, target: str) -> str | None:
    """Launch-time Ascend limits of a recorded launch: the grid product and pointer alignment, or None."""
    grid = launch.get("grid")
    if grid is not None and grid > GRID_LIMIT:
        return (f"grid of {grid} programs exceeds the Ascend core-launch limit of {GRID_LIMIT} "
                f"(triton-ascend: the grid product must be <= 65535; loop over blocks inside each program)")
    if launch.get("unaligned"):
        return (f"alignment: pointer(s) {', '.join(launch['unaligned'])} not {ALIGN_BYTES}-byte aligned "
                f"(triton-ascend: vector kernels need 32-byte aligned start addresses)")
    return None


def compile_all(module, module_source: str, launches: list[dict], targets: list[str], cache_dir: str | None) -> list[dict]:
    """Compile every recorded launch for every Ascend target, with the GPU targets' disk cache scheme.

    The compiler's result is cached by ``tools.compile.gpu.cache_key`` (module source, signature,
    target); the launch checks (grid, alignment) are applied after, since they depend on the launch.
    """
    from tools.compile.gpu import cache_key, signature_key

    out = []
    for launch in launches:
        fn = getattr(module, launch["kernel"], None)
        while fn is not None and not hasattr(fn, "src") and hasattr(fn, "fn"):
            fn = fn.fn
        if fn is None or not hasattr(fn, "src"):
            out.append({"kernel": launch["kernel"], "target": "*", "ok": None,
                        "error": "not a module-level @triton.jit function: Ascend compile check skipped"})
            continue
        for target in targets:
            key = cache_key(module_source, launch, "ascend:" + target)
            path = os.path.join(cache_dir, key + ".json") if cache_dir else None
            if path and os.path.exists(path):
                with open(path) as f:
                    rec = {**json.load(f), "cached": True, "signature": signature_key(launch)}
            else:
                rec = compile_launch(fn, launch, target)
                if path and not rec.pop("transient", False):  # a failure of the environment is not cached
                    os.makedirs(cache_dir, exist_ok=True)
                    tmp = path + f".{os.getpid()}.tmp"
                    with open(tmp, "w") as f:
                        json.dump(rec, f)
                    os.replace(tmp, path)
            why = launch_checks(launch, target)
            if why and rec.get("ok"):
                rec = {**rec, "ok": False, "error": why}
            out.append(rec)
    return out


def cmd_compile(job: dict) -> int:
    """Worker command ``ascend_compile`` (runs with the Ascend environment's Python, no torch).

    Job keys: ``candidate_source``, ``launches``, ``targets``. The source is written into the
    sandbox's scratch folder; one JSON ``compile`` frame goes back on ``NEARMISS_RESULT_FD``.
    """
    path = os.path.join(os.getcwd(), "cand0", "candidate.py")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(job["candidate_source"])
    try:
        mod, source = _kernels_module(path)
        res = {"results": compile_all(mod, source, job["launches"], job["targets"], job.get("cache_dir"))}
    except Exception as e:  # noqa: BLE001 - reported to the parent, never raised
        res = {"error": f"the Ascend compile failed to start: {type(e).__name__}: {e}"[:600]}
    data = json.dumps({"event": "compile", **res}).encode()
    view = memoryview(len(data).to_bytes(8, "big") + data)
    fd = int(os.environ["NEARMISS_RESULT_FD"])
    while view:
        view = view[os.write(fd, view):]
    return 0
