"""Host-code allowlist: what ``ModelNew`` and module-level code may do besides launching kernels.

Host code may allocate, view, reshape and query tensors, compute launch parameters and
launch the file's ``@triton.jit`` kernels. The constructs below have no place in that and
are how host computation or an escape hides from the other checks; each is an error
(``host_code``) with its line:

- host numerics outside torch: ``numpy``/``scipy`` (ufuncs, ``.reduce``, BLAS), ``.numpy()``,
  ``.tolist()`` (values moved to Python for ``math`` or loops);
- torch reached in ways a name check cannot resolve: ``getattr`` with a non-constant name,
  dunder methods (``x.__matmul__``), ``operator.methodcaller``/``attrgetter``, ``torch._C``,
  ``sys.modules``, frames (``sys._getframe``, ``inspect``), ``gc``;
- code loaded or run out of sight: ``marshal``, ``importlib``, ``types.FunctionType``/``CodeType``;
- native code, threads and processes: ``ctypes``, ``cffi``, ``threading``, ``_thread``,
  ``multiprocessing``, ``_posixsubprocess``, ``signal``, ``os`` process and fd calls;
- tensor subclasses (``__torch_function__``/``__torch_dispatch__``, a class deriving from
  ``torch.Tensor``): values computed lazily after ``forward`` returns;
- a decorator named like ``jit``/``autotune``/``heuristics`` that is not Triton's (a host
  helper passing for a kernel);
- torch compute in a lambda (a grid callable runs inside the launch) or in module-level
  statements (import-time work).

``if __name__ == "__main__":`` blocks never run on import and are not audited.
"""

from __future__ import annotations

import ast

from tools.records import Finding

#: Modules whose import alone is an error in a candidate.
FORBIDDEN_MODULES = {"numpy", "scipy", "marshal", "importlib", "ctypes", "cffi", "threading", "_thread",
                     "multiprocessing", "_posixsubprocess", "signal", "gc", "inspect", "types", "operator",
                     "code", "codeop", "pickle", "dill", "cloudpickle", "numba", "jax", "cupy", "concurrent",
                     # the product's own modules: its probes, protocol and sandbox are not a kernel's business
                     "tools", "agents", "graph", "kb", "nearmiss"}
#: Dotted names (after alias resolution) that are errors wherever they appear.
FORBIDDEN_NAMES = ("torch._C", "sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile",
                   "sys.addaudithook", "builtins.__dict__", "torch._dynamo", "torch.ops.aten", "torch.utils._python_dispatch",
                   "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.setsid", "os.dup", "os.dup2", "os.open",
                   "os.pipe", "os.write", "os.writev", "os.fdopen", "os.read", "os.exec", "os.spawn", "os.posix_spawn", "os.system", "os.popen", "os._exit",
                   "os.environ")
#: Dunder attributes host code may use.
ALLOWED_DUNDERS = {"__init__", "__name__", "__qualname__", "__doc__", "__file__"}
#: Methods that move tensor values into Python or numpy (host computation).
HOST_VALUE_METHODS = {"tolist", "numpy", "__array__", "__dlpack__"}
#: Calls allowed in a lambda (launch-parameter arithmetic).
LAMBDA_CALLS = {"triton.cdiv", "triton.next_power_of_2", "max", "min", "int", "len", "math.ceil", "math.floor",
                "math.log2", "math.sqrt", "abs", "round", "tuple"}
#: The one product API a candidate may import: the AscendC launch of the emulator backend (the
#: direct-launch form, README "AscendC kernels on a CPU emulator"); ``from tools.ascendc import launch``.
LAUNCH_API = ("tools.ascendc", "launch")
_TRITON_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit.jit",
                      "triton.testing.perf_report"}


def _finding(node: ast.AST, message: str, severity: str = "error") -> Finding:
    line = getattr(node, "lineno", None)
    return Finding(check="host_code", severity=severity, message=f"line {line}: {message}" if line else message)


def _main_guard(n: ast.AST) -> bool:
    return isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) and "__main__" in ast.unparse(n.test)


def _audited(tree: ast.Module):
    """Every node except those of ``if __name__ == "__main__":`` blocks."""
    stack = [n for n in tree.body if not _main_guard(n)]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(c for c in ast.iter_child_nodes(n) if not _main_guard(c))


def check_host_allowlist(c) -> Finding | None:
    """The first host-code construct outside the allowlist (module docstring), or None.

    Args:
        c: a ``tools.static_checks.CandidateAST``.
    """
    for f in host_findings(c):
        return f
    return None


