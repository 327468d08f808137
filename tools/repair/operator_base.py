"""Shared analysis for the repair operators: the candidate's kernels (``Context``), AST helpers,
``_patch`` and the core operators (masks, fills, accumulators, grids, bounds, lengths).

Every operator is ``f(Context) -> list[Patch]``; ``tools.repair.operators`` composes the registry
from this module and the operator families built on it (``arith_operators``,
``index_operators``, ``ascend_operators``, ``ascendc.operators``), none of which imports it back.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Iterator

from tools.records import Patch
from tools.repair.source_edit import SourceMap, parses, unified_diff

NEG_INF = '-float("inf")'
REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "xor_sum", "associative_scan"}
CONSTEXPR_HINT = "constexpr"


@dataclass
class Kernel:
    """A ``@triton.jit`` function with the facts operators need."""

    node: ast.FunctionDef
    params: list[str]
    constexprs: set[str]
    pids: list[str]
    masks: dict[str, str] = field(default_factory=dict)  # mask variable -> its expression text


@dataclass
class Context:
    """Parsed candidate: source map, kernels, ``ModelNew.forward``, and what inputs are tensors."""

    source: str
    tree: ast.Module
    sm: SourceMap
    kernels: list[Kernel]
    forward: ast.FunctionDef | None
    tensor_params: list[str]


def _is_tl(call: ast.AST, *names: str) -> bool:
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in names and isinstance(call.func.value, ast.Name)
            and call.func.value.id in ("tl", "triton.language"))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _kw(call: ast.Call, name: str, pos: int | None = None) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if pos is not None and len(call.args) > pos:
        return call.args[pos]
    return None


def _is_jit(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        text = ast.unparse(d.func if isinstance(d, ast.Call) else d)
        if text.endswith("jit"):
            return True
    return False


def _assigns(fn: ast.FunctionDef) -> Iterator[ast.Assign]:
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            yield n


def _looks_boolean(expr: ast.expr, known: set[str]) -> bool:
    if isinstance(expr, ast.Compare):
        return True
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr)):
        return _looks_boolean(expr.left, known) or _looks_boolean(expr.right, known)
    return isinstance(expr, ast.Name) and expr.id in known


def analyse(source: str, tensor_params: list[str] | None = None) -> Context:
    """Parse a candidate and collect its kernels, masks, program ids and ``forward``.

    Raises:
        SyntaxError: the source does not parse.
    """
    tree = ast.parse(source)
    kernels = []
    forward = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _is_jit(node):
            a = node.args
            params = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
            constexprs = {p.arg for p in a.posonlyargs + a.args + a.kwonlyargs
                          if p.annotation is not None and CONSTEXPR_HINT in ast.unparse(p.annotation)}
            k = Kernel(node, params, constexprs, [])
            for asg in _assigns(node):
                name = asg.targets[0].id
                if _is_tl(asg.value, "program_id"):
                    k.pids.append(name)
                if _looks_boolean(asg.value, set(k.masks)):
                    k.masks[name] = ast.unparse(asg.value)
            kernels.append(k)
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    forward = item
    if tensor_params is None and forward is not None:
        tensor_params = [p.arg for p in forward.args.args[1:]]
    return Context(source, tree, SourceMap(source), kernels, forward, tensor_params or [])


#: Operators whose every edit site is itself a defect idiom (they fire on nothing else).
SUSPICIOUS_SITES = {"grid_ceil", "accumulator_fp32", "true_length", "index_scalar_load", "tail_mask"}
IDENTITY = {"sum": "0.0", "max": NEG_INF, "argmax": NEG_INF, "min": 'float("inf")', "argmin": 'float("inf")'}


def _patch(ctx: Context, op: str, desc: str, node: ast.AST, new_source: str, params: dict | None = None,
           suspicious: bool | None = None) -> Patch | None:
    if new_source == ctx.source or not parses(new_source):
        return None
    return Patch(operator=op, description=desc, line=getattr(node, "lineno", 0), source=new_source,
                 diff=unified_diff(ctx.source, new_source), params=params or {},
                 suspicious=op in SUSPICIOUS_SITES if suspicious is None else suspicious)


def _calls(fn: ast.AST, *names: str) -> list[ast.Call]:
    out = [n for n in ast.walk(fn) if _is_tl(n, *names)]
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def _replace_call_args(ctx: Context, call: ast.Call, extra: str) -> str:
    """Append ``extra`` (``"mask=m"``) to a call's argument list."""
    text = ctx.sm.text(call)
    inner = text[text.index("(") + 1: text.rindex(")")].rstrip()
    sep = "" if inner.endswith(",") else ", "
    if not inner.strip():
        sep = ""
    return ctx.sm.replace(call, text[: text.index("(") + 1] + inner + sep + extra + ")")


