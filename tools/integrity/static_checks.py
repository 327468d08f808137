"""Static integrity checks of a candidate (ARCHITECTURE §7), one small function each.

Each ``check_x(c: CandidateAST) -> Finding | None`` looks at the candidate's AST for one
way of passing the tests without a correct kernel, with a comment saying why the pattern
is a cheat. ``STATIC_CHECKS`` is the registry and ``run_static_checks`` composes it.

What is looked at: ``ModelNew`` and every module-level function or class it reaches by
name (host wrappers), never the ``@triton.jit`` kernels' bodies (except for precision
casts) and never a copy of the reference ``Model`` that ``ModelNew`` does not use. Names
are resolved through imports and simple assignments (``import torch.nn.functional as F``,
``from torch import softmax``, ``sm = torch.softmax``, ``getattr(torch, "softmax")``).
"""

from __future__ import annotations

import ast
from typing import Callable

from tools.integrity.candidate_ast import CandidateAST, _aliases, _is_jit, triton_kernels  # noqa: F401 (re-exported)
from tools.integrity.host_allowlist import FORBIDDEN_MODULES, FORBIDDEN_NAMES
from tools.records import Finding

#: torch functions that only allocate, describe or configure tensors (allowed in ModelNew).
ALLOWED_TORCH = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_strided", "is_tensor", "device", "dtype", "Size", "no_grad", "inference_mode",
    "manual_seed", "get_default_dtype", "finfo", "iinfo", "cuda", "float32", "float16", "bfloat16", "float64",
    "int32", "int64", "int16", "int8", "uint8", "bool", "promote_types", "result_type", "is_floating_point",
    "is_grad_enabled", "numel", "Generator", "library", "nn", "Tensor", "float", "half", "double", "long", "int",
    "broadcast_shapes", "get_device",
}
#: torch.nn / torch.cuda names allowed in ModelNew (containers, parameters, device queries).
ALLOWED_NN = {"Module", "Parameter", "ParameterList", "ModuleList", "ModuleDict", "ParameterDict", "Identity",
              "init", "Buffer"}
#: tensor methods that compute (a torch fallback) rather than allocate, view, move or describe.
COMPUTE_METHODS = {
    "sum", "mean", "var", "std", "exp", "log", "softmax", "log_softmax", "matmul", "mm", "bmm", "max", "min",
    "sqrt", "rsqrt", "pow", "abs", "relu", "sigmoid", "tanh", "cumsum", "cumprod", "norm", "amax", "amin",
    "logsumexp", "argmax", "argmin", "topk", "sort", "clamp", "clip", "where", "masked_fill", "gather", "scatter",
    "scatter_add", "index_select", "einsum", "prod", "addmm", "baddbmm", "conv1d", "conv2d", "layer_norm",
    "gelu", "silu", "erf", "sin", "cos", "mul", "add", "sub", "div", "neg", "reciprocal", "square",
    "exp2", "log2", "log1p", "expm1", "lerp", "outer", "dot", "tril", "triu", "cross_entropy", "nll_loss",
    "true_divide", "floor_divide", "remainder", "fmod", "maximum", "minimum", "softplus", "mv", "addcmul",
    "addcdiv", "median", "mode", "kthvalue", "cummax", "cummin", "logcumsumexp", "floor", "ceil", "round",
    "sign", "trunc", "frac", "hardtanh", "leaky_relu", "elu", "selu", "mish", "logit", "index_add", "index_put",
    "masked_scatter", "dist", "cdist", "renorm", "diff", "flip", "roll", "all", "any", "nansum", "nanmean",
}
#: Modules whose attributes a candidate may not reassign (timers, the test harness, the compiler).
PATCHABLE_ROOTS = {"torch", "time", "triton", "numpy", "builtins", "sys", "math", "random", "os", "gc",
                   "importlib", "functools"}
#: Imports that only make sense for threads, processes or asynchronous work.
CONCURRENCY_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "asyncio"}
#: Imports that open files or the network.
IO_MODULES = {"socket", "urllib", "requests", "http", "ftplib", "smtplib", "pathlib", "shutil", "pickle",
              "subprocess", "tempfile", "glob", "io", "mmap", "ctypes", "importlib", "urllib3", "httpx"}
