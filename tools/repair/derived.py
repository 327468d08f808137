"""Repairs derived from the diagnosis: edits that would explain a localised relation.

Pattern operators (``tools.repair.operators``) fix the faults they name. When localisation finds a
relation instead (``tools.compare.localise``: the output is the reference times ``k``, only the
first row is written, NaN where the reference is finite, wrong only on an expanded or
strided input, wrong on all-zero rows), the edits here are synthesised from expressions the
candidate has in scope, never from a list of known kernels:

- ``scale``: the value a kernel stores, divided or multiplied by a scalar parameter (a size:
  ``k`` is an integer) or by a constant whose value ``k`` matches (log2(e), ln 2, 2);
  operands of an addition inside ``tl.exp2`` scaled by log2(e) (an exp2 domain);
- ``row_offset``: a pointer that a store writes through but that no program id reaches,
  advanced by ``pid * stride`` (every program wrote to the first row);
- ``stride_arg``: a literal stride passed to a kernel replaced by the real stride of the
  tensor passed just before it (``tensor.stride(d)``);
- ``exp_clamp``: ``tl.exp(z)`` as ``tl.exp(tl.minimum(z, 80.0))`` (every exp of a kernel at
  once, or one at a time): an exact formula written as an exponential ratio stays finite;
- ``div_guard``: a division by a value that is zero for an all-zero row guarded
  (``tl.where(d == 0, 1.0, d)``, or ``tl.maximum(d, eps)`` with an ``eps`` in scope);
- ``rank_unpack``: ``a, b, c = x.shape`` with the last (or first) name absorbing extra
  dimensions (inputs of another rank);
- ``reduce_axis``: a whole-tile reduction of a 2-D tile made per row (several rows per tile);
- ``offset_compare``: a bound compared against an index that carries a scalar offset (a chunk
  start) compared without it.

Every edit is one minimal span replacement or one inserted line (``tools.repair.source_edit``);
the search (``agents.patcher``) keeps an edit only when a run says it helps, and the
integrity audit checks every repair as for any other edit.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import Any

from tools.records import Patch
from tools.repair.operator_base import Context, Kernel, _calls, _kw, _names, _patch, analyse

#: log2(e) and ln(2): the factors between exp and exp2 domains (``exp(x) = exp2(x * log2(e))``).
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
#: Named constants a scale may be: value -> text. ``k`` is matched to them and their inverses.
CONSTANTS = {LOG2E: "1.4426950408889634", LN2: "0.6931471805599453", 2.0: "2.0", 0.5: "0.5"}
#: Relative distance within which a measured factor ``k`` is taken to equal a candidate value.
MATCH_RTOL = 2e-3
#: fp32 exp overflows past 88.72 (IEEE 754 binary32 max 3.4028e38 = e^88.72); 80 keeps a margin
#: and still saturates any ratio of exponentials (e^-80 / e^80 is far below fp32 epsilon).
EXP_CLAMP = "80.0"
#: At most this many stride parameters tried per unadvanced pointer.
MAX_STRIDES = 4
#: At most this many derived edits per family (the search screens them all).
MAX_PER_FAMILY = 40


def _pointers(k: Kernel) -> set[str]:
    """Kernel parameters used as the base of a load/store address (and names derived from them)."""
    ptrs = {p for p in k.params if "ptr" in p.lower()}
    for call in _calls(k.node, "load", "store"):
        if call.args:
            ptrs |= {n for n in _names(call.args[0]) if n in k.params and n not in k.constexprs}
    return ptrs


def _deps(k: Kernel) -> dict[str, set[str]]:
    """Name -> every name any assignment (plain, augmented, loop target) to it reads."""
    deps: dict[str, set[str]] = {}
    for n in ast.walk(k.node):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for name in _names(t):
                    deps.setdefault(name, set()).update(_names(n.value))
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            deps.setdefault(n.target.id, set()).update(_names(n.value))
        elif isinstance(n, ast.For):
            for name in _names(n.target):
                deps.setdefault(name, set()).update(_names(n.iter))
    return deps


def _closure(names: set[str], deps: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += list(deps.get(n, ()))
    return seen


def _scalars(k: Kernel) -> list[str]:
    """Scalar (size-like) parameters: not pointers, not strides, not constexpr."""
    ptrs = _pointers(k)
    return [p for p in k.params if p not in ptrs and p not in k.constexprs and "stride" not in p.lower()
            and "eps" not in p.lower()]


def _wrap(text: str) -> str:
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text if isinstance(node, (ast.Name, ast.Call, ast.Attribute, ast.Constant, ast.Subscript)) else f"({text})"


def _close(a: float, b: float) -> bool:
    return b != 0 and abs(a - b) <= MATCH_RTOL * abs(b)


def _factors(k: Kernel, scale: float | None) -> list[tuple[str, str]]:
    """``(operator, operand)`` pairs whose product with the stored value could undo a factor ``scale``.

    With ``scale`` measured (``scaled:k``): sizes when ``k`` or ``1/k`` is an integer >= 2, the
    constants of ``CONSTANTS`` that ``k`` matches. Without: every scalar parameter both ways.
    """
    scalars = _scalars(k)
    out: list[tuple[str, str]] = []
    if scale is None or not math.isfinite(scale) or scale == 0:
        return [(op, p) for p in scalars for op in ("/", "*")]
    for v, text in CONSTANTS.items():
        if _close(scale, v):
            out.append(("/", text))
        if _close(1.0 / scale, v):
            out.append(("*", text))
    if abs(scale) >= 2 and _close(abs(scale), round(abs(scale))):
        out += [("/", p) for p in scalars]
    if abs(scale) < 1 and _close(1.0 / abs(scale), round(1.0 / abs(scale))) and round(1.0 / abs(scale)) >= 2:
        out += [("*", p) for p in scalars]
    if not out:  # a factor no size or constant explains: every scalar both ways, still bounded
        out = [(op, p) for p in scalars for op in ("/", "*")]
    if scale < 0:
        out = [(op, f"-{t}" if op == "*" else t) for op, t in out] + [("*", "-1.0")]
    return out


def scale_edits(ctx: Context, scale: float | None) -> list[Patch]:
    """The stored value of each ``tl.store`` times or divided by a factor in scope (``_factors``)."""
    out: list[Patch] = []
    for k in ctx.kernels:
        for call in _calls(k.node, "store"):
            val = _kw(call, "value", 1)
            if val is None:
                continue
            text = ctx.sm.text(val)
            for op, f in _factors(k, scale):
                new = f"{_wrap(text)} {op} {f}"
                p = _patch(ctx, "derived_scale", f"line {val.lineno}: store {new} (the output was the reference "
                           f"times {scale if scale is not None else 'a factor'})", val, ctx.sm.replace(val, new),
                           {"kind": "scale", "op": op, "factor": f}, suspicious=scale is not None)
                if p:
                    out.append(p)
    return out[:MAX_PER_FAMILY]


def exp2_domain_edits(ctx: Context) -> list[Patch]:
    """One addend inside ``tl.exp2(...)`` multiplied by log2(e): a term left in the natural-log domain."""
    out: list[Patch] = []
    for k in ctx.kernels:
        for call in _calls(k.node, "exp2"):
            if not call.args:
                continue
            for n in ast.walk(call.args[0]):
                if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)):
                    for side in ((call.args[0],) if n is call.args[0] else ()) + (n.left, n.right):
                        text = ctx.sm.text(side)
                        for op in ("*", "/"):
                            new = f"{_wrap(text)} {op} {CONSTANTS[LOG2E]}"
                            p = _patch(ctx, "derived_scale", f"line {side.lineno}: {text} -> {new} inside exp2",
                                       side, ctx.sm.replace(side, new), {"kind": "exp2_domain", "op": op})
                            if p:
                                out.append(p)
    return out[:MAX_PER_FAMILY]


def _pids(k: Kernel) -> list[str]:
    """Names assigned from an expression that calls ``tl.program_id`` (``row = tl.program_id(0).to(tl.int64)``)."""
    out = list(k.pids)
    for st in ast.walk(k.node):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "program_id"
                        for c in ast.walk(st.value)) and st.targets[0].id not in out:
            out.append(st.targets[0].id)
    return out


def _pid_statement(k: Kernel, pids: list[str]) -> ast.stmt | None:
    """The top-level kernel statement that assigns the first program id."""
    for st in k.node.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id in pids for t in st.targets):
            return st
    return None


def _stem(name: str) -> str:
    low = name.lower()
    for suffix in ("_ptr", "ptr"):
        if low.endswith(suffix):
            return low[: -len(suffix)].rstrip("_")
    return low


def row_offset_edits(ctx: Context) -> list[Patch]:
    """Advance a store's base pointer by ``pid * stride`` when no program id reaches its address.

    Every program then wrote to the first row. The stride tried first is the stride parameter
    whose name shares the pointer's stem (``dA_ptr`` -> ``dA_row_stride``), then the others,
    then the scalar sizes (a contiguous row of ``N`` elements).
    """
    out: list[Patch] = []
    for k in ctx.kernels:
        pids = _pids(k)
        at = _pid_statement(k, pids)
        if at is None:
            continue
        deps = _deps(k)
        ptrs = _pointers(k)
        pid = pids[0]
        for call in _calls(k.node, "store"):
            if not call.args:
                continue
            reach = _closure(_names(call.args[0]), deps)
            if any(p in reach for p in pids):
                continue
            roots = [p for p in k.params if p in reach and p in ptrs]
            for root in roots:
                strides = sorted((p for p in k.params if "stride" in p.lower()),
                                 key=lambda s: (not s.lower().startswith(_stem(root)), k.params.index(s)))
                steps = strides[:MAX_STRIDES] + _scalars(k)
                for s in steps:
                    line = f"{root} += {pid} * {s}"
                    p = _patch(ctx, "derived_row_offset", f"after line {at.lineno}: {line} (no program id reached "
                               f"the store at line {call.lineno}: every program wrote the first row)", at,
                               ctx.sm.insert_lines_after(at, [line]), {"kind": "row_offset", "pointer": root,
                                                                       "stride": s}, suspicious=True)
                    if p and all(q.source != p.source for q in out):
                        out.append(p)
    return out[:MAX_PER_FAMILY]


def _launches(ctx: Context) -> list[tuple[Kernel, ast.Call]]:
    """``kernel[grid](...)`` calls in ``ModelNew.forward`` with the kernel they launch."""
    if ctx.forward is None:
        return []
    by_name = {k.node.name: k for k in ctx.kernels}
    out = []
    for n in ast.walk(ctx.forward):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in by_name:
            out.append((by_name[n.func.value.id], n))
    return out


def _bound(call: ast.Call, k: Kernel) -> list[tuple[str, ast.expr]]:
    pairs = list(zip(k.params, call.args))
    pairs += [(kw.arg, kw.value) for kw in call.keywords if kw.arg in k.params]
    return pairs


def stride_arg_edits(ctx: Context) -> list[Patch]:
    """A stride argument given as a literal (or a local built from literals) replaced by the real stride.

    The tensor is the argument bound to the nearest pointer parameter before the stride
    parameter; the dimensions tried are 0 and -1 (a row stride of a vector or a matrix).
    """
    out: list[Patch] = []
    if ctx.forward is None:
        return out
    local: dict[str, ast.Assign] = {}
    for n in ast.walk(ctx.forward):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            local[n.targets[0].id] = n
    for k, call in _launches(ctx):
        ptrs = _pointers(k)
        bound = _bound(call, k)
        for i, (param, arg) in enumerate(bound):
            if "stride" not in param.lower():
                continue
            named = [(p, a) for p, a in bound if p in ptrs and isinstance(a, ast.Name)]
            same_stem = [a for p, a in named if _stem(p) and param.lower().startswith(_stem(p))]
            before = [a for p, a in reversed(bound[:i]) if p in ptrs and isinstance(a, ast.Name)]
            pick = (same_stem or before)[:1]
            if not pick:
                continue
            tensor = ctx.sm.text(pick[0])
            sites: list[ast.expr] = []
            if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                sites.append(arg)
            elif isinstance(arg, ast.Name) and arg.id not in local:  # a size unpacked from a shape, say
                sites.append(arg)
            elif isinstance(arg, ast.Name) and arg.id in local and ".stride(" not in ctx.sm.text(local[arg.id].value):
                value = local[arg.id].value
                sites += [c for c in ast.walk(value) if isinstance(c, ast.Constant) and type(c.value) is int
                          and not isinstance(getattr(c, "parent", None), ast.Compare)]
                sites = [s for s in sites if not _in_compare(value, s)]
                sites.append(value)
            for s in sites:
                for d in (0, -1):
                    new = f"{tensor}.stride({d})"
                    p = _patch(ctx, "derived_stride_arg", f"line {s.lineno}: {ctx.sm.text(s)} -> {new} (stride "
                               f"argument {param} of {k.node.name})", s, ctx.sm.replace(s, new),
                               {"kind": "stride_arg", "param": param, "dim": d}, suspicious=True)
                    if p:
                        out.append(p)
    return out[:MAX_PER_FAMILY]


def _in_compare(root: ast.AST, node: ast.AST) -> bool:
    for n in ast.walk(root):
        if isinstance(n, ast.Compare) and any(c is node for c in ast.walk(n)):
            return True
    return False


def exp_clamp_edits(ctx: Context) -> list[Patch]:
    """``tl.exp(z)`` -> ``tl.exp(tl.minimum(z, 80.0))``: all exps of a kernel at once, then each alone."""
    out: list[Patch] = []
    for k in ctx.kernels:
        calls = [c for c in _calls(k.node, "exp") if c.args]
        if not calls:
            continue
        edits = sorted(((ctx.sm.span(c.args[0]), f"tl.minimum({ctx.sm.text(c.args[0])}, {EXP_CLAMP})") for c in calls),
                       reverse=True)
        src = ctx.source
        for (a, b), text in edits:
            src = src[:a] + text + src[b:]
        p = _patch(ctx, "derived_exp_clamp", f"{k.node.name}: every tl.exp argument clamped to {EXP_CLAMP} "
                   "(an exact formula overflowed to inf/inf)", calls[0], src, {"kind": "exp_clamp", "all": True})
        if p:
            out.append(p)
        if len(calls) > 1:
            for c in calls:
                text = f"tl.minimum({ctx.sm.text(c.args[0])}, {EXP_CLAMP})"
                p = _patch(ctx, "derived_exp_clamp", f"line {c.lineno}: exp argument clamped to {EXP_CLAMP}", c,
                           ctx.sm.replace(c.args[0], text), {"kind": "exp_clamp", "all": False})
                if p:
                    out.append(p)
    return out[:MAX_PER_FAMILY]


def div_guard_edits(ctx: Context) -> list[Patch]:
    """A division by a computed value guarded against zero (an all-zero row's sum, norm or max)."""
    out: list[Patch] = []
    for k in ctx.kernels:
        eps = [p for p in k.params if "eps" in p.lower()]
        for n in ast.walk(k.node):
            if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)):
                continue
            d = n.right
            if isinstance(d, ast.Constant) or (isinstance(d, ast.Name) and (d.id in k.constexprs or d.id in k.params)):
                continue
            text = ctx.sm.text(d)
            guards = [f"tl.where({text} == 0, 1.0, {text})"] + [f"tl.maximum({text}, {e})" for e in eps]
            for g in guards:
                p = _patch(ctx, "derived_div_guard", f"line {n.lineno}: divide by {g}", d, ctx.sm.replace(d, g),
                           {"kind": "div_guard"})
                if p:
                    out.append(p)
    return out[:MAX_PER_FAMILY]


