"""Repair operators for addressing: offset width, program-id axes, index variables, causal alignment, overlapping stores.

Like ``tools.repair.operator_base`` (``tools.repair.operators`` composes them into ``OPERATORS``), each operator reads the
candidate's AST and proposes single edits; none knows a particular kernel.
"""

from __future__ import annotations

import ast

from tools.records import Patch
from tools.repair.operator_base import Context, Kernel, _assigns, _calls, _is_tl, _kw, _length_params, _names, _patch


def op_int64_offsets(ctx: Context) -> list[Patch]:
    """Widen a program id to int64 before it is multiplied by a stride.

    ``pid * stride`` is computed in int32: past 2**31 elements (e.g. 65,536 rows of 32,768)
    the offset wraps negative. Casting the program id makes the whole product int64.
    """
    out = []
    for k in ctx.kernels:
        for asg in _assigns(k.node):
            if _is_tl(asg.value, "program_id"):
                new = ctx.sm.replace(asg.value, f"{ctx.sm.text(asg.value)}.to(tl.int64)")
                p = _patch(ctx, "int64_offsets", f"line {asg.lineno}: {asg.targets[0].id} as tl.int64 (offsets "
                           "past 2**31 wrap in int32)", asg, new, {"var": asg.targets[0].id})
                if p:
                    out.append(p)
    return out


def op_pid_axis(ctx: Context) -> list[Patch]:
    """Read another grid axis: ``tl.program_id(0)`` <-> ``tl.program_id(1)`` (or 2)."""
    out = []
    for k in ctx.kernels:
        calls = _calls(k.node, "program_id")
        used = {ast.unparse(_kw(c, "axis", 0)) for c in calls if _kw(c, "axis", 0) is not None}
        for c in calls:
            ax = _kw(c, "axis", 0)
            if not isinstance(ax, ast.Constant):
                continue
            for other in ("0", "1", "2"):
                if other == str(ax.value) or (other == "2" and "1" not in used):
                    continue
                new = ctx.sm.replace(ax, other)
                p = _patch(ctx, "pid_axis", f"line {c.lineno}: program id of axis {other} instead of {ax.value}", c, new,
                           {"axis": other})
                if p:
                    out.append(p)
    return out


def _index_vars(k: Kernel) -> set[str]:
    """Program ids and the variables derived from them or from ``tl.arange`` (row / column indices)."""
    idx = set(k.pids)
    for asg in sorted(_assigns(k.node), key=lambda n: n.lineno):
        if any(_is_tl(c, "arange", "program_id") for c in ast.walk(asg.value)) or _names(asg.value) & idx:
            if not any(_is_tl(c, "load") for c in ast.walk(asg.value)):
                idx.add(asg.targets[0].id)
    return idx


def _swap_names(text: str, a: str, b: str) -> str:
    """Swap every whole-name occurrence of ``a`` and ``b`` in an expression's text (via the AST)."""
    tree = ast.parse(text, mode="eval")
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id in (a, b):
            n.id = b if n.id == a else a
    return ast.unparse(tree)


def op_swap_index(ctx: Context) -> list[Patch]:
    """Swap two index variables (row vs column) in the address of a load or store."""
    out = []
    for k in ctx.kernels:
        idx = _index_vars(k)
        for call in _calls(k.node, "load", "store"):
            if not call.args:
                continue
            addr = call.args[0]
            present = sorted(_names(addr) & idx)
            for i, a in enumerate(present):
                for b in present[i + 1:]:
                    new = ctx.sm.replace(addr, _swap_names(ctx.sm.text(addr), a, b))
                    p = _patch(ctx, "swap_index", f"line {call.lineno}: swap {a} and {b} in the {call.func.attr} address",
                               call, new, {"swap": f"{a},{b}"})
                    if p:
                        out.append(p)
    return out


def op_causal_offset(ctx: Context) -> list[Patch]:
    """Align a causal comparison bottom-right: ``k <= q`` -> ``k <= q + (Sk - Sq)``.

    A causal mask written for equal query and key lengths (top-left aligned) is wrong when a
    KV cache makes the key length ``Sk`` exceed the query length ``Sq``; the query at row i
    must see keys up to ``i + Sk - Sq``. The pair of lengths is any two scalar length
    parameters the kernel compares against.
    """
    out = []
    for k in ctx.kernels:
        lengths = _length_params(k)
        if len(lengths) < 2:
            continue
        conds = [c.args[0] for c in _calls(k.node, "where") if c.args]
        used = {nm for c in conds for nm in _names(c)}
        conds += [a.value for a in _assigns(k.node) if a.targets[0].id in used]  # causal = k <= q; where(causal, ..)
        for cond in conds:
            for n in ast.walk(cond):
                if not (isinstance(n, ast.Compare) and len(n.ops) == 1
                        and isinstance(n.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE))):
                    continue
                if _names(n) & set(lengths):
                    continue  # a bound check, not a causal comparison
                big_side = n.comparators[0] if isinstance(n.ops[0], (ast.Lt, ast.LtE)) else n.left
                for a in lengths:
                    for b in lengths:
                        if a == b:
                            continue
                        new = ctx.sm.replace(big_side, f"({ctx.sm.text(big_side)} + ({a} - {b}))")
                        p = _patch(ctx, "causal_offset", f"line {n.lineno}: align the causal comparison bottom-right "
                                   f"(+ {a} - {b})", n, new, {"offset": f"{a}-{b}"})
                        if p:
                            out.append(p)
    return out


def op_atomic_store(ctx: Context) -> list[Patch]:
    """Accumulate overlapping writes with ``tl.atomic_add`` into a zero-initialised output.

    When several programs write the same output element (split-K, a reduction across
    programs), plain stores lose all but one update. The output must start at zero, so
    ``torch.empty`` / ``empty_like`` allocations in ``forward`` become ``zeros``.
    """
    out = []
    zeros = []
    if ctx.forward is not None:
        for n in ast.walk(ctx.forward):
            if isinstance(n, ast.Attribute) and n.attr in ("empty", "empty_like") and isinstance(n.value, ast.Name) \
                    and n.value.id == "torch":
                zeros.append(n)
    for k in ctx.kernels:
        for call in _calls(k.node, "store"):
            edits = [(*ctx.sm.span(call.func), "tl.atomic_add")]
            edits += [(*ctx.sm.span(z), "torch." + z.attr.replace("empty", "zeros")) for z in zeros]
            src = ctx.source
            for a, b, text in sorted(edits, key=lambda t: -t[0]):  # from the bottom up, offsets stay valid
                src = src[:a] + text + src[b:]
            p = _patch(ctx, "atomic_store", f"line {call.lineno}: tl.atomic_add instead of tl.store (overlapping "
                       "writes), outputs zero-initialised", call, src)
            if p:
                out.append(p)
    return out


INDEX_OPERATORS = {
    "int64_offsets": op_int64_offsets,
    "pid_axis": op_pid_axis,
    "swap_index": op_swap_index,
    "causal_offset": op_causal_offset,
    "atomic_store": op_atomic_store,
}