#: os functions that touch the file system or processes (os.environ / os.path string helpers are fine).
OS_IO = {"open", "remove", "unlink", "system", "popen", "listdir", "walk", "scandir", "fdopen", "read", "write",
         "makedirs", "mkdir", "rename", "replace", "rmdir", "fork", "execv", "execve", "spawnv", "chdir",
         "symlink", "link", "truncate", "kill"}
LOW_PRECISION = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8e4nv", "float8e5",
                 "float8_e4m3fnuz", "float8_e5m2fnuz"}


def _scope(tree: ast.Module, cls: ast.ClassDef | None) -> list[ast.AST]:
    """``ModelNew`` plus the module-level non-kernel functions and classes it, or a module-level statement, names."""
    if cls is None:
        return []
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not _is_jit(n)}
    scope, todo, seen = [], [cls], {cls.name}
    for n in tree.body:  # a function named by a module-level statement is reachable by any name at run time
        if not isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)) \
                and not (isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)):
            for sub in ast.walk(n):
                if isinstance(sub, ast.Name) and sub.id in top and sub.id not in seen:
                    seen.add(sub.id)
                    todo.append(top[sub.id])
    while todo:
        node = todo.pop()
        scope.append(node)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id in top and sub.id not in seen:
                seen.add(sub.id)
                todo.append(top[sub.id])
    return scope


def _shape_names(scope: list[ast.AST]) -> set[str]:
    """Names assigned from ``.shape``, ``.size()``, ``.numel()`` or ``len()`` in the scope."""
    names: set[str] = set()
    for root in scope:
        for n in ast.walk(root):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None and _mentions_shape(n.value, names):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    for x in ast.walk(t):
                        if isinstance(x, ast.Name):
                            names.add(x.id)
    return names


def _mentions_shape(node: ast.AST, names: set[str]) -> bool:
    """True when an expression reads a size: ``.shape``, ``.size()``, ``.numel()``, ``len(t)`` or a size name.

    The rank (``len(x.shape)``, ``.ndim``, ``.dim()``) is not a size.
    """
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        arg = node.args[0] if node.args else None
        return not (isinstance(arg, ast.Attribute) and arg.attr == "shape")
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("size", "numel"):
        return True
    if isinstance(node, ast.Name) and node.id in names:
        return True
    return any(_mentions_shape(x, names) for x in ast.iter_child_nodes(node))


def parse_candidate(source: str, reference_source: str | None = None) -> CandidateAST:
    """Parse a candidate (and optionally its reference) for the checks.

    Raises:
        SyntaxError: the candidate does not parse.
    """
    tree = ast.parse(source)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)
    ref = None
    if reference_source:
        try:
            ref = ast.parse(reference_source)
        except SyntaxError:
            ref = None
    scope = _scope(tree, cls)
    c = CandidateAST(tree=tree, source=source, aliases=_aliases(tree), modelnew=cls, scope=scope,
                     kernels=[n for n in ast.walk(tree) if _is_jit(n)], reference_tree=ref)
    c.shape_names = _shape_names(scope)
    for m in (cls.body if cls else []):
        if isinstance(m, ast.FunctionDef) and m.name == "__init__":
            c.init_nodes |= {id(x) for x in ast.walk(m)}
    return c


def _finding(check: str, node: ast.AST | None, message: str, severity: str = "error") -> Finding:
    where = f"line {node.lineno}: " if node is not None and hasattr(node, "lineno") else ""
    return Finding(check=check, severity=severity, message=where + message)