def rank_unpack_edits(ctx: Context) -> list[Patch]:
    """``a, b, c = x.shape`` generalised to inputs of higher rank: the last (or first) name absorbs the extra dims.

    ``a, b, c = *x.shape[:2], x.shape[2:].numel()`` (a per-channel op over (N, C, L) also takes
    (N, C, H, W)) and ``a, b = x.shape[:-1].numel(), *x.shape[-1:]`` (a row-wise op over (M, N)
    also takes (B, M, N)). ``torch.Size.numel()`` is the product of the sizes.
    """
    out: list[Patch] = []
    if ctx.forward is None:
        return out
    for n in ast.walk(ctx.forward):
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Tuple)):
            continue
        v = n.value
        base = None
        if isinstance(v, ast.Attribute) and v.attr == "shape":
            base = f"{ctx.sm.text(v.value)}.shape"
        elif isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "size" and not v.args:
            base = f"{ctx.sm.text(v.func.value)}.shape"
        r = len(n.targets[0].elts)
        if base is None or r < 2:
            continue
        for text in (f"*{base}[:{r - 1}], {base}[{r - 1}:].numel()", f"{base}[:-{r - 1}].numel(), *{base}[-{r - 1}:]"):
            p = _patch(ctx, "derived_rank", f"line {n.lineno}: {ctx.sm.text(v)} -> {text} (inputs of another rank)",
                       v, ctx.sm.replace(v, text), {"kind": "rank_unpack"})
            if p:
                out.append(p)
    return out[:MAX_PER_FAMILY]


