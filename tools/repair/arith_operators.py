"""Repair operators for arithmetic: eps placement, constants, variance normaliser, scans, empty-chunk guards.

Composed into ``tools.repair.operators.OPERATORS``; each proposes single edits found in the AST.
"""

from __future__ import annotations

import ast
import math

from tools.records import Patch
from tools.repair.operator_base import Context, _calls, _is_tl, _length_params, _names, _patch

#: Constants kernels write as literals, by name. Sources: log2(e) and ln(2) for exp2-based
#: softmax; sqrt(2/pi), 0.044715 (tanh GELU) and 1/sqrt(2) (erf GELU) from Hendrycks & Gimpel,
#: "Gaussian Error Linear Units" (2016); 1.702 (sigmoid GELU) from the same paper.
CANONICAL_CONSTANTS: dict[str, float] = {
    "log2_e": 1 / math.log(2),
    "ln_2": math.log(2),
    "sqrt_2_over_pi": math.sqrt(2 / math.pi),
    "inv_sqrt_2": 1 / math.sqrt(2),
    "gelu_tanh_coeff": 0.044715,
    "gelu_sigmoid_coeff": 1.702,
    "pi": math.pi,
    "e": math.e,
}
#: Constants that are written one for another (the wrong one of a pair is a known slip).
CONFUSED = [("log2_e", "ln_2"), ("sqrt_2_over_pi", "inv_sqrt_2"), ("log2_e", "e")]


def constant_alternatives(value: float) -> list[tuple[str, float]]:
    """Canonical constants a float literal may have been meant as, best guess first.

    A literal within 0.5% of a canonical constant gets the exact value (a truncated
    constant) and the constants it is often confused with; any other literal gets nothing.
    """
    out: list[tuple[str, float]] = []
    for name, c in CANONICAL_CONSTANTS.items():
        if value != 0 and abs(value - c) <= 5e-3 * abs(c):
            if value != c:
                out.append((name, c))
            for a, b in CONFUSED:
                if name in (a, b):
                    other = b if name == a else a
                    out.append((other, CANONICAL_CONSTANTS[other]))
    return out


def op_constant_fix(ctx: Context) -> list[Patch]:
    """Replace a float literal near a canonical constant by the exact one or by the one it is confused with."""
    out = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.Constant) and isinstance(n.value, float):
                for name, c in constant_alternatives(n.value):
                    new = ctx.sm.replace(n, repr(c))
                    near = abs(n.value - CANONICAL_CONSTANTS[name]) <= 5e-3 * CANONICAL_CONSTANTS[name]
                    p = _patch(ctx, "constant_fix", f"line {n.lineno}: constant {name} = {c!r} instead of {n.value!r}",
                               n, new, {"constant": name}, near)  # suspicious: a truncated constant
                    if p:
                        out.append(p)
    return out


def _eps_names(ctx: Context) -> set[str]:
    return {p for k in ctx.kernels for p in k.params if "eps" in p.lower()}


def op_eps_sqrt(ctx: Context) -> list[Patch]:
    """Move eps inside or outside a square root: ``tl.sqrt(v) + eps`` <-> ``tl.sqrt(v + eps)``."""
    out = []
    eps = _eps_names(ctx)
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            # sqrt(v) + eps  ->  sqrt(v + eps)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
                for root, e in ((n.left, n.right), (n.right, n.left)):
                    if _is_tl(root, "sqrt", "sqrt_rn") and root.args and _names(e) & eps:
                        new = ctx.sm.replace(n, f"tl.{root.func.attr}({ctx.sm.text(root.args[0])} + {ctx.sm.text(e)})")
                        p = _patch(ctx, "eps_sqrt", f"line {n.lineno}: eps inside the square root", n, new,
                                   {"eps": "inside"})
                        if p:
                            out.append(p)
            # sqrt(v + eps) -> sqrt(v) + eps ; rsqrt likewise -> 1 / (sqrt(v) + eps)
            if _is_tl(n, "sqrt", "sqrt_rn", "rsqrt") and n.args and isinstance(n.args[0], ast.BinOp) \
                    and isinstance(n.args[0].op, ast.Add):
                inner = n.args[0]
                for v, e in ((inner.left, inner.right), (inner.right, inner.left)):
                    if _names(e) & eps:
                        root = f"tl.sqrt({ctx.sm.text(v)}) + {ctx.sm.text(e)}"
                        text = f"(1.0 / ({root}))" if n.func.attr == "rsqrt" else f"({root})"
                        new = ctx.sm.replace(n, text)
                        p = _patch(ctx, "eps_sqrt", f"line {n.lineno}: eps outside the square root", n, new,
                                   {"eps": "outside"})
                        if p:
                            out.append(p)
    return out