# ------------------------------------------------------------------ operators
def _norm(expr: str) -> str:
    return ast.unparse(ast.parse(expr, mode="eval").body)


def op_load_fill(ctx: Context) -> list[Patch]:
    """Change the ``other=`` fill of a masked load (0 for sums, -inf for max / log-sum-exp).

    An edit is suspicious when the load's fill is not the identity of the reduction its
    value reaches and the new fill is.
    """
    out = []
    for k in ctx.kernels:
        feeds = {}
        for asg in _assigns(k.node):
            for c in ast.walk(asg.value):
                if _is_tl(c, "load"):
                    feeds[id(c)] = _feeds_reduction(k, asg)
        for call in _calls(k.node, "load"):
            mask = _kw(call, "mask", 1)
            if mask is None:
                continue
            other = _kw(call, "other", 2)
            cur = ast.unparse(other) if other is not None else None
            ident = IDENTITY.get(feeds.get(id(call)) or "")
            for fill in ("0.0", NEG_INF, 'float("inf")'):
                if cur is not None and ast.unparse(ast.parse(fill, mode="eval").body) == cur:
                    continue
                if other is not None:
                    new = ctx.sm.replace(other, fill)
                else:
                    new = _replace_call_args(ctx, call, f"other={fill}")
                odd = ident is not None and fill == ident and (cur is None or cur != _norm(ident))
                p = _patch(ctx, "load_fill", f"line {call.lineno}: masked load fills padded lanes with {fill}", call, new,
                           {"fill": fill}, odd)
                if p:
                    out.append(p)
    return out


def _mask_candidates(k: Kernel, used: set[str]) -> list[str]:
    return [m for m in k.masks if m not in used]


def op_add_mask(ctx: Context) -> list[Patch]:
    """Add a missing mask to a load or store, or AND a missing mask into an incomplete one."""
    out = []
    for k in ctx.kernels:
        calls = _calls(k.node, "load", "store")
        masks_used = set()
        for c in calls:
            m = _kw(c, "mask", 2 if c.func.attr == "store" else 1)
            masks_used |= _names(m) if m is not None else set()
        mask_names = {n for text in k.masks.values() for n in _names(ast.parse(text, mode="eval"))}
        tile = "2d" if any(isinstance(n, ast.Subscript) and "None" in ast.unparse(n.slice)  # x[:, None]: 2-D tiles
                           for n in ast.walk(k.node)) else "1d"
        for call in calls:
            is_store = call.func.attr == "store"
            mask = _kw(call, "mask", 2 if is_store else 1)
            used = _names(mask) if mask is not None else set()
            for m in _mask_candidates(k, used):
                if m in _names(call):
                    continue
                if mask is None:
                    extra = f"mask={m}" if is_store else f"mask={m}, other=0.0"
                    new = _replace_call_args(ctx, call, extra)
                    desc = f"line {call.lineno}: mask the {call.func.attr} with {m}"
                else:
                    new = ctx.sm.replace(mask, f"({ctx.sm.text(mask)}) & {m}")
                    desc = f"line {call.lineno}: add {m} to the {call.func.attr}'s mask"
                # suspicious: a mask the kernel builds but no load/store uses, or an unmasked block access among
                # masked ones (its address uses a masked index or builds a block); a per-program scalar store is fine
                addr = call.args[0] if call.args else call
                block = bool(_names(addr) & mask_names) or bool(_calls(addr, "arange", "full"))
                odd = m not in masks_used or (mask is None and bool(masks_used) and block)
                p = _patch(ctx, "add_mask", desc, call, new, {"tile": tile}, odd)
                if p:
                    out.append(p)
    return out