# --------------------------------------------------------------------------- the checks
def check_torch_compute(c: CandidateAST) -> Finding | None:
    """Torch compute, ``torch.nn.functional`` or a torch layer in host code.

    Why a cheat: the result would come from PyTorch, not from the kernel; the kernel may
    even be launched for show. Allowed: allocation, views, shape/stride queries,
    ``.contiguous()`` and dtype casts (none of them is in ``COMPUTE_METHODS``).

    A compute call whose tensors are all buffers the candidate allocated and passed to a
    kernel launch (``loss.mean()`` of per-row losses) may be an honest epilogue: it is a
    warning here, and the audit run decides by the amount of data it reads
    (``tools.integrity.audit.TORCH_FALLBACK_FRACTION``). Any other is an error.
    """
    for n in c.walk():
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return _finding("torch_compute", n, "matrix product with @ in ModelNew (a torch fallback)")
    outputs = _kernel_outputs(c)
    warning = None
    backward = _autograd_backward_nodes(c)
    scalar = {id(x.args[0]) for x in c.walk() if isinstance(x, ast.Call) and isinstance(x.func, ast.Name)
              and x.func.id == "int" and len(x.args) == 1 and isinstance(x.args[0], ast.Call)
              and isinstance(x.args[0].func, ast.Attribute) and x.args[0].func.attr in LAUNCH_REDUCTIONS
              and not x.args[0].args and not x.args[0].keywords}
    for n, f in _torch_compute_calls(c):
        if id(n) in backward:
            continue  # autograd backward: never runs in a forward check
        if id(n) in scalar:
            warning = warning or _finding("torch_compute", n, f"`int({ast.unparse(n)[:40]})`: a launch parameter "
                                          "from a full reduction (the audit run's read count decides)", "warning")
            continue
        operands = [n.func.value] if isinstance(n.func, ast.Attribute) and not (c.dotted(n.func) or "").startswith(
            "torch.") else []
        operands += list(n.args)
        roots = [_root_name(x) for x in operands if not isinstance(x, ast.Constant)]
        if roots and all(r in outputs for r in roots):
            warning = warning or _finding("torch_compute", n, f.message.split(": ", 1)[-1]
                                          + " on a kernel output (an epilogue if it reads little data)", "warning")
        else:
            return f
    return warning


#: Full reductions whose ``int(...)`` is a launch parameter (``int(lengths.max())``: varlen max_seqlen).
LAUNCH_REDUCTIONS = {"max", "min", "amax", "amin"}
#: Methods of a ``torch.autograd.Function`` that run only when gradients are computed.
BACKWARD_METHODS = {"backward", "jvp", "vjp", "setup_context"}


def _autograd_backward_nodes(c: CandidateAST) -> set[int]:
    """Nodes of the backward methods of ``torch.autograd.Function`` subclasses no code calls by name.

    A forward check never computes gradients, so torch in ``backward`` is not forward host
    compute; a class whose ``backward`` is called explicitly (``Cls.backward(...)``) keeps it.
    """
    out: set[int] = set()
    for cls in ast.walk(c.tree):
        if not isinstance(cls, ast.ClassDef) or not any(
                (c.dotted(b) or "") in ("torch.autograd.Function", "torch.autograd.function.Function")
                for b in cls.bases):
            continue
        called = any(isinstance(x, ast.Attribute) and x.attr in BACKWARD_METHODS and isinstance(x.value, ast.Name)
                     and x.value.id in (cls.name, "cls", "self") and isinstance(getattr(x, "ctx", None), ast.Load)
                     for x in ast.walk(c.tree))
        if called:
            continue
        for m in cls.body:
            if isinstance(m, ast.FunctionDef) and m.name in BACKWARD_METHODS:
                out |= {id(x) for x in ast.walk(m)}
    return out


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _kernel_outputs(c: CandidateAST) -> set[str]:
    """Names bound to a candidate allocation (``torch.empty``...) and passed to a kernel launch."""
    kernels = {k.name for k in c.kernels}
    allocated, launched = set(), set()
    for n in c.walk():
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call):
            name = c.dotted(n.value.func) or ""
            if name.split(".")[-1] in ("empty", "empty_like", "zeros", "zeros_like", "full", "new_empty",
                                       "new_zeros", "empty_strided", "ones", "ones_like"):
                allocated |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript) and _root_name(n.func.value) in kernels:
            launched |= {a.id for a in n.args if isinstance(a, ast.Name)}
    return allocated & launched


