"""MultiKernelBench's AscendC candidate form: a CANN op project in Python strings.

A candidate defines ``project_json_src`` (op inputs/outputs), ``host_tiling_src``
(``BEGIN_TILING_DATA_DEF`` ...), ``host_operator_src`` (``TilingFunc``, ``OpDef``),
``kernel_src`` (the ``__global__ __aicore__`` kernel taking ``..., workspace, tiling``),
``python_bind_src`` (``EXEC_NPU_CMD`` + ``PYBIND11_MODULE``) and ``model_src`` (a ``ModelNew``
calling ``custom_ops_lib.<op>``). Here the four C++ sources become one translation unit
compiled against the emulator's host headers (``include/nearmiss_host.h``,
``include/nearmiss_bind.h``); ``materialise`` then executes ``model_src`` with a
``custom_ops_lib`` whose functions call the library's bound functions.
"""

from __future__ import annotations

import ast
import ctypes
import json
import re
import sys
import types

from tools.ascendc.runtime import ON_LAUNCH, AscendCCompileError, AscendCViolation, compile_source, kernel_signatures

PARTS = ("project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src", "model_src")
_DROP_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*("[^"\n]*"|<(torch|ATen|c10|pybind11|register|graph|tiling|'
                           r'exe_graph|platform|acl)[^>\n]*>)[ \t]*$', re.M)  # the line stays (empty): line numbers hold
DTYPES = {"torch.float32": 0, "torch.float16": 1, "torch.bfloat16": 2, "torch.int32": 3, "torch.int64": 4,
          "torch.bool": 5, "torch.int8": 6, "torch.uint8": 7, "torch.int16": 8, "torch.float64": 9}


def mkb_parts(source: str) -> dict[str, tuple[str, int]]:
    """The MultiKernelBench strings of a candidate: name -> (text, line); {} unless kernel_src and model_src are there."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in PARTS:
                    out[t.id] = (node.value.value, node.value.lineno)
    return out if {"kernel_src", "model_src"} <= set(out) else {}


def model_view(source: str) -> str:
    """The candidate with its ``model_src`` appended (what static validation reads as the Python side)."""
    parts = mkb_parts(source)
    return source + "\n" + parts["model_src"][0] if parts else source


def translation_unit(parts: dict[str, str]) -> str:
    """One C++ file from the project's sources (CANN/torch includes dropped; ``#line`` per source)."""
    def clean(name: str) -> str:
        return _DROP_INCLUDE.sub("", parts.get(name, ""))
    tiling = clean("host_tiling_src")
    m = re.search(r"BEGIN_TILING_DATA_DEF\s*\(\s*(\w+)\s*\)", tiling)
    ns = "optiling::" if re.search(r"namespace\s+optiling", tiling) else ""
    out = ['#include "nearmiss_host.h"', '#line 1 "host_tiling_src"', tiling,
           '#line 1 "host_operator_src"', clean("host_operator_src")]
    out.append(f"using NmTilingData = {ns}{m.group(1)};" if m else "struct NmTilingData { uint8_t raw[8]; };")
    out += ['#line 1 "kernel_src"', clean("kernel_src"), '#line 1 "nearmiss_mkb.cpp"']
    sigs = kernel_signatures(parts["kernel_src"])
    for name, params in sigs.items():
        call = ", ".join(f"(uint8_t*)a[{i}]" for i in range(len(params)))
        out.append(f"static void nm_mkb_{name}(void** a) {{ {name}({call}); }}")
        out.append(f'static int nm_mkb_reg_{name} = (nearmiss_emu::kernels()["{name}"] = nm_mkb_{name}, 0);')
    try:
        ops = json.loads(parts.get("project_json_src") or "[]")
    except json.JSONDecodeError:
        ops = []
    for op in ops if isinstance(ops, list) else []:
        if isinstance(op, dict) and isinstance(op.get("op"), str):
            out.append(f'static int nm_io_{op["op"]} = (nearmiss_emu::op_inputs()["{op["op"]}"] = '
                       f'{len(op.get("input_desc") or [])}, 0);')
    out += ['#include "nearmiss_bind.h"', '#line 1 "python_bind_src"', clean("python_bind_src")]
    return "\n".join(out) + "\n"


def compile_project(source: str, cache_dir: str | None = None) -> str:
    """Compile a MultiKernelBench candidate's C++ into a library (cached); raise ``AscendCCompileError``."""
    parts = {k: v for k, (v, _) in mkb_parts(source).items()}
    return compile_source(translation_unit(parts), cache_dir)


def _candidate_lines(msg: str, parts: dict) -> str:
    """Append the candidate line to each ``NAME_src:LINE`` of a g++ message."""
    def sub(m):
        name, line = m.group(1), int(m.group(2))
        return f"{m.group(0)} (candidate line {parts[name][1] + line - 1})" if name in parts else m.group(0)
    return re.sub(r"\b(\w+_src):(\d+)", sub, msg)


class _Arg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("scalar", ctypes.c_double), ("is_tensor", ctypes.c_int32)]