def _masked_loads(k: Kernel) -> dict[str, str]:
    """Variables assigned from a masked ``tl.load`` -> the mask's text."""
    out = {}
    for asg in _assigns(k.node):
        for call in ast.walk(asg.value):
            if _is_tl(call, "load"):
                mask = _kw(call, "mask", 1)
                if mask is not None:
                    out[asg.targets[0].id] = ast.unparse(mask)
    return out


def _feeds_reduction(k: Kernel, asg: ast.Assign) -> str | None:
    """The reduction (``sum``/``max``...) that the assigned value reaches, if any."""
    deps = {asg.targets[0].id}
    stmts = [n for n in ast.walk(k.node) if isinstance(n, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return))]
    stmts.sort(key=lambda n: (n.lineno, n.col_offset))
    for st in stmts:
        if st.lineno <= asg.end_lineno:
            continue
        for call in ast.walk(st):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in REDUCTIONS:
                if any(_names(a) & deps for a in call.args):
                    return call.func.attr
        if isinstance(st, ast.Assign) and _names(st.value) & deps:
            deps |= {t.id for t in st.targets if isinstance(t, ast.Name)}
        if isinstance(st, ast.AugAssign) and _names(st.value) & deps and isinstance(st.target, ast.Name):
            deps.add(st.target.id)
    return None


def op_remask(ctx: Context) -> list[Patch]:
    """Re-apply the load mask to a value computed from masked data before it reaches a reduction.

    Padded lanes hold the load's fill; arithmetic on them (``x - mean``, a softcap turning
    -inf into -cap) gives values that then leak into a sum or max.
    """
    out = []
    for k in ctx.kernels:
        loaded = _masked_loads(k)
        derived: dict[str, str] = dict(loaded)
        for asg in sorted(_assigns(k.node), key=lambda n: n.lineno):
            name = asg.targets[0].id
            srcs = _names(asg.value) & set(derived)
            if not srcs:
                continue
            mask = derived[sorted(srcs)[0]]
            derived.setdefault(name, mask)
            if _is_tl(asg.value, "load", "where"):
                continue
            red = _feeds_reduction(k, asg)
            if red is None:
                continue
            fills = [NEG_INF, "0.0"] if red in ("max", "argmax") else ["0.0", NEG_INF]
            for fill in fills:
                new = ctx.sm.replace(asg.value, f"tl.where({mask}, {ctx.sm.text(asg.value)}, {fill})")
                p = _patch(ctx, "remask", f"line {asg.lineno}: re-mask padded lanes of {name}: tl.where({mask}, ..., {fill}) "
                           f"before tl.{red}", asg, new, {"fill": fill}, red in ("max", "argmax") and fill == NEG_INF)
                if p:
                    out.append(p)
    return out


def op_grid_ceil(ctx: Context) -> list[Patch]:
    """Replace a floor division that sizes a grid or loop with a ceiling division."""
    out = []
    scopes: list[tuple[ast.AST, str]] = [(k.node, "tl.cdiv") for k in ctx.kernels]
    if ctx.forward is not None:
        scopes.append((ctx.forward, "triton.cdiv"))
    for scope, fn in scopes:
        for n in ast.walk(scope):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv):
                new = ctx.sm.replace(n, f"{fn}({ctx.sm.text(n.left)}, {ctx.sm.text(n.right)})")
                p = _patch(ctx, "grid_ceil", f"line {n.lineno}: ceil division {fn} instead of //", n, new)
                if p:
                    out.append(p)
    return out


