"""Static integrity checks of a candidate (ARCHITECTURE §7), one small function each.

Each ``check_x(tree, source) -> Finding | None`` looks at the candidate's AST for one way of
passing the tests without a correct kernel. ``run_static_checks`` composes them.
"""

from __future__ import annotations

import ast
from typing import Callable

from tools.records import Finding

#: torch functions that only allocate or describe tensors (allowed in ModelNew.forward).
ALLOWED_TORCH = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_strided", "is_tensor", "device", "dtype", "Size", "no_grad", "manual_seed",
    "get_default_dtype", "finfo", "iinfo", "cuda", "float32", "float16", "bfloat16", "float64", "int32",
    "int64", "int8", "uint8", "bool", "promote_types", "result_type",
}
#: tensor methods that compute (a torch fallback) rather than allocate, view or describe.
COMPUTE_METHODS = {
    "sum", "mean", "var", "std", "exp", "log", "softmax", "log_softmax", "matmul", "mm", "bmm", "max", "min",
    "sqrt", "rsqrt", "pow", "abs", "relu", "sigmoid", "tanh", "cumsum", "cumprod", "norm", "amax", "amin",
    "logsumexp", "argmax", "argmin", "topk", "sort", "clamp", "where", "masked_fill", "gather", "scatter",
    "scatter_add", "index_select", "einsum", "prod", "addmm", "baddbmm", "conv1d", "conv2d", "layer_norm",
    "gelu", "silu", "erf", "sin", "cos", "mul", "add", "sub", "div", "neg", "reciprocal", "square",
    "exp2", "log2", "log1p", "expm1", "lerp", "outer", "dot", "tril", "triu", "cross_entropy", "nll_loss",
}


def _modelnew(tree: ast.Module) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted module path for imports (``import torch.nn.functional as F``)."""
    out = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                out[a.asname or a.name] = f"{n.module}.{a.name}"
    return out


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(aliases.get(node.id, node.id))
        return ".".join(reversed(parts))
    return None


def check_torch_compute(tree: ast.Module, source: str) -> Finding | None:
    """torch compute in ModelNew: the result would come from PyTorch, not from the kernel."""
    cls = _modelnew(tree)
    if cls is None:
        return None
    aliases = _aliases(tree)
    for n in ast.walk(cls):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return Finding(check="torch_compute", severity="error",
                           message=f"line {n.lineno}: matrix product with @ in ModelNew (a torch fallback)")
        if not isinstance(n, ast.Call):
            continue
        name = _dotted(n.func, aliases)
        if name is None:
            if isinstance(n.func, ast.Attribute) and n.func.attr in COMPUTE_METHODS:
                return Finding(check="torch_compute", severity="error",
                               message=f"line {n.lineno}: tensor method .{n.func.attr}() computes in PyTorch")
            continue
        if name.startswith("torch.nn.functional.") or (name.startswith("torch.") and name.split(".")[1] not in
                                                       ALLOWED_TORCH | {"nn", "cuda", "library"}):
            return Finding(check="torch_compute", severity="error",
                           message=f"line {n.lineno}: {name}() computes in PyTorch inside ModelNew")
        if name.startswith("torch.nn.") and name.split(".")[-1][0].isupper() and name.split(".")[-1] not in (
                "Module", "Parameter", "ParameterList", "ModuleList", "Identity"):
            return Finding(check="torch_compute", severity="error",
                           message=f"line {n.lineno}: {name} (a PyTorch layer) inside ModelNew")
        last = name.split(".")[-1]
        if "." in name and not name.startswith(("torch.", "triton.", "tl.", "math.", "self.")) \
                and last in COMPUTE_METHODS:
            return Finding(check="torch_compute", severity="error",
                           message=f"line {n.lineno}: tensor method .{last}() computes in PyTorch")
        if name in ("Model", "reference.Model") or name.endswith(".Model"):
            return Finding(check="reference_call", severity="error",
                           message=f"line {n.lineno}: ModelNew constructs the reference Model")
    return None


def check_try_except(tree: ast.Module, source: str) -> Finding | None:
    """try/except in ModelNew: a failing kernel can silently fall back to another path."""
    cls = _modelnew(tree)
    for n in ast.walk(cls) if cls else ():
        if isinstance(n, ast.Try):
            return Finding(check="try_except", severity="error",
                           message=f"line {n.lineno}: try/except in ModelNew (a fallback path around the kernel)")
    return None


def check_inherits_reference(tree: ast.Module, source: str) -> Finding | None:
    """ModelNew subclassing Model inherits the reference's forward."""
    cls = _modelnew(tree)
    if cls and any(ast.unparse(b).split(".")[-1] == "Model" for b in cls.bases):
        return Finding(check="inherits_reference", severity="error", message="ModelNew inherits from the reference Model")
    return None


StaticCheck = Callable[[ast.Module, str], Finding | None]
STATIC_CHECKS: list[StaticCheck] = [check_torch_compute, check_try_except, check_inherits_reference]


def run_static_checks(source: str) -> list[Finding]:
    """Run every static check on a candidate source; a source that does not parse is one error finding."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return [Finding(check="parse", severity="error", message=f"line {e.lineno}: {e.msg}")]
    return [f for f in (c(tree, source) for c in STATIC_CHECKS) if f is not None]