def _torch_compute_calls(c: CandidateAST):
    """(call, error finding) for every torch compute call in the host scope."""
    for n, name in c.calls():
        if id(n) in c.init_nodes:
            continue  # __init__ runs once, before any input exists: parameters, not results
        msg = None
        parts = (name or "").split(".")
        if name is None or "." not in name:
            if isinstance(n.func, ast.Attribute) and n.func.attr.rstrip("_") in COMPUTE_METHODS:
                msg = f"tensor method .{n.func.attr}() computes in PyTorch"
        elif name.startswith(("torch.nn.functional.", "torch._C._nn.", "torch.ops.", "torch.special.",
                              "torch.linalg.", "torch.fft.")) or (parts[0] == "torch" and parts[1] not in ALLOWED_TORCH):
            msg = f"{name}() computes in PyTorch inside ModelNew"
        elif name.startswith("torch.Tensor.") and parts[-1].rstrip("_") in COMPUTE_METHODS:
            msg = f"{name}() computes in PyTorch inside ModelNew"
        elif name.startswith("torch.nn.") and parts[-1][:1].isupper() and parts[-1] not in ALLOWED_NN \
                and id(n) not in c.init_nodes:  # layers built in __init__ only hold parameters
            msg = f"{name} (a PyTorch layer) inside ModelNew"
        elif parts[0] not in ("torch", "triton", "tl", "math", "os", "time") \
                and not (parts[0] == "self" and len(parts) == 2) and parts[-1].rstrip("_") in COMPUTE_METHODS:
            msg = f"tensor method .{parts[-1]}() computes in PyTorch"
        if msg:
            yield n, _finding("torch_compute", n, msg)


def check_reference_use(c: CandidateAST) -> Finding | None:
    """The reference ``Model`` used, imported or constructed by ``ModelNew``.

    Why a cheat: the reference computes the expected output; calling it is a fallback.
    """
    for n in c.walk():
        if isinstance(n, ast.Name) and n.id == "Model":
            return _finding("reference_call", n, "ModelNew uses the reference Model")
        if isinstance(n, ast.Attribute) and n.attr == "Model":
            return _finding("reference_call", n, f"ModelNew uses {ast.unparse(n)}")
    for n in ast.walk(c.tree):
        mods = [a.name for a in n.names] if isinstance(n, ast.Import) else \
            [n.module or ""] if isinstance(n, ast.ImportFrom) else []
        if any(m.split(".")[0] in ("reference", "nearmiss_reference") for m in mods):
            return _finding("reference_call", n, "the candidate imports the reference module")
    return None


def check_try_except(c: CandidateAST) -> Finding | None:
    """try/except (or ``contextlib.suppress``) in host code.

    Why a cheat: a kernel that fails to compile or run silently falls back to another path.
    """
    for n in c.walk():
        if isinstance(n, ast.Try) or (hasattr(ast, "TryStar") and isinstance(n, ast.TryStar)):
            return _finding("try_except", n, "try/except in ModelNew (a fallback path around the kernel)")
    for n, name in c.calls():
        if name and name.endswith("suppress"):
            return _finding("try_except", n, f"{name}() in ModelNew (an exception-swallowing fallback)")
    return None


def check_inherits_reference(c: CandidateAST) -> Finding | None:
    """``ModelNew`` subclassing the reference.

    Why a cheat: it inherits the reference's ``forward`` (``super().forward`` is PyTorch).
    """
    cls = c.modelnew
    if cls and any((c.dotted(b) or ast.unparse(b)).split(".")[-1] == "Model" for b in cls.bases):
        return _finding("inherits_reference", cls, "ModelNew inherits from the reference Model")
    return None