def op_accumulator_fp32(ctx: Context) -> list[Patch]:
    """Make a reduced-precision accumulator (``tl.zeros(..., dtype=fp16)``) fp32, and widen what it adds."""
    out = []
    for k in ctx.kernels:
        for call in _calls(k.node, "zeros", "full"):
            dt = _kw(call, "dtype", 1 if call.func.attr == "zeros" else 2)
            if dt is None or ast.unparse(dt) in ("tl.float32", "tl.float64", "tl.int32", "tl.int64"):
                continue
            new = ctx.sm.replace(dt, "tl.float32")
            p = _patch(ctx, "accumulator_fp32", f"line {call.lineno}: accumulate in tl.float32 instead of {ast.unparse(dt)}",
                       call, new)
            if p:
                out.append(p)
            # the same, with masked loads cast to fp32 before they reach the accumulator
            sm2 = analyse(new, ctx.tensor_params)
            loads = [c for kk in sm2.kernels for c in _calls(kk.node, "load")]
            src = new
            for c in sorted(loads, key=lambda c: (c.lineno, c.col_offset), reverse=True):
                parent_text = SourceMap(src)
                txt = parent_text.text(c)
                after = src[parent_text.span(c)[1]:parent_text.span(c)[1] + 4]
                if after.startswith(".to("):
                    continue
                src = parent_text.replace(c, f"{txt}.to(tl.float32)")
            p = _patch(ctx, "accumulator_fp32", f"line {call.lineno}: fp32 accumulator and fp32 loads", call, src)
            if p:
                out.append(p)
    return out


def op_widen_load(ctx: Context) -> list[Patch]:
    """Cast a loaded fp16/bf16 block to fp32 before arithmetic (squares and products overflow fp16 at 256)."""
    out = []
    for k in ctx.kernels:
        for call in _calls(k.node, "load"):
            a, b = ctx.sm.span(call)
            if ctx.source[b:b + 4] == ".to(":
                continue
            new = ctx.source[:b] + ".to(tl.float32)" + ctx.source[b:]
            p = _patch(ctx, "widen_load", f"line {call.lineno}: cast the loaded values to tl.float32", call, new)
            if p:
                out.append(p)
    return out


def _reduce_axis(k: Kernel) -> str:
    for c in _calls(k.node, "sum", "max"):
        ax = _kw(c, "axis", 1)
        if ax is not None:
            return ast.unparse(ax)
    return "0"


def op_max_subtraction(ctx: Context) -> list[Patch]:
    """Subtract the row max inside ``tl.exp`` (stable softmax / log-sum-exp)."""
    out = []
    for k in ctx.kernels:
        ax = _reduce_axis(k)
        for call in _calls(k.node, "log"):
            inner = call.args[0] if call.args else None
            if _is_tl(inner, "sum") and inner.args and _is_tl(inner.args[0], "exp"):
                e = ctx.sm.text(inner.args[0].args[0])
                m = f"tl.max({e}, axis={ax})"
                new = ctx.sm.replace(call, f"({m} + tl.log(tl.sum(tl.exp({e} - {m}), axis={ax})))")
                p = _patch(ctx, "max_subtraction", f"line {call.lineno}: stable log-sum-exp (subtract the max)", call, new)
                if p:
                    out.append(p)
        for call in _calls(k.node, "exp", "exp2"):
            if not call.args:
                continue
            arg = call.args[0]
            if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub):
                continue
            e = ctx.sm.text(arg)
            new = ctx.sm.replace(arg, f"({e}) - tl.max({e}, axis={ax})")
            p = _patch(ctx, "max_subtraction", f"line {call.lineno}: subtract the max inside tl.{call.func.attr}", call, new)
            if p:
                out.append(p)
    return out


