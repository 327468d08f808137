"""Compile and run AscendC kernels on the CPU emulator (``tools/ascendc/include``).

A kernel source (``#include "kernel_operator.h"`` and one or more
``extern "C" __global__ __aicore__ void NAME(...)`` functions) is compiled with g++ (C++17)
against the emulator's headers into a shared library, cached by the hash of the source and
the headers. ``run_kernel`` runs the blocks ``0 .. block_dim-1`` in turn on the given
arguments; a broken hardware rule (UB overflow, misaligned ``DataCopy``, use after
``FreeTensor``...) raises ``AscendCViolation`` with the rule's name instead of crashing.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import tempfile

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")
CXX = os.environ.get("NEARMISS_CXX", "g++")
CXXFLAGS = ["-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-fno-strict-aliasing"]
COMPILE_TIMEOUT_S = 120

_KERNEL_RE = re.compile(r'(?:extern\s+"C"\s+)?__global__\s+__aicore__\s+void\s+(\w+)\s*\(([^)]*)\)\s*\{', re.S)
_SCALARS = {"int8_t": ctypes.c_int8, "uint8_t": ctypes.c_uint8, "int16_t": ctypes.c_int16, "uint16_t": ctypes.c_uint16,
            "int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "int64_t": ctypes.c_int64,
            "uint64_t": ctypes.c_uint64, "int": ctypes.c_int, "unsigned": ctypes.c_uint, "float": ctypes.c_float,
            "double": ctypes.c_double, "bool": ctypes.c_bool, "size_t": ctypes.c_size_t}


class CompilationError(Exception):
    """Base of compile failures (the worker classifies exceptions named so as ``compile_error``)."""


class AscendCCompileError(CompilationError):
    """g++ rejected the kernel source; ``line`` is the line in the kernel source (1-based) or None."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class AscendCViolation(Exception):
    """The kernel broke a hardware rule the emulator enforces; ``kind`` names the rule (``ub_overflow``...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def kernel_signatures(src: str) -> dict[str, list[tuple[str, str]]]:
    """The ``__global__ __aicore__`` kernels of a source: name -> [(type, parameter name)].

    A parameter type is ``ptr`` for a global-memory address (``GM_ADDR``, any pointer) or the
    C scalar type (``uint32_t``, ``float``...).
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for m in _KERNEL_RE.finditer(_strip_comments(src)):
        params = []
        for p in [x.strip() for x in m.group(2).split(",") if x.strip()]:
            p = re.sub(r"\b(const|__gm__)\b", " ", p)
            toks = p.replace("*", " * ").split()
            name = toks[-1]
            typ = "ptr" if ("*" in toks or "GM_ADDR" in toks) else " ".join(toks[:-1])
            if typ != "ptr" and typ not in _SCALARS:
                raise AscendCCompileError(f"kernel {m.group(1)}: parameter `{p.strip()}` has a type the launcher "
                                          "cannot pass (use GM_ADDR or a fixed-width integer/float)")
            params.append((typ, name))
        out[m.group(1)] = params
    return out


def _strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _trampolines(sigs: dict[str, list[tuple[str, str]]]) -> str:
    out = ['\n#line 1 "nearmiss_launch.cpp"',
           "extern \"C\" int nm_block_loop(int64_t block_dim, const void** bases, const uint64_t* sizes, int nbuf,"
           " char* err, int errlen, void (*body)(void**), void** args) {",
           "  auto& s = nearmiss_emu::st(); s.gm.clear();",
           "  for (int i = 0; i < nbuf; i++) s.gm.push_back({(const uint8_t*)bases[i], sizes[i]});",
           "  s.block_num = block_dim; int64_t b = 0;",
           "  try { for (b = 0; b < block_dim; b++) { s.block_idx = b; s.ub.assign(nearmiss_emu::UB_BYTES, 0xFF); body(args); } }",
           "  catch (nearmiss_emu::Violation& v) { std::snprintf(err, errlen, \"%s\\n[block %lld] %s\", v.kind.c_str(), (long long)b, v.message.c_str()); return 1; }",
           "  catch (std::exception& e) { std::snprintf(err, errlen, \"exception\\n[block %lld] %s\", (long long)b, e.what()); return 2; }",
           "  return 0; }"]
    for name, params in sigs.items():
        call = ", ".join(f"(uint8_t*)a[{i}]" if t == "ptr" else f"*({t}*)a[{i}]" for i, (t, _) in enumerate(params))
        out.append(f"static void nm_body_{name}(void** a) {{ {name}({call}); }}")
        out.append(f"extern \"C\" int nm_launch_{name}(int64_t bd, const void** bases, const uint64_t* sizes, int nbuf, "
                   f"char* err, int errlen, void** args) {{ return nm_block_loop(bd, bases, sizes, nbuf, err, errlen, "
                   f"nm_body_{name}, args); }}")
    return "\n".join(out) + "\n"