def host_findings(c) -> list[Finding]:
    """Every host-code error of a parsed candidate, in source order."""
    from tools.candidate_ast import triton_kernels

    out: list[Finding] = []
    real = triton_kernels(c.tree)  # decorators resolved through the imports, not by their last name
    kernels = {id(k) for k in real}
    in_kernel: set[int] = set()
    for k in real:
        in_kernel |= {id(x) for x in ast.walk(k)}
    for n in _audited(c.tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            if isinstance(n, ast.ImportFrom) and (n.module or "") == "os":
                mods += [f"os.{a.name}" for a in n.names]
            if isinstance(n, ast.ImportFrom) and n.module == LAUNCH_API[0] and [a.name for a in n.names] == [LAUNCH_API[1]]:
                continue  # the AscendC launch API (it runs the candidate's own kernel source)
            for m in mods:
                if m.split(".")[0] in FORBIDDEN_MODULES:
                    out.append(_finding(n, f"imports {m}: not host code for a Triton kernel (host compute, "
                                           "hidden code, native code, threads or processes)"))
                elif any(m == x or m.startswith(x + ".") for x in FORBIDDEN_NAMES):
                    out.append(_finding(n, f"imports {m}"))
            continue
        if id(n) in in_kernel:
            continue
        if isinstance(n, ast.Attribute):
            name = c.dotted(n) or ""
            if any(name == x or name.startswith(x + ".") for x in FORBIDDEN_NAMES):
                out.append(_finding(n, f"{name}: not host code (interpreter internals, module table, processes, signals, fds or the environment)"))
            elif n.attr.startswith("__") and n.attr.endswith("__") and n.attr not in ALLOWED_DUNDERS:
                out.append(_finding(n, f"`{ast.unparse(n)}`: a dunder method called by name hides the operation"))
        elif isinstance(n, ast.Call):
            name = c.dotted(n.func) or ""
            if name in ("getattr", "setattr", "delattr", "builtins.getattr") and len(n.args) >= 2 and not (
                    isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str)):
                out.append(_finding(n, f"{name}() with a computed attribute name"))
            elif name in ("globals", "locals", "vars", "__import__"):
                out.append(_finding(n, f"{name}() reaches names the audit cannot follow"))
            elif isinstance(n.func, ast.Attribute) and n.func.attr in HOST_VALUE_METHODS:
                out.append(_finding(n, f".{n.func.attr}() moves tensor values to the host"))
        elif isinstance(n, ast.Lambda):
            for x in ast.walk(n.body):
                if isinstance(x, ast.Call):
                    name = c.dotted(x.func) or ""
                    if name not in LAMBDA_CALLS and not (isinstance(x.func, ast.Attribute) and x.func.attr in (
                            "numel", "size", "stride", "dim", "get")):
                        out.append(_finding(x, f"`{ast.unparse(x)[:60]}` in a lambda: a grid callable or "
                                               "module-level lambda may only compute launch parameters"))
                        break
        elif isinstance(n, ast.ClassDef):
            bases = [c.dotted(b) or "" for b in n.bases]
            if any(b in ("torch.Tensor", "torch._C.TensorBase") for b in bases):
                out.append(_finding(n, f"class {n.name} derives from torch.Tensor (values outside kernels)"))
            for b in n.body:
                if isinstance(b, ast.FunctionDef) and b.name in ("__torch_function__", "__torch_dispatch__"):
                    out.append(_finding(b, f"{n.name}.{b.name}: intercepts torch calls"))
        if isinstance(n, ast.FunctionDef) and id(n) not in kernels:
            for d in n.decorator_list:
                node = d.func if isinstance(d, ast.Call) else d
                full = c.dotted(node) or ""
                if full.split(".")[-1] in ("jit", "autotune", "heuristics") and full not in _TRITON_DECORATORS:
                    out.append(_finding(d, f"@{ast.unparse(d)} on {n.name} is not triton.jit"))
    for n in c.tree.body:  # import-time work: module-level statements other than definitions
        if isinstance(n, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.With)):
            for x in ast.walk(n):
                if isinstance(x, ast.Call):
                    name = c.dotted(x.func) or ""
                    if name.startswith("torch.") and name.split(".")[1] not in _MODULE_TORCH_OK:
                        out.append(_finding(x, f"{name}() at import: module-level torch work"))
                        break
    return sorted(out, key=lambda f: int(f.message.split(":")[0][5:]) if f.message.startswith("line ") else 0)


#: torch names module-level code may call (configuration, dtypes, devices).
_MODULE_TORCH_OK = {"device", "dtype", "manual_seed", "set_default_dtype", "get_default_dtype", "finfo", "iinfo",
                    "cuda", "float32", "float16", "bfloat16", "Size", "library", "backends"}


# ---------------------------------------------------------------- GPU semantics the interpreter hides
def gpu_semantics_findings(c) -> list[Finding]:
    """``tl.dot`` precision and float atomics: risks the CPU interpreter cannot show.

    - ``tl.dot`` on a GPU defaults to tf32 for fp32 inputs (Triton's ``input_precision``
      default, ``TRITON_F32_DEFAULT``); the interpreter computes fp32. A precision chosen
      by a non-constant (a constexpr parameter) is an error: the interpreter run cannot say
      which one a GPU gets. The default is a warning.
    - float atomics (``tl.atomic_add`` ...) sum in a nondeterministic order on a GPU; the
      interpreter runs programs in order. A warning.
    """
    out: list[Finding] = []
    for k in c.kernels:
        for n in ast.walk(k):
            if not isinstance(n, ast.Call) or not isinstance(n.func, ast.Attribute):
                continue
            if n.func.attr == "dot":
                kws = {kw.arg: kw.value for kw in n.keywords}
                prec = kws.get("input_precision", kws.get("allow_tf32"))
                if prec is None:
                    out.append(Finding(check="tf32_dot", severity="warning",
                                       message=f"line {n.lineno}: tl.dot without input_precision='ieee' runs in tf32 "
                                               "on GPUs for fp32 inputs (the interpreter computes fp32)"))
                elif not isinstance(prec, ast.Constant):
                    out.append(Finding(check="tf32_dot", severity="error",
                                       message=f"line {n.lineno}: tl.dot precision `{ast.unparse(prec)}` is not a "
                                               "constant: the interpreter's fp32 result says nothing of a GPU's"))
            elif n.func.attr.startswith("atomic_") and n.func.attr not in ("atomic_cas", "atomic_xchg"):
                out.append(Finding(check="atomic_order", severity="warning",
                                   message=f"line {n.lineno}: tl.{n.func.attr}: a GPU applies atomics in no fixed "
                                           "order (float sums differ run to run); the interpreter shows one order"))
    return out