def check_shape_special_case(c: CandidateAST) -> Finding | None:
    """An equality test of a shape against a literal size choosing a code path.

    Why a cheat: it serves the tested shape from a path the other shapes never take
    (a precomputed answer, a kernel tuned to pass one size). Tests against 0 and 1
    (empty inputs, broadcasting) and ordering tests (``N > 1024`` picking a block size)
    are honest and not flagged.
    """
    for n in c.walk():
        if not isinstance(n, (ast.If, ast.IfExp, ast.While)):
            continue
        test = getattr(n, "test", None)
        for cmp in ast.walk(test) if test is not None else ():
            if not isinstance(cmp, ast.Compare) or not any(isinstance(o, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                            for o in cmp.ops):
                continue
            sides = [cmp.left, *cmp.comparators]
            if any(_mentions_shape(s, c.shape_names) for s in sides) and any(_big_literal(s) for s in sides):
                return _finding("shape_special_case", n,
                                f"`{ast.unparse(cmp)}` picks a code path for one literal size")
    return None


def _big_literal(node: ast.AST) -> bool:
    vals = [x.value for x in ast.walk(node) if isinstance(x, ast.Constant)]
    return bool(vals) and all(isinstance(v, int) and not isinstance(v, bool) for v in vals) \
        and any(v > 1 for v in vals) and not isinstance(node, ast.BinOp)


def check_cache(c: CandidateAST) -> Finding | None:
    """Results kept across calls: memo decorators, containers filled in forward, tensor-identity keys.

    Why a cheat: a later call with the same shape or buffer gets an old answer instead
    of a computed one (the suite's fresh values in the same buffers expose it).
    """
    for n in c.walk():
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in n.decorator_list:
                name = c.dotted(d.func if isinstance(d, ast.Call) else d) or ""
                if name.split(".")[-1] in ("lru_cache", "cache", "cached_property", "memoize") \
                        and not _launch_arithmetic(c, n):
                    return _finding("cache", d, f"@{name} keeps results across calls")
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Attribute) and _root_name(n.value) == "self":
            return _finding("cache", n, f"`return {ast.unparse(n.value)}`: an output kept on the module")
        if isinstance(n, ast.Global):
            return _finding("cache", n, f"`global {', '.join(n.names)}`: module state written by ModelNew")
        if isinstance(n, ast.Attribute) and n.attr in ("_version", "_cdata"):
            return _finding("cache", n, f".{n.attr} keys on a tensor's identity")
        if isinstance(n, (ast.Assign, ast.AugAssign)) and id(n) not in c.init_nodes:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and _persistent(t.value, c):
                    return _finding("cache", n, f"`{ast.unparse(t)} = ...` stores results in a container")
    # ``p.data_ptr() % 16``: an alignment test (vectorised loads, TMA) keys nothing
    aligned = {id(b.left) for b in ast.walk(c.tree) if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mod)
               and isinstance(b.right, ast.Constant) and isinstance(b.right.value, int)
               and 0 < b.right.value <= ALIGNMENT_MAX and b.right.value & (b.right.value - 1) == 0}
    for n, name in c.calls():
        if isinstance(n.func, ast.Attribute) and n.func.attr in ("get", "setdefault", "update", "append", "add",
                                                                  "pop", "__setitem__", "__getitem__") \
                and _persistent(n.func.value, c) and id(n) not in c.init_nodes:
            return _finding("cache", n, f"{ast.unparse(n.func)}() keeps results across calls")
        last = (name or "").split(".")[-1] if name else (n.func.attr if isinstance(n.func, ast.Attribute) else "")
        if last in ("data_ptr", "untyped_storage", "storage", "_cdata") and isinstance(n.func, ast.Attribute) \
                and id(n) not in aligned:
            return _finding("cache", n, f".{last}() keys on a tensor's buffer address")
        if name in ("id", "hash"):
            return _finding("cache", n, f"{name}() keys on an object's identity")
    return None


#: Largest power of two ``x.data_ptr() % N`` may test as an alignment, bytes (TMA needs 16,
#: vectorised loads up to 128; a page-sized or larger modulus is no alignment test).
ALIGNMENT_MAX = 256