def reduce_axis_edits(ctx: Context) -> list[Patch]:
    """A reduction over the whole 2-D tile made per row (``tl.sum(x)`` -> ``tl.sum(x, axis=1)[:, None]``).

    Only in kernels that build 2-D tiles (``[:, None]`` indexing): there a tile can span several
    rows, and a whole-tile reduction is right only with one row per tile.
    """
    out: list[Patch] = []
    for k in ctx.kernels:
        text = ctx.sm.text(k.node)
        if "None]" not in text:
            continue
        for call in _calls(k.node, "sum", "max", "min"):
            if len(call.args) != 1 or _kw(call, "axis") is not None:
                continue
            for new in (f"{ctx.sm.text(call)[:-1]}, axis=1)[:, None]", f"{ctx.sm.text(call)[:-1]}, axis=1)"):
                p = _patch(ctx, "derived_reduce_axis", f"line {call.lineno}: reduce per row: {new}", call,
                           ctx.sm.replace(call, new), {"kind": "reduce_axis"})
                if p:
                    out.append(p)
    return out[:MAX_PER_FAMILY]


def _addends(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _addends(node.left) + _addends(node.right)
    return [node]


def offset_compare_edits(ctx: Context) -> list[Patch]:
    """A bound compared against an index that carries a scalar offset: the offset taken out.

    ``idx = OFFSET + pid * B + tl.arange(0, B)`` then ``idx < n``: right only while ``OFFSET``
    is 0 (the first chunk); ``idx - OFFSET < n`` compares the position within the chunk.
    """
    out: list[Patch] = []
    for k in ctx.kernels:
        scalars = set(_scalars(k))
        rhs = {}
        for n in ast.walk(k.node):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                rhs[n.targets[0].id] = n.value
        for n in ast.walk(k.node):
            if not (isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.left, ast.Name)
                    and n.left.id in rhs):
                continue
            for a in _addends(rhs[n.left.id]):
                if isinstance(a, ast.Name) and a.id in scalars:
                    new = f"{n.left.id} - {a.id}"
                    p = _patch(ctx, "derived_offset_compare", f"line {n.lineno}: compare {new} (the index carries "
                               f"the offset {a.id})", n.left, ctx.sm.replace(n.left, new),
                               {"kind": "offset_compare", "offset": a.id})
                    if p:
                        out.append(p)
    return out[:MAX_PER_FAMILY]