_FLIP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">"}


def op_compare_bound(ctx: Context) -> list[Patch]:
    """Flip an off-by-one bound in a mask comparison (``<`` vs ``<=``, ``>`` vs ``>=``)."""
    out = []
    for k in ctx.kernels:
        for n in ast.walk(k.node):
            if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _FLIP:
                new = ctx.sm.replace(n, f"{ctx.sm.text(n.left)} {_FLIP[type(n.ops[0])]} {ctx.sm.text(n.comparators[0])}")
                p = _patch(ctx, "compare_bound", f"line {n.lineno}: bound {_FLIP[type(n.ops[0])]} instead of "
                           f"{ast.unparse(n).split()[1]}", n, new)
                if p:
                    out.append(p)
    return out


def _length_params(k: Kernel) -> list[str]:
    """Scalar parameters compared against in the kernel (true lengths such as N, n_cols)."""
    names = []
    for n in ast.walk(k.node):
        if isinstance(n, ast.Compare):
            for side in [n.left, *n.comparators]:
                if isinstance(side, ast.Name) and side.id in k.params and side.id not in k.constexprs \
                        and side.id not in names:
                    names.append(side.id)
    return names


def op_true_length(ctx: Context) -> list[Patch]:
    """Divide by the true length instead of the padded block size (``/ BLOCK_SIZE`` -> ``/ N``)."""
    out = []
    for k in ctx.kernels:
        lengths = _length_params(k)
        for n in ast.walk(k.node):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and isinstance(n.right, ast.Name) \
                    and n.right.id in k.constexprs:
                for length in lengths:
                    new = ctx.sm.replace(n.right, length)
                    p = _patch(ctx, "true_length", f"line {n.lineno}: divide by {length} instead of {n.right.id}", n, new)
                    if p:
                        out.append(p)
    return out


def op_index_scalar_load(ctx: Context) -> list[Patch]:
    """Index a per-row parameter by the program id instead of reading element 0 (``tl.load(p)`` -> ``tl.load(p + row)``)."""
    out = []
    for k in ctx.kernels:
        for call in _calls(k.node, "load"):
            if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id in k.params:
                for pid in k.pids:
                    new = ctx.sm.replace(call.args[0], f"{call.args[0].id} + {pid}")
                    p = _patch(ctx, "index_scalar_load", f"line {call.lineno}: load {call.args[0].id}[{pid}] per program "
                               f"instead of {call.args[0].id}[0]", call, new)
                    if p:
                        out.append(p)
    return out


def op_contiguous_inputs(ctx: Context) -> list[Patch]:
    """Make the tensor inputs of ``ModelNew.forward`` contiguous before the kernels index them as such."""
    f = ctx.forward
    if f is None or not f.body or not ctx.tensor_params:
        return []
    body = f.body
    first = body[1] if isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
        and len(body) > 1 else body[0]
    names = ctx.tensor_params
    line = f"{', '.join(names)} = " + ", ".join(f"{n}.contiguous()" for n in names)
    new = ctx.sm.insert_lines_before(first, [line])
    p = _patch(ctx, "contiguous_inputs", f"forward: make {', '.join(names)} contiguous (the kernel assumes "
               "contiguous rows)", first, new)
    return [p] if p else []


def _arange_offsets(k: Kernel) -> ast.Assign | None:
    """The first ``offs = ... tl.arange(...)`` assignment of a kernel."""
    for asg in sorted(_assigns(k.node), key=lambda n: n.lineno):
        if any(_is_tl(c, "arange") for c in ast.walk(asg.value)):
            return asg
    return None