class _Out(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("ndim", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("sizes", ctypes.c_int64 * 8), ("nlaunch", ctypes.c_int32)]


NAMES = {"torch.float32": {"float", "float32", "fp32"}, "torch.float16": {"float16", "half", "fp16"},
         "torch.bfloat16": {"bfloat16", "bf16"}, "torch.int32": {"int32"}, "torch.int64": {"int64"},
         "torch.int8": {"int8"}, "torch.uint8": {"uint8"}, "torch.bool": {"bool"}, "torch.int16": {"int16"}}


def declared_types(project_json: str) -> set[str] | None:
    """Every input dtype name that ``project_json_src`` declares (None when it declares none or does not parse)."""
    try:
        ops = json.loads(project_json or "[]")
    except json.JSONDecodeError:
        return None
    out = {str(t).lower() for op in (ops if isinstance(ops, list) else []) if isinstance(op, dict)
           for d in op.get("input_desc") or [] if isinstance(d, dict) for t in d.get("type") or []}
    return out or None


def ops_module(lib_path: str, allowed: set[str] | None = None) -> types.ModuleType:
    """A ``custom_ops_lib`` module: ``custom_ops_lib.NAME(*tensors_and_scalars)`` calls the bound NAME.

    Tensors must be contiguous CPU tensors; the result is a new CPU tensor (copied out of
    the library's buffer). Raises ``AscendCViolation`` for a broken hardware rule, and
    ``TypeError`` for a floating tensor whose dtype ``allowed`` (the declared input types)
    leaves out: the operator refuses it, as its aclnn entry would.
    """
    import torch

    lib = ctypes.CDLL(lib_path)
    lib.nm_call.restype = ctypes.c_int
    lib.nm_launch_name.restype = ctypes.c_char_p
    lib.nm_launch_blocks.restype = ctypes.c_uint32
    rev = {v: k for k, v in DTYPES.items()}
    mod = types.ModuleType("custom_ops_lib")

    def call(name: str, *args):
        keep = []
        arr = (_Arg * max(1, len(args)))()
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor):
                if allowed and a.is_floating_point() and not NAMES.get(str(a.dtype), set()) & allowed:
                    raise TypeError(f"custom_ops_lib.{name}: {a.dtype} input; the operator declares "
                                    f"{', '.join(sorted(allowed))}")
                t = a.detach()
                if t.device.type != "cpu" or not t.is_contiguous():
                    t = t.cpu().contiguous()
                keep.append(t)
                if t.dim() > 8 or str(t.dtype) not in DTYPES:
                    raise AscendCCompileError(f"custom_ops_lib.{name}: unsupported tensor {t.dtype} with {t.dim()} dims")
                arr[i].data, arr[i].ndim, arr[i].dtype, arr[i].is_tensor = t.data_ptr(), t.dim(), DTYPES[str(t.dtype)], 1
                for k, s in enumerate(t.shape):
                    arr[i].sizes[k] = s
            else:
                arr[i].scalar, arr[i].is_tensor = float(a), 0
        out, err = _Out(), ctypes.create_string_buffer(2048)
        rc = lib.nm_call(name.encode(), len(args), arr, ctypes.byref(out), err, len(err))
        if rc != 0:
            kind, _, msg = err.value.decode(errors="replace").partition("\n")
            raise AscendCViolation(kind, msg)
        shape = [out.sizes[k] for k in range(out.ndim)]
        dtype = getattr(torch, rev.get(out.dtype, "torch.float32").split(".")[1])
        res = torch.empty(shape, dtype=dtype)
        if res.numel():
            ctypes.memmove(res.data_ptr(), out.data, res.numel() * res.element_size())
        tensors = [t for t in keep] + [res]
        for k in range(out.nlaunch):
            for f in list(ON_LAUNCH.values()):
                f(lib.nm_launch_name(k).decode(), int(lib.nm_launch_blocks(k)), tensors)
        return res

    mod.__getattr__ = lambda name: (lambda *a: call(name, *a))  # module-level __getattr__ (PEP 562)
    return mod


def materialise(mod: types.ModuleType, cache_dir: str | None = None) -> None:
    """Give a loaded MultiKernelBench candidate module its ``ModelNew`` (no-op for other modules).

    Compiles (or loads from the cache) the project, then executes ``model_src`` in the
    module's namespace with ``custom_ops_lib`` bound to it and a stub ``torch_npu``.
    A compile error is raised when ``ModelNew`` is constructed's module loads (compile_error).
    """
    src = getattr(mod, "model_src", None)
    if not isinstance(src, str) or hasattr(mod, "ModelNew") or not isinstance(getattr(mod, "kernel_src", None), str):
        return
    path = getattr(mod, "__file__", None)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    try:
        lib = compile_project(source, cache_dir)
    except AscendCCompileError as e:
        raise AscendCCompileError(_candidate_lines(str(e), mkb_parts(source)), e.line) from None
    ops = ops_module(lib, declared_types(getattr(mod, "project_json_src", "")))
    saved = {k: sys.modules.get(k) for k in ("custom_ops_lib", "torch_npu")}
    sys.modules["custom_ops_lib"] = ops
    sys.modules["torch_npu"] = types.ModuleType("torch_npu")
    try:
        exec(compile(src, f"{path}:model_src", "exec"), mod.__dict__)  # noqa: S102 - the candidate's own Python
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    mod.custom_ops_lib = ops