def _launch_arithmetic(c: CandidateAST, fn: ast.AST) -> bool:
    """True when a function only computes launch parameters from ints (a memoised launch config).

    The same rule as a grid callable (``host_allowlist._grid_body_findings``: allowed calls,
    no stores into objects, no nonlocal state), and no container literal or ``torch`` name:
    what it returns is ints, not kept results.
    """
    from tools.integrity.host_allowlist import _grid_body_findings, _GridResolver
    for x in ast.walk(fn):
        if isinstance(x, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)):
            return False
        if isinstance(x, ast.Name) and (c.dotted(x) or x.id).split(".")[0] == "torch":
            return False
        if isinstance(x, ast.Attribute) and x.attr in ("numel", "size", "stride", "get", "shape", "data_ptr"):
            return False  # tensor (or dict) arguments: keyed by identity
    return not _grid_body_findings(c, fn, _GridResolver(c), set())


def _persistent(node: ast.AST, c: CandidateAST) -> bool:
    """True for ``self.x`` and for module-level names bound to a dict, list or set: state that outlives a call."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return True
    if isinstance(node, ast.Name):
        for s in c.tree.body:
            if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None and \
                    any(isinstance(t, ast.Name) and t.id == node.id
                        for t in (s.targets if isinstance(s, ast.Assign) else [s.target])):
                v = s.value
                return isinstance(v, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp)) or (
                    isinstance(v, ast.Call) and (c.dotted(v.func) or "").split(".")[-1] in (
                        "dict", "list", "set", "OrderedDict", "defaultdict", "WeakKeyDictionary",
                        "WeakValueDictionary"))
    return False


def check_monkey_patch(c: CandidateAST) -> Finding | None:
    """Reassigning attributes of torch, time, triton or builtins anywhere in the file.

    Why a cheat: a patched ``torch.allclose``, timer, ``do_bench`` or launcher changes
    what the harness measures rather than what the kernel computes.
    """
    for n in ast.walk(c.tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign,
                                                                                            ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Attribute):
                root = (c.dotted(t) or "").split(".")[0]
                if root in PATCHABLE_ROOTS:
                    return _finding("monkey_patch", n, f"`{ast.unparse(t)} = ...` patches {root}")
        if isinstance(n, ast.Call):
            name = c.dotted(n.func) or ""
            if name in ("setattr", "delattr", "object.__setattr__") and n.args:
                root = (c.dotted(n.args[0]) or "").split(".")[0]
                if root in PATCHABLE_ROOTS:
                    return _finding("monkey_patch", n, f"{name}({ast.unparse(n.args[0])}, ...) patches {root}")
    return None


def check_streams_threads(c: CandidateAST) -> Finding | None:
    """Side streams, CUDA graphs, threads or processes.

    Why a cheat: work on another stream or thread escapes the harness's synchronisation
    and timing (the timer stops before the kernel ends), or races with the check.
    """
    for n in ast.walk(c.tree):
        mods = [a.name for a in n.names] if isinstance(n, ast.Import) else \
            [n.module or ""] if isinstance(n, ast.ImportFrom) else []
        bad = [m for m in mods if m.split(".")[0] in CONCURRENCY_MODULES]
        if bad:
            return _finding("streams_threads", n, f"imports {bad[0]} (threads or processes)")
        if isinstance(n, ast.Call):
            name = c.dotted(n.func) or ""
            if name.startswith(("torch.cuda.", "torch.xpu.", "torch.npu.")) and name.split(".")[-1] in (
                    "Stream", "stream", "set_stream", "Event", "graph", "CUDAGraph", "ExternalStream",
                    "current_stream", "StreamContext"):
                return _finding("streams_threads", n, f"{name}() runs work outside the default stream")
    return None


def check_precision_downgrade(c: CandidateAST) -> Finding | None:
    """Casts to fp16/bf16/fp8 when the reference works in fp32 only.

    Why a cheat: lower precision is faster and often passes loose tolerances, but it is
    not the reference's computation (a repair may not trade accuracy for a pass). Only
    applied when the reference source is known and mentions no low-precision dtype.
    """
    if c.reference_tree is None:
        return None
    ref_names = {x.attr for x in ast.walk(c.reference_tree) if isinstance(x, ast.Attribute)} | \
                {x.id for x in ast.walk(c.reference_tree) if isinstance(x, ast.Name)}
    if ref_names & LOW_PRECISION:
        return None
    for root in list(c.scope) + list(c.kernels):
        for n in ast.walk(root):
            if isinstance(n, ast.Attribute) and n.attr in LOW_PRECISION:
                return _finding("precision_downgrade", n,
                                f"{ast.unparse(n)}: lower precision than the reference's fp32")
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("half", "bfloat16"):
                return _finding("precision_downgrade", n, f".{n.func.attr}(): lower precision than the reference's fp32")
            if isinstance(n, ast.keyword) and n.arg in ("allow_tf32", "input_precision") and \
                    isinstance(n.value, ast.Constant) and n.value.value in (True, "tf32", "tf32x3", "bf16x3"):
                return _finding("precision_downgrade", n.value,
                                f"{n.arg}={n.value.value!r}: reduced-precision dot products")
    return None


def check_exec_io(c: CandidateAST) -> Finding | None:
    """exec/eval, dynamic imports, file or network access anywhere in the file.

    Why a cheat: code the audit cannot read (exec of a string), or answers read from disk
    or the network (a stored expected output) instead of computed.
    """
    for n in ast.walk(c.tree):
        mods = [a.name for a in n.names] if isinstance(n, ast.Import) else \
            [n.module or ""] if isinstance(n, ast.ImportFrom) else []
        bad = [m for m in mods if m.split(".")[0] in IO_MODULES]
        if bad:
            return _finding("exec_io", n, f"imports {bad[0]} (files, network or dynamic code)")
        if not isinstance(n, ast.Call):
            continue
        name = c.dotted(n.func) or ""
        if name in ("exec", "eval", "compile", "__import__", "open", "input", "breakpoint", "builtins.exec",
                    "builtins.eval", "builtins.open"):
            return _finding("exec_io", n, f"{name}() (dynamic code or file access)")
        parts = name.split(".")
        if parts[0] == "os" and parts[-1] in OS_IO:
            return _finding("exec_io", n, f"{name}() touches files or processes")
        if name in ("torch.load", "torch.save", "numpy.load", "numpy.save", "numpy.fromfile", "torch.from_file",
                    "torch.hub.load"):
            return _finding("exec_io", n, f"{name}() reads or writes files")
    return None


def check_host_allowlist(c: CandidateAST) -> Finding | None:
    """Host code outside the allowlist (``tools.integrity.host_allowlist``)."""
    from tools.integrity.host_allowlist import check_host_allowlist as check
    return check(c)


CheckFn = Callable[[CandidateAST], Finding | None]
#: The registry: every static check, in report order.
STATIC_CHECKS: list[CheckFn] = [
    check_torch_compute, check_reference_use, check_try_except, check_inherits_reference,
    check_shape_special_case, check_cache, check_monkey_patch, check_streams_threads,
    check_precision_downgrade, check_exec_io, check_host_allowlist,
]
from tools.ascendc.integrity import check_ascendc_kernel  # noqa: E402  (issue 18 hook: AscendC C++ checks)

STATIC_CHECKS.append(check_ascendc_kernel)


def run_static_checks(source: str, reference_source: str | None = None) -> list[Finding]:
    """Run every static check on a candidate source.

    Args:
        source: the candidate's Python source.
        reference_source: the reference's source, for checks that compare with it
            (precision); None skips them.

    Returns:
        One finding per check that fired (``error``; the GPU-semantics ones may be ``warning``); a source that does not
        parse is one ``parse`` error finding.
    """
    try:
        c = parse_candidate(source, reference_source)
    except SyntaxError as e:
        return [Finding(check="parse", severity="error", message=f"line {e.lineno}: {e.msg}")]
    from tools.integrity.host_allowlist import gpu_semantics_findings
    found = [f for f in (check(c) for check in STATIC_CHECKS) if f is not None]
    return found + _first_per_severity(gpu_semantics_findings(c))


def _first_per_severity(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        if (f.check, f.severity) not in seen:
            seen.add((f.check, f.severity))
            out.append(f)
    return out



#: Modules whose import shows intent to escape or harm (processes, native code, files and fds by
#: another name, frames, code loading, the product's own modules): every module the auditor forbids
#: (``IO_MODULES``, ``host_allowlist.FORBIDDEN_MODULES``) except those that are only a correctness
#: matter (host numerics, threads, dynamic dispatch) or harmless to import (io, pathlib, tempfile).
ESCAPE_MODULES = (IO_MODULES | FORBIDDEN_MODULES) - {
    "numpy", "scipy", "numba", "jax", "cupy", "threading", "_thread", "concurrent", "operator", "types",
    "io", "pathlib", "tempfile"}
#: Dotted names (after alias resolution) whose use or call shows intent to escape or harm: the
#: host allowlist's forbidden names except the ways around the dispatch watch (a correctness
#: matter, judged by the auditor), plus file, directory and code-loading calls.
ESCAPE_NAMES = tuple(n for n in FORBIDDEN_NAMES if n not in (
    "os.environ", "torch._C", "torch._dynamo", "torch.library", "torch.ops.aten", "torch.utils._python_dispatch")) + (
    "os.remove", "os.unlink", "os.listdir", "os.walk", "os.scandir", "os.rename", "os.replace", "os.rmdir",
    "os.symlink", "os.link", "os.truncate", "os.chdir", "torch.from_file", "numpy.fromfile",
    "exec", "eval", "compile", "__import__", "open", "breakpoint", "globals", "vars",
    "builtins.exec", "builtins.eval", "builtins.open", "builtins.__import__")
_ESCAPE_HIDDEN = {"__builtins__", "__loader__", "__spec__", "__import__"}


def escape_findings(source: str) -> list[Finding]:
    """Static findings that show intent to escape the sandbox or harm the user, run before any evaluation.

    Triage (``agents.triage``) runs these before the candidate's first evaluation: a candidate
    with one is never run. They are the escape and harm part of ``check_exec_io`` and of
    ``host_allowlist.host_findings`` (processes, native code, files and fds by any name, frames,
    code loading, the module table, the product's modules); the correctness findings (host
    numerics, torch compute, caches, precision) stay with the auditor, after the candidate ran.
    ``if __name__ == "__main__":`` blocks are not audited (they never run on import).

    Args:
        source: the candidate's Python source.

    Returns:
        ``escape`` error findings, one per line at most, in source order; ``[]`` for a source
        that does not parse (triage's evaluation reports the syntax error).
    """
    from tools.integrity.host_allowlist import FRAME_ATTRS, LAUNCH_API, _audited
    try:
        c = parse_candidate(source)
    except SyntaxError:
        return []
    out: dict[int, Finding] = {}

    def add(n: ast.AST, what: str) -> None:
        line = getattr(n, "lineno", 0)
        if line not in out:
            out[line] = _finding("escape", n, f"{what}: intent to escape the sandbox or reach the user's files "
                                              "(the candidate was not run)")

    for n in _audited(c.tree):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            if isinstance(n, ast.ImportFrom) and n.module in ("os", "sys", "builtins", "torch"):
                mods += [f"{n.module}.{a.name}" for a in n.names]
            if isinstance(n, ast.ImportFrom) and n.module == LAUNCH_API[0] and [a.name for a in n.names] == [LAUNCH_API[1]]:
                continue  # the AscendC launch API (it runs the candidate's own kernel source)
            for m in mods:
                if m.split(".")[0] in ESCAPE_MODULES or any(m == x or m.startswith(x + ".") for x in ESCAPE_NAMES if "." in x):
                    add(n, f"imports {m}")
        elif isinstance(n, ast.Name) and n.id in _ESCAPE_HIDDEN:
            add(n, n.id)
        elif isinstance(n, ast.Attribute):
            name = c.dotted(n) or ""
            if any(name == x or name.startswith(x + ".") for x in ESCAPE_NAMES if "." in x):
                add(n, name)
            elif n.attr in FRAME_ATTRS:
                add(n, f"`{ast.unparse(n)[:60]}` (frames)")
        elif isinstance(n, ast.Call):
            name = c.dotted(n.func) or ""
            if name in ESCAPE_NAMES:
                add(n, f"{name}()")
    return [out[k] for k in sorted(out)]