def op_bessel(ctx: Context) -> list[Patch]:
    """Switch a variance between biased (``/ N``) and unbiased (``/ (N - 1)``) normalisation."""
    out = []
    for k in ctx.kernels:
        lengths = set(_length_params(k))
        for n in ast.walk(k.node):
            if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)):
                continue
            r = n.right
            if isinstance(r, ast.Name) and r.id in lengths:
                new = ctx.sm.replace(r, f"({r.id} - 1)")
                kind = "unbiased"
            elif isinstance(r, ast.BinOp) and isinstance(r.op, ast.Sub) and isinstance(r.left, ast.Name) \
                    and r.left.id in lengths and isinstance(r.right, ast.Constant) and r.right.value == 1:
                new = ctx.sm.replace(n, f"{ctx.sm.text(n.left)} / {r.left.id}")
                kind = "biased"
            else:
                continue
            p = _patch(ctx, "bessel", f"line {n.lineno}: {kind} normaliser", n, new, {"variance": kind})
            if p:
                out.append(p)
    return out


def op_scan_exclusive(ctx: Context) -> list[Patch]:
    """Turn an inclusive scan into an exclusive one (``cumsum(x) - x``), or back."""
    out = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) and _is_tl(n.left, "cumsum") and n.left.args \
                    and ast.unparse(n.left.args[0]) == ast.unparse(n.right):
                new = ctx.sm.replace(n, ctx.sm.text(n.left))
                p = _patch(ctx, "scan_exclusive", f"line {n.lineno}: inclusive scan", n, new, {"scan": "inclusive"})
                if p:
                    out.append(p)
        for call in _calls(k.node, "cumsum"):
            if call.args:
                new = ctx.sm.replace(call, f"({ctx.sm.text(call)} - {ctx.sm.text(call.args[0])})")
                p = _patch(ctx, "scan_exclusive", f"line {call.lineno}: exclusive scan (cumsum minus the element)",
                           call, new, {"scan": "exclusive"})
                if p:
                    out.append(p)
    return out


def op_empty_chunk_guard(ctx: Context) -> list[Patch]:
    """Guard ``tl.exp(a - m)`` against ``m = -inf`` (an empty chunk: ``-inf - -inf`` is NaN).

    In a cross-chunk (split-K, flash-decoding) combine, a chunk whose lanes are all masked
    has a running max of -inf; its rescale factor must be 0, not ``exp(nan)``.
    """
    out = []
    for k in ctx.kernels:
        for call in _calls(k.node, "exp", "exp2"):
            arg = call.args[0] if call.args else None
            if not (isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub)):
                continue
            m = ctx.sm.text(arg.right)
            new = ctx.sm.replace(call, f'tl.where(({m}) == -float("inf"), 0.0, {ctx.sm.text(call)})')
            p = _patch(ctx, "empty_chunk_guard", f"line {call.lineno}: exp(... - {m}) is 0 where {m} is -inf", call, new)
            if p:
                out.append(p)
    return out


ARITH_OPERATORS = {
    "constant_fix": op_constant_fix,
    "eps_sqrt": op_eps_sqrt,
    "bessel": op_bessel,
    "scan_exclusive": op_scan_exclusive,
    "empty_chunk_guard": op_empty_chunk_guard,
}