def _measured_scale(diagnosis: dict) -> float | None:
    for loc in diagnosis.get("localisation", []):
        if loc.get("name") == "scaled":
            try:
                return float(loc.get("detail", ""))
            except ValueError:
                return None
    return None


def derive(source: str, diagnosis: dict, tensor_params: list[str] | None = None, blind: bool = False) -> list[Patch]:
    """Every derived edit the diagnosis' relations and symptoms call for, most specific first.

    Args:
        source: the candidate (best so far).
        diagnosis: ``tools.diagnosis.diagnostics.diagnose`` output (``symptoms``, ``localisation``).
        tensor_params: ``ModelNew.forward`` parameters that are tensors.
        blind: instead, the edits no relation points to (a log2(e) on an exp2 addend; every
            scalar as a factor of a stored value when no ``scaled`` relation was measured),
            which the engine screens after the patterns.

    Returns:
        Patches (one edit each), without duplicate sources; empty when the source does not parse.
    """
    try:
        ctx = analyse(source, tensor_params)
    except SyntaxError:
        return []
    symptoms = set(diagnosis.get("symptoms", []))
    scale = _measured_scale(diagnosis)
    families: list[list[Patch]] = []
    families.append(row_offset_edits(ctx))
    families.append(stride_arg_edits(ctx))
    if symptoms & {"other_rank", "runtime_error"}:
        families.append(rank_unpack_edits(ctx))
    if symptoms & {"past_block_boundary", "stale_tail", "tail_only", "unaligned_size"}:
        families.append(offset_compare_edits(ctx))
    if symptoms & {"small_sizes", "unaligned_size", "fails_on_default"}:
        families.append(reduce_axis_edits(ctx))
    if scale is not None or symptoms & {"row_scaled", "scaled"}:
        families.append(scale_edits(ctx, scale))
    if symptoms & {"nan_or_inf", "value_regime_huge", "value_regime_large"}:
        families.append(exp_clamp_edits(ctx))
    if symptoms & {"nan_or_inf", "value_regime_zero_rows"}:
        families.append(div_guard_edits(ctx))
    if blind:  # edits no relation points to: screened after the knowledge base's patterns
        families = [exp2_domain_edits(ctx)]
        if scale is None and not symptoms & {"row_scaled", "scaled"} and diagnosis.get("failing"):
            families.append(scale_edits(ctx, None))
    out: list[Patch] = []
    seen: set[str] = set()
    for fam in families:
        for p in fam:
            if p.source not in seen:
                seen.add(p.source)
                out.append(p)
    return out


def pair_edits(first: Patch, diagnosis: Mapping[str, Any], tensor_params: list[str] | None = None, limit: int = 30) -> list[Patch]:
    """Second edits on top of an edit that improved but did not fix: derived edits of the edited source.

    Bounded by ``limit``; each returned patch carries both edits (its ``source``) and both descriptions.
    """
    out = []
    for p in derive(first.source, diagnosis, tensor_params)[:limit]:
        out.append(p.model_copy(update={"description": f"{first.description}; then {p.description}",
                                        "params": {**p.params, "after": first.params}}))
    return out
