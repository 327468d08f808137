"""Compile launched kernels for real GPU targets, offline, with Triton's own compiler.

The Triton interpreter accepts code a GPU compiler rejects (a loop-carried fp16
accumulator re-assigned to fp32 runs in the interpreter; Triton's CUDA compiler refuses
it), so every kernel a candidate launches is also compiled for the requested targets with
``triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget(...))`` —
PTX and a cubin for CUDA, an AMD code object for HIP — which needs no GPU.

Launch signatures are recorded in the interpreter process (``record_launch``); compiling
happens in a separate process without ``TRITON_INTERPRET`` (in the interpreter's process
``triton.language`` is patched and compilation fails). Results are cached on disk by
(kernel source hash, signature, target).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import subprocess
import tempfile
import time

#: torch dtype name -> Triton signature type. Source: triton/runtime/jit.py type canonicalisation.
DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int32": "i32",
          "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "i1",
          "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5"}
#: Triton specialises pointers and integers divisible by 16 (tt.divisibility = 16). Source: triton/runtime/jit.py.
DIVISIBILITY = 16
#: ``--targets`` name -> bishengir/triton-ascend SoC name (compiled by ``tools.compile.ascend``). Both are
#: Atlas A2 training parts (``bishengir-compile --help`` lists the accepted ``--target`` values).
ASCEND_TARGETS = {"ascend910b3": "Ascend910B3", "ascend910b4": "Ascend910B4"}
_TARGET_RE = re.compile(r"^(sm_(\d+)a?|gfx[0-9a-f]+)$")


class TargetError(Exception):
    """An unknown target name in ``--targets`` (a usage error)."""


def parse_targets(text: str | None, local: str | None = None) -> list[str]:
    """Parse ``--targets`` (``sm_80,sm_90,gfx942,ascend910b3``; ``none`` for no compile check).

    Ascend names (````ASCEND_TARGETS````) are compiled by ``tools.compile.ascend``
    in the Ascend environment; the others here.

    Args:
        text: the option value, or None for the default.
        local: the local GPU's target name (e.g. ``sm_90``) when there is one.

    Returns:
        Target names; the default is the local GPU, else ``["sm_90"]``.

    Raises:
        TargetError: a name that is neither ``sm_NN``, ``gfxNNN`` nor an Ascend SoC.
    """
    if text is None or text == "":
        return [local] if local else ["sm_90"]
    if text.strip().lower() == "none":
        return []

    out = []
    for name in (t.strip() for t in text.split(",") if t.strip()):
        if name.lower() in ASCEND_TARGETS:
            name = name.lower()
        elif not _TARGET_RE.match(name):
            raise TargetError(f"--targets: unknown target {name!r} (expected sm_NN, gfxNNN or "
                              f"{'/'.join(ASCEND_TARGETS)}, e.g. sm_90,gfx942,ascend910b3)")
        out.append(name)
    return out


def gpu_target(name: str):
    """``triton.backends.compiler.GPUTarget`` for a target name (``sm_90`` or ``gfx942``)."""
    from triton.backends.compiler import GPUTarget

    if name.startswith("sm_"):
        return GPUTarget("cuda", int(re.sub(r"\D", "", name)), 32)
    return GPUTarget("hip", name, 64)


def record_launch(fn, args: tuple, kwargs: dict) -> dict:
    """The compile signature of one kernel launch (called inside the interpreter process).

    Args:
        fn: the kernel's Python function (``InterpretedFunction.fn``).
        args, kwargs: the launch arguments (grid and launch options removed).

    Returns:
        ``{"kernel", "signature": {param: type}, "constexprs": {param: value},
        "divisible": [params divisible by 16]}``.
    """
    params = list(inspect.signature(fn).parameters.values())
    bound = dict(zip([p.name for p in params], args))
    bound.update({k: v for k, v in kwargs.items() if k in {p.name for p in params}})
    sig, const, div = {}, {}, []
    for p in params:
        v = bound.get(p.name, p.default)
        ann = p.annotation
        is_const = ann is not inspect.Parameter.empty and "constexpr" in str(ann)
        if is_const or v is None or v is inspect.Parameter.empty:
            sig[p.name] = "constexpr"
            const[p.name] = _jsonable(v)
        elif hasattr(v, "data_ptr") and hasattr(v, "dtype"):
            sig[p.name] = "*" + DTYPES.get(str(v.dtype).replace("torch.", ""), "fp32")
            if v.data_ptr() % DIVISIBILITY == 0:
                div.append(p.name)
        elif isinstance(v, bool):
            sig[p.name] = "i1"
        elif isinstance(v, int):
            sig[p.name] = "i32" if -2**31 <= v < 2**31 else "i64"
            if v % DIVISIBILITY == 0:
                div.append(p.name)
        elif isinstance(v, float):
            sig[p.name] = "fp32"
        else:  # dtypes and other constexpr-like values
            sig[p.name] = "constexpr"
            const[p.name] = _jsonable(v)
    return {"kernel": fn.__name__, "signature": sig, "constexprs": const, "divisible": div}


def _jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return {"__repr__": str(v)}


def _constexpr_value(v):
    if isinstance(v, dict) and "__repr__" in v:
        import triton.language as tl
        name = v["__repr__"].split(".")[-1]
        return getattr(tl, name, v["__repr__"])
    return v


def cache_key(module_source: str, launch: dict, target: str) -> str:
    """Cache key of a compiled artefact: sha256 of (module source, kernel, signature, constexprs, target)."""
    blob = json.dumps([module_source, launch["kernel"], launch["signature"], launch["constexprs"], launch["divisible"], target],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _kernel_key(fn) -> str | None:
    """Triton's dependency hash of a jit function, or None when it cannot be computed."""
    try:
        return "triton:" + str(fn.cache_key)
    except Exception:  # noqa: BLE001 - fall back to the module source
        return None