def _headers_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(os.listdir(INCLUDE_DIR)):
        with open(os.path.join(INCLUDE_DIR, f), "rb") as fh:
            h.update(f.encode() + fh.read())
    return h.hexdigest()


def default_cache_dir() -> str:
    """``$NEARMISS_ASCENDC_CACHE``, else ``~/.cache/nearmiss/ascendc`` (in the worker, HOME is its private folder)."""
    return os.environ.get("NEARMISS_ASCENDC_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nearmiss",
                                                                    "ascendc")


def source_key(src: str) -> str:
    """Cache key of a kernel source: sha256 of the source, the emulator headers and the compiler flags."""
    return hashlib.sha256((src + "\0" + _headers_digest() + "\0" + " ".join([CXX, *CXXFLAGS])).encode()).hexdigest()[:24]


def compile_kernel(src: str, cache_dir: str | None = None) -> str:
    """Compile a kernel source into a shared library; return its path (cached by ``source_key``).

    Raises:
        AscendCCompileError: g++ failed (message: the first errors, with kernel-source line
            numbers; ``line``: the first error's line), or the compile ran past 120 s, or
            the library cannot be built here (a confined worker without a cached library).
    """
    cache_dir = cache_dir or default_cache_dir()
    key = source_key(src)
    so, err = os.path.join(cache_dir, key + ".so"), os.path.join(cache_dir, key + ".err")
    if os.path.exists(so):
        return so
    if os.path.exists(err):
        with open(err) as f:
            msg = f.read()
        raise AscendCCompileError(msg, _first_error_line(msg))
    sigs = kernel_signatures(src)
    if not sigs:
        raise AscendCCompileError('no `extern "C" __global__ __aicore__ void NAME(...)` kernel in the source')
    os.makedirs(cache_dir, exist_ok=True)
    text = '#include "kernel_operator.h"\n#line 1 "kernel_src"\n' + src + _trampolines(sigs)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        cpp, out = os.path.join(tmp, "k.cpp"), os.path.join(tmp, "k.so")
        with open(cpp, "w") as f:
            f.write(text)
        try:
            proc = subprocess.run([CXX, *CXXFLAGS, "-I", INCLUDE_DIR, cpp, "-o", out], capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AscendCCompileError(f"g++ ran past {COMPILE_TIMEOUT_S} s") from None
        except PermissionError as e:  # a confined worker: only precompiled libraries can run
            raise AscendCCompileError(f"kernel not precompiled and compiling is not allowed here: {e}") from None
        if proc.returncode != 0:
            msg = _summarise_errors(proc.stderr)
            with open(err, "w") as f:
                f.write(msg)
            raise AscendCCompileError(msg, _first_error_line(msg))
        os.replace(out, so)
    return so


def _summarise_errors(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if "error" in ln]
    return "\n".join(lines[:6])[:1500] or stderr[-1500:]


def _first_error_line(msg: str) -> int | None:
    m = re.search(r"kernel_src:(\d+)", msg)
    return int(m.group(1)) if m else None


_LIBS: dict[str, ctypes.CDLL] = {}
#: Callbacks ``f(kernel_name, block_dim, args)`` called after each launch that ran to its end
#: (the worker's launch counter, the integrity audit's launch records), by owner name.
ON_LAUNCH: dict = {}


def run_kernel(kernel_src: str, kernel_name: str, block_dim: int, args: list, cache_dir: str | None = None) -> None:
    """Run ``kernel_name`` from ``kernel_src`` on the emulator, blocks 0..block_dim-1 in turn.

    Args:
        kernel_src: AscendC C++ source including ``kernel_operator.h``.
        kernel_name: an ``extern "C" __global__ __aicore__`` function of the source.
        block_dim: number of blocks (AI cores) to run; ``GetBlockNum()`` returns it.
        args: one value per kernel parameter, in order: a CPU torch tensor or a numpy array
            for each ``GM_ADDR``/pointer parameter (any dtype; written in place; must be
            contiguous), a Python int/float for each scalar parameter.
        cache_dir: where compiled libraries are cached (``default_cache_dir()``).

    Raises:
        AscendCCompileError: see ``compile_kernel``; also an unknown kernel or wrong argument count.
        AscendCViolation: a hardware rule broken during the run (the message names the block).
    """
    sigs = kernel_signatures(kernel_src)
    if kernel_name not in sigs:
        raise AscendCCompileError(f"no kernel named {kernel_name} in the source (found: {', '.join(sigs) or 'none'})")
    params = sigs[kernel_name]
    if len(args) != len(params):
        raise AscendCCompileError(f"kernel {kernel_name} takes {len(params)} arguments, the launch passes {len(args)}")
    if not isinstance(block_dim, int) or block_dim < 1 or block_dim > 65535:
        raise AscendCViolation("bad_block_dim", f"block_dim {block_dim!r} is not an integer in 1..65535")
    so = compile_kernel(kernel_src, cache_dir)
    lib = _LIBS.get(so) or _LIBS.setdefault(so, ctypes.CDLL(so))
    fn = getattr(lib, f"nm_launch_{kernel_name}")
    fn.restype = ctypes.c_int
    keep, ptrs, bases, sizes = [], [], [], []
    for (typ, pname), a in zip(params, args):
        if typ == "ptr":
            addr, nbytes = _buffer(a, pname)
            ptrs.append(ctypes.c_void_p(addr))
            bases.append(addr)
            sizes.append(nbytes)
            keep.append(ptrs[-1])
        else:
            v = _SCALARS[typ](a)
            keep.append(v)
            ptrs.append(ctypes.cast(ctypes.pointer(v), ctypes.c_void_p))
    argv = (ctypes.c_void_p * max(1, len(ptrs)))(*[p.value if isinstance(p, ctypes.c_void_p) else p for p in ptrs])
    barr = (ctypes.c_void_p * max(1, len(bases)))(*bases)
    sarr = (ctypes.c_uint64 * max(1, len(sizes)))(*sizes)
    err = ctypes.create_string_buffer(2048)
    rc = fn(ctypes.c_int64(block_dim), barr, sarr, ctypes.c_int(len(bases)), err, ctypes.c_int(len(err)), argv)
    if rc != 0:
        kind, _, msg = err.value.decode(errors="replace").partition("\n")
        raise AscendCViolation(kind, msg)
    for f in list(ON_LAUNCH.values()):
        f(kernel_name, block_dim, args)


def _buffer(a, pname: str) -> tuple[int, int]:
    try:
        import torch
        if isinstance(a, torch.Tensor):
            if a.device.type != "cpu" or not a.is_contiguous():
                raise AscendCCompileError(f"argument {pname}: the emulator takes contiguous CPU tensors")
            return a.data_ptr(), a.numel() * a.element_size()
    except ImportError:  # pragma: no cover - numpy-only use
        pass
    import numpy as np
    if isinstance(a, np.ndarray):
        if not a.flags["C_CONTIGUOUS"]:
            raise AscendCCompileError(f"argument {pname}: the emulator takes C-contiguous arrays")
        return a.ctypes.data, a.nbytes
    raise AscendCCompileError(f"argument {pname}: expected a tensor or array for a GM_ADDR parameter, got "
                              f"{type(a).__name__}")
