"""Generic mutation operators: the repair engine's fallback when no knowledge-base pattern's operator fixes a candidate.

Each mutation is a small syntactic change that real near-miss kernels often need and that
no idiom-aware operator (``tools.repair.operators``) covers: a flipped comparison, ``±1`` on an
index expression, two operands or variables swapped, two arguments swapped at a launch
site, a literal replaced by a canonical constant. They are blind (they know no kernel
idiom), so there are many per candidate; the engine screens them within its evaluation
budget. Every patch carries ``params`` (kind, the text edited and its replacement) so an
accepted one can be replayed first by a later run (``kb.learn``).
"""

from __future__ import annotations

import ast

from tools.records import Patch
from tools.repair.arith_operators import constant_alternatives
from tools.repair.operator_base import Context, Operator, _calls, _names, _patch, analyse, run_operators

_FLIPS = {ast.Lt: ["<=", ">"], ast.LtE: ["<", ">="], ast.Gt: [">=", "<"], ast.GtE: [">", "<="],
          ast.Eq: ["!="], ast.NotEq: ["=="]}
_NONCOMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
MAX_NAMES_SWAPPED = 5  # expressions with more distinct names give too many pairs to screen


def _edit(ctx: Context, kind: str, node: ast.AST, text: str, out: list[Patch]) -> None:
    old = ctx.sm.text(node)
    p = _patch(ctx, kind, f"line {node.lineno}: {old} -> {text}", node, ctx.sm.replace(node, text),
               {"kind": kind, "at": old, "to": text})
    if p:
        out.append(p)


def mut_flip_compare(ctx: Context) -> list[Patch]:
    """``<`` <-> ``<=``, ``<`` <-> ``>`` (and the others) in one comparison of a kernel."""
    out: list[Patch] = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.Compare) and len(n.ops) == 1:
                for op in _FLIPS.get(type(n.ops[0]), []):
                    _edit(ctx, "flip_compare", n, f"{ctx.sm.text(n.left)} {op} {ctx.sm.text(n.comparators[0])}", out)
    return out


def mut_index_shift(ctx: Context) -> list[Patch]:
    """``±1`` on a variable of a load/store address or on the bound of a comparison."""
    out: list[Patch] = []
    for k in ctx.kernels:
        ptrs = set(k.params) - k.constexprs
        sites: list[ast.AST] = []
        for call in _calls(k.node, "load", "store"):
            if call.args:
                sites += [n for n in ast.walk(call.args[0]) if isinstance(n, ast.Name) and n.id not in ptrs
                          and n.id != "tl"]
        for n in ast.walk(k.node):
            if isinstance(n, ast.Compare) and len(n.ops) == 1:
                sites.append(n.comparators[0])
        seen = set()
        for s in sorted(sites, key=lambda n: (n.lineno, n.col_offset)):
            key = (s.lineno, s.col_offset, s.end_col_offset)
            if key in seen:
                continue
            seen.add(key)
            for d in ("+ 1", "- 1"):
                _edit(ctx, "index_shift", s, f"({ctx.sm.text(s)} {d})", out)
    return out


def mut_swap_operands(ctx: Context) -> list[Patch]:
    """Swap the operands of a non-commutative operator, or two variables within one expression."""
    out: list[Patch] = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, _NONCOMMUTATIVE):
                op = ctx.sm.text(n)[len(ctx.sm.text(n.left)):]
                op = op[: len(op) - len(ctx.sm.text(n.right))].strip()
                _edit(ctx, "swap_operands", n, f"{ctx.sm.text(n.right)} {op} {ctx.sm.text(n.left)}", out)
        for st in ast.walk(k.node):
            if not isinstance(st, ast.Assign):
                continue
            names = sorted(_names(st.value) - {"tl", "triton"})
            if not 2 <= len(names) <= MAX_NAMES_SWAPPED:
                continue
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    tree = ast.parse(ctx.sm.text(st.value), mode="eval")
                    for m in ast.walk(tree):
                        if isinstance(m, ast.Name) and m.id in (a, b):
                            m.id = b if m.id == a else a
                    _edit(ctx, "swap_operands", st.value, ast.unparse(tree), out)
    return out


def mut_swap_launch_args(ctx: Context) -> list[Patch]:
    """Swap two positional arguments at a kernel launch site (``kernel[grid](a, b, ...)``)."""
    out: list[Patch] = []
    kernels = {k.node.name for k in ctx.kernels}
    for c in ast.walk(ctx.tree):
        if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript) and isinstance(c.func.value, ast.Name) \
                and c.func.value.id in kernels:
            args = c.args
            for i in range(len(args)):
                for j in range(i + 1, len(args)):
                    texts = [ctx.sm.text(a) for a in args]
                    if texts[i] == texts[j]:
                        continue
                    texts[i], texts[j] = texts[j], texts[i]
                    a0, b0 = ctx.sm.span(args[0])
                    b1 = ctx.sm.span(args[-1])[1]
                    src = ctx.source[:a0] + ", ".join(texts) + ctx.source[b1:]
                    p = _patch(ctx, "swap_launch_args", f"line {c.lineno}: swap launch arguments {i} and {j}", c, src,
                               {"kind": "swap_launch_args", "at": f"{ctx.sm.text(args[i])},{ctx.sm.text(args[j])}",
                                "to": f"{i},{j}"})
                    if p:
                        out.append(p)
    return out


def mut_canonical_literal(ctx: Context) -> list[Patch]:
    """Replace a float literal by a canonical constant it is near or often confused with."""
    out: list[Patch] = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.Constant) and isinstance(n.value, float):
                for _, c in constant_alternatives(n.value):
                    _edit(ctx, "canonical_literal", n, repr(c), out)
    return out


#: Generic mutations by id, in the order the engine tries them.
MUTATIONS: dict[str, Operator] = {
    "flip_compare": mut_flip_compare,
    "index_shift": mut_index_shift,
    "swap_operands": mut_swap_operands,
    "swap_launch_args": mut_swap_launch_args,
    "canonical_literal": mut_canonical_literal,
}


def mutate(source: str, kinds: list[str] | None = None, tensor_params: list[str] | None = None) -> list[Patch]:
    """All single-edit mutants of a candidate, by kind in ``MUTATIONS`` order, without duplicates.

    Raises:
        KeyError: an unknown mutation kind.
        SyntaxError: the source does not parse.
    """
    return run_operators(analyse(source, tensor_params), [(MUTATIONS[k], None) for k in kinds or list(MUTATIONS)])