def signature_key(launch: dict) -> str:
    """Short stable key of a launch signature (dtypes, constexprs, divisibility), for matching compiles."""
    blob = json.dumps([launch["signature"], launch["constexprs"], sorted(launch["divisible"])], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def _tool(name: str) -> str | None:
    import triton
    path = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return path if os.path.exists(path) else None


def cuda_resources(ptx: str, arch: str) -> dict:
    """Registers and spill bytes per thread from ``ptxas -v``, with the ptxas builds shipped with Triton.

    Triton ships two ptxas builds (``ptxas`` and ``ptxas-blackwell``) that accept different
    PTX versions; the first that assembles the PTX answers.
    """
    m = re.search(r"^\.target\s+(\S+)", ptx, re.M)
    gpu = m.group(1) if m else arch
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            f.write(ptx)
        for name in ("ptxas", "ptxas-blackwell"):
            ptxas = _tool(name)
            if not ptxas:
                continue
            try:
                r = subprocess.run([ptxas, "-v", f"--gpu-name={gpu}", p, "-o", os.path.join(d, "k.cubin")],
                                   capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if r.returncode != 0:
                continue
            text = r.stdout + r.stderr
            regs = re.search(r"Used (\d+) registers", text)
            spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
            return {"registers": int(regs.group(1)) if regs else None,
                    "spill_bytes": int(spill.group(1)) + int(spill.group(2)) if spill else None}
    return {}


def hip_resources(amdgcn: str) -> dict:
    """VGPRs and scratch (spill) bytes from the AMDGPU assembly's comments."""
    vgpr = re.search(r";\s*NumVgprs:\s*(\d+)", amdgcn)
    scratch = re.search(r";\s*ScratchSize:\s*(\d+)", amdgcn)
    return {"registers": int(vgpr.group(1)) if vgpr else None,
            "spill_bytes": int(scratch.group(1)) if scratch else None}


def compile_launch(fn, launch: dict, target: str) -> dict:
    """Compile one recorded launch for one target; never raises.

    Returns:
        ``{"kernel", "target", "ok", "error", "registers", "spill_bytes", "shared_bytes",
        "num_warps", "num_stages", "seconds"}``; ``error`` is the compiler's message.
    """
    import triton
    from triton.compiler import ASTSource

    names = list(launch["signature"])
    const = {(names.index(k),): _constexpr_value(v) for k, v in launch["constexprs"].items()}
    attrs = {(names.index(k),): [["tt.divisibility", DIVISIBILITY]] for k in launch["divisible"]}
    rec = {"kernel": launch["kernel"], "target": target, "ok": False, "error": None, "signature": signature_key(launch)}
    t0 = time.monotonic()
    try:
        k = triton.compile(ASTSource(fn, launch["signature"], constexprs=const, attrs=attrs),
                           target=gpu_target(target))
    except Exception as e:  # noqa: BLE001 - the compiler's error is the verdict
        rec["error"] = f"{type(e).__name__}: {' '.join(str(e).split())}"[:1200]
        rec["seconds"] = round(time.monotonic() - t0, 3)
        return rec
    md = k.metadata
    rec.update(ok=True, shared_bytes=getattr(md, "shared", None), num_warps=getattr(md, "num_warps", None),
               num_stages=getattr(md, "num_stages", None))
    if target.startswith("sm_") and "ptx" in k.asm:
        rec.update(cuda_resources(k.asm["ptx"], target))
    elif "amdgcn" in k.asm:
        rec.update(hip_resources(k.asm["amdgcn"]))
    rec["seconds"] = round(time.monotonic() - t0, 3)
    return rec


def compile_all(module, module_source: str, launches: list[dict], targets: list[str],
                cache_dir: str | None) -> list[dict]:
    """Compile every distinct recorded launch of a module's kernels for every target, with a disk cache.

    The cache key hashes what compiles: Triton's own dependency hash of the kernel
    (``JITFunction.cache_key``: its source, start line, the jit functions it calls and the
    constexpr globals it reads), else the whole module source, with the launch signature and
    the target. So an edit outside the kernel (the launcher's grid, a host-side scale)
    reuses the compiles of the candidate: each distinct specialisation compiles once per target.
    """
    out = []
    for launch in launches:
        fn = getattr(module, launch["kernel"], None)
        while fn is not None and not hasattr(fn, "src") and hasattr(fn, "fn"):  # autotune / heuristics wrappers
            fn = fn.fn
        if fn is None or not hasattr(fn, "src"):
            out.append({"kernel": launch["kernel"], "target": "*", "ok": None,
                        "error": "not a module-level @triton.jit function: compile check skipped"})
            continue
        for target in targets:
            key = cache_key(_kernel_key(fn) or module_source, launch, target)
            path = os.path.join(cache_dir, key + ".json") if cache_dir else None
            if path and os.path.exists(path):
                with open(path) as f:
                    rec = {**json.load(f), "cached": True, "signature": signature_key(launch)}
            else:
                rec = compile_launch(fn, launch, target)
                if path:
                    os.makedirs(cache_dir, exist_ok=True)
                    tmp = path + f".{os.getpid()}.tmp"
                    with open(tmp, "w") as f:
                        json.dump(rec, f)
                    os.replace(tmp, path)
            out.append(rec)
    return out