def op_tail_mask(ctx: Context) -> list[Patch]:
    """Give an unmasked kernel a length parameter and mask its loads and stores with ``offs < n_elements``.

    For kernels with no mask at all: the last block of a launch whose size is not a
    multiple of BLOCK_SIZE reads and writes past the end of the tensors.
    """
    out = []
    for k in ctx.kernels:
        calls = _calls(k.node, "load", "store")
        if k.masks or not calls or any(_kw(c, "mask", 2 if c.func.attr == "store" else 1) is not None for c in calls):
            continue
        offs = _arange_offsets(k)
        if offs is None:
            continue
        oname = offs.targets[0].id
        taken = k.params + [a.targets[0].id for a in _assigns(k.node)]
        n_name = next(n for n in ("n_elements", "n_elements_", "numel_") if n not in taken)
        m_name = next(n for n in ("mask", "tail_mask", "mask_") if n not in taken)
        args = k.node.args.args
        first_const = next((i for i, a in enumerate(args) if a.arg in k.constexprs), len(args))
        launches = [c for c in ast.walk(ctx.tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                    and isinstance(c.func.value, ast.Name) and c.func.value.id == k.node.name]
        if not launches or any(len(c.args) != first_const or not c.args for c in launches):
            continue
        # edits from the bottom of the file up, so earlier positions stay valid
        edits: list[tuple[int, int, str]] = []
        sm = ctx.sm
        for c in launches:
            last = c.args[-1]
            a, b = sm.span(last)
            edits.append((b, b, f", {sm.text(c.args[0])}.numel()"))
        for c in calls:
            if oname not in _names(c.args[0]) if c.args else True:
                continue
            text = sm.text(c)
            inner_end = sm.span(c)[0] + text.rindex(")")
            extra = f", mask={m_name}" if c.func.attr == "store" else f", mask={m_name}, other=0.0"
            edits.append((inner_end, inner_end, extra))
        ind = sm.indent_of(offs.lineno)
        at = sm.starts[offs.end_lineno]
        edits.append((at, at, f"{ind}{m_name} = {oname} < {n_name}\n"))
        if first_const < len(args):
            a0 = sm.span(args[first_const])[0]
            edits.append((a0, a0, f"{n_name}, "))
        else:
            e0 = sm.span(args[-1])[1]
            edits.append((e0, e0, f", {n_name}"))
        src = ctx.source
        for a, b, text in sorted(edits, key=lambda t: -t[0]):
            src = src[:a] + text + src[b:]
        p = _patch(ctx, "tail_mask", f"{k.node.name}: add {n_name} and mask loads/stores with {oname} < {n_name}",
                   offs, src)
        if p:
            out.append(p)
    return out


Operator = Callable[[Context], list[Patch]]

#: The core repair operators by id (``tools.repair.operators.OPERATORS`` holds every family); ``kb/patterns`` names them and says which symptoms they answer.
CORE_OPERATORS: dict[str, Operator] = {
    "remask": op_remask,
    "load_fill": op_load_fill,
    "add_mask": op_add_mask,
    "tail_mask": op_tail_mask,
    "index_scalar_load": op_index_scalar_load,
    "accumulator_fp32": op_accumulator_fp32,
    "widen_load": op_widen_load,
    "contiguous_inputs": op_contiguous_inputs,
    "true_length": op_true_length,
    "grid_ceil": op_grid_ceil,
    "max_subtraction": op_max_subtraction,
    "compare_bound": op_compare_bound,
}


def matches(patch: Patch, params: dict | None) -> bool:
    """True when every given parameter equals the patch's (no parameters match every patch)."""
    return all(str(patch.params.get(k)) == str(v) for k, v in (params or {}).items())


def run_operators(ctx: Context, operators: list[tuple[Operator, dict | None]]) -> list[Patch]:
    """The patches of each operator in turn whose params match, without duplicate sources."""
    seen = set()
    out = []
    for op, params in operators:
        for p in op(ctx):
            if p.source not in seen and matches(p, params):
                seen.add(p.source)
                out.append(p)
    return out
