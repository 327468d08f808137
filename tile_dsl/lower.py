"""Deterministic lowering of a DSL program to AscendC (no LLM): direct-launch and MultiKernelBench forms.

One kernel body (``<op>_impl``) is generated from the IR:

- every global becomes a ``GlobalTensor`` over the whole tensor; its run-time sizes
  (``numel rows cols last wpr``, see ``executor.view_dims``) are ``uint32_t`` parameters;
- ``k.split`` becomes the block's ``start``/``count`` from ``GetBlockIdx()``;
- ``k.tiles`` a loop of ``ceil(count / size)`` tiles whose last one is the tail
  (``len = min(size, count - i * size)``); ``k.rows`` a loop over the block's rows;
- ``k.copy_in`` a ``VECIN`` queue buffer filled by ``DataCopyPad`` (any length), enqueued
  and dequeued; a buffer that ``k.copy_out`` writes comes from a ``VECOUT`` queue; other
  buffers are ``TBuf``s; all queue tensors are freed at the end of the loop body;
- vector ops are the count-form AscendC calls (``Add``, ``Adds``, ``Exp``...); reductions
  ``ReduceSum/Max/Min`` into a one-block result buffer read back with ``GetValue(0)``;
  scalars are C++ ``float`` expressions; ``k.store`` is ``GlobalTensor::SetValue``.

The rules that decide tiling and tails are the small functions of ``RULES`` so a test can
replace one by a wrong one (mutation testing of the lowering).

Forms: ``lower_direct`` writes a Python candidate whose ``ModelNew.forward`` calls
``tools.ascendc.launch`` (the emulator's direct-launch form, ``tools/ascendc/README.md``);
``lower_mkb`` writes MultiKernelBench's six strings (``kernel_src`` with ``GET_TILING_DATA``,
``host_tiling_src``, ``host_operator_src``, ``project_json_src``, ``python_bind_src``,
``model_src``), whose host side the emulator does not run (untested here).
"""

from __future__ import annotations

import json
import math

import numpy as np

from tile_dsl import ir
from tile_dsl.rules import ALIGN_BYTES, QUEUE_DEPTH

DIMS = ("numel", "rows", "cols", "last", "wpr")


# ------------------------------------------------------------------ rules (one function per decision)
def rule_block_share(total: str, blocks: int, align: int) -> list[str]:
    """C++ lines setting ``start`` and ``count`` of this block's share of ``total``."""
    return [f"uint32_t per = ((({total}) + {blocks} - 1) / {blocks} + {align} - 1) / {align} * {align};",
            "uint32_t start = GetBlockIdx() * per;",
            f"uint32_t count = start >= ({total}) ? 0 : (({total}) - start < per ? ({total}) - start : per);"]


def rule_tile_count(count: str, size: int) -> str:
    """C++ expression: tiles needed for ``count`` elements, the tail included."""
    return f"({count} + {size} - 1) / {size}"


def rule_tile_len(count: str, i: str, size: int) -> str:
    """C++ expression: length of tile ``i`` (``size``, or the remainder for the tail)."""
    return f"({count} - {i} * {size} < {size} ? {count} - {i} * {size} : {size})"


def rule_row_offset(g: str, row: str) -> str:
    """C++ expression: first element of row ``row`` of global ``g``'s view (``executor.row_offset``)."""
    return f"({row} / {g}_wpr) * {g}_last + ({row} % {g}_wpr) * {g}_cols"


RULES = {"block_share": rule_block_share, "tile_count": rule_tile_count, "tile_len": rule_tile_len,
         "row_offset": rule_row_offset}

_VEC = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min",
        "adds": "Adds", "muls": "Muls", "maxs": "Maxs", "mins": "Mins", "exp": "Exp", "ln": "Ln", "abs": "Abs",
        "sqrt": "Sqrt", "relu": "Relu", "reciprocal": "Reciprocal"}
_SCA_BIN = {"add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "div": "({a} / {b})",
            "max": "({a} > {b} ? {a} : {b})", "min": "({a} < {b} ? {a} : {b})"}
_SCA_UN = {"sqrt": "std::sqrt({a})", "exp": "std::exp({a})", "ln": "std::log({a})", "abs": "std::fabs({a})",
           "neg": "(-{a})", "reciprocal": "(1.0f / {a})", "copy": "{a}"}


def flt(v: float) -> str:
    """A C++ float literal that parses to exactly ``np.float32(v)``."""
    f = float(np.float32(v))
    if math.isnan(f):
        return "NAN"
    if f in (float("inf"), float("-inf")):
        return "INFINITY" if f > 0 else "(-INFINITY)"
    return f"{f!r}f"


class _Emitter:
    def __init__(self, prog: ir.Program) -> None:
        self.prog = prog
        self.lines: list[str] = []
        self.decls: list[str] = []
        self.inits: list[str] = []
        self.loaded = {s.dst for s in ir.walk(prog.body) if isinstance(s, ir.Load)}
        self.stored = {s.src for s in ir.walk(prog.body) if isinstance(s, ir.Store)}
        self.dtype: dict[str, ir.DType] = {}
        self.loop_len: dict[str, str] = {}
        self.loop_cap: dict[str, str] = {}
        self.split: ir.Split | None = None
        self.queued: list[tuple[str, str]] = []  # (queue, tensor) to free at the end of the loop body

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def operand(self, a, loop: str | None = None) -> str:
        kind, v = a
        if kind == "buf":
            return v
        if kind == "sca":
            return v
        if kind == "dim":
            return f"(float){v.glob}_{v.kind}"
        return flt(v)

    # -------------------------------------------------------------- buffers
    def alloc(self, depth: int, name: str, dt: ir.DType, loop: str, line: str) -> None:
        cap = self.loop_cap[loop].format(n=dt.nbytes)
        self.dtype[name] = dt
        if name in self.loaded or name in self.stored:
            q = f"q_{name}"
            pos = "VECIN" if name in self.loaded else "VECOUT"
            self.decls.append(f"TQue<QuePosition::{pos}, {QUEUE_DEPTH}> {q};  // {line}")
            self.inits.append(f"pipe.InitBuffer({q}, {QUEUE_DEPTH}, {cap});")
            self.emit(depth, f"LocalTensor<{dt.cpp}> {name} = {q}.AllocTensor<{dt.cpp}>();")
            self.queued.append((q, name))
        else:
            t = f"t_{name}"
            self.decls.append(f"TBuf<QuePosition::VECCALC> {t};  // {line}")
            self.inits.append(f"pipe.InitBuffer({t}, {cap});")
            self.emit(depth, f"LocalTensor<{dt.cpp}> {name} = {t}.Get<{dt.cpp}>();")

    # -------------------------------------------------------------- statements
    def body(self, stmts: list, depth: int, loop: str | None) -> None:
        for s in stmts:
            self.emit(depth, f"// {s.line}: {type(s).__name__.lower()}")
            getattr(self, "do_" + type(s).__name__.lower())(s, depth, loop)

    def do_split(self, s: ir.Split, depth: int, loop) -> None:
        self.split = s
        for text in RULES["block_share"](f"{s.total.glob}_{s.total.kind}", s.blocks, s.align):
            self.emit(depth, text)
        self.body(s.body, depth, None)

    def _loop_body(self, s, depth: int) -> None:
        outer = self.queued
        self.queued = []
        self.body(s.body, depth + 1, s.var)
        for q, t in self.queued:
            self.emit(depth + 1, f"{q}.FreeTensor({t});")
        self.queued = outer

    def do_tiles(self, s: ir.Tiles, depth: int, loop) -> None:
        i, n = f"i_{s.var}", f"n_{s.var}"
        self.loop_len[s.var] = f"len_{s.var}"
        self.loop_cap[s.var] = f"{s.size} * {{n}}"
        self.emit(depth, f"uint32_t {n} = {RULES['tile_count']('count', s.size)};")
        self.emit(depth, f"for (uint32_t {i} = 0; {i} < {n}; {i}++) {{")
        self.emit(depth + 1, f"uint32_t off_{s.var} = start + {i} * {s.size};")
        self.emit(depth + 1, f"uint32_t len_{s.var} = {RULES['tile_len']('count', i, s.size)};")
        self._loop_body(s, depth)
        self.emit(depth, "}")

    def do_rows(self, s: ir.Rows, depth: int, loop) -> None:
        g = self.split.total.glob
        self.loop_len[s.var] = f"{g}_cols"
        self.loop_cap[s.var] = f"(({g}_cols * {{n}} + {ALIGN_BYTES - 1}) / {ALIGN_BYTES} * {ALIGN_BYTES})"
        i = f"i_{s.var}"
        self.emit(depth, f"for (uint32_t {i} = 0; {i} < count; {i}++) {{")
        self.emit(depth + 1, f"uint32_t row_{s.var} = start + {i};")
        self._loop_body(s, depth)
        self.emit(depth, "}")

    def _gm_off(self, glob: str, loop: str) -> str:
        if self.loop_len[loop].startswith("len_"):
            return f"off_{loop}"
        return RULES["row_offset"](glob, f"row_{loop}")

    def do_load(self, s: ir.Load, depth: int, loop: str) -> None:
        dt = s.dtype.cpp
        self.alloc(depth, s.dst, s.dtype, loop, s.line)
        n = self.loop_len[loop]
        self.emit(depth, f"DataCopyPad({s.dst}, {s.glob}_gm[{self._gm_off(s.glob, loop)}], "
                         f"DataCopyExtParams(1, {n} * sizeof({dt}), 0, 0, 0), "
                         f"DataCopyPadExtParams<{dt}>(false, 0, 0, ({dt})0));")
        self.emit(depth, f"q_{s.dst}.EnQue({s.dst});")
        self.emit(depth, f"{s.dst} = q_{s.dst}.DeQue<{dt}>();")

    def do_store(self, s: ir.Store, depth: int, loop: str) -> None:
        dt = self.dtype[s.src].cpp
        src = s.src
        if s.src in self.loaded:  # a loaded buffer copied straight out: through a VECOUT buffer (x * 1 is exact)
            src = f"{s.src}_out"
            q = f"q_{src}"
            self.decls.append(f"TQue<QuePosition::VECOUT, {QUEUE_DEPTH}> {q};  // {s.line}")
            self.inits.append(f"pipe.InitBuffer({q}, {QUEUE_DEPTH}, {self.loop_cap[loop].format(n=self.dtype[s.src].nbytes)});")
            self.emit(depth, f"LocalTensor<{dt}> {src} = {q}.AllocTensor<{dt}>();")
            self.emit(depth, f"Muls({src}, {s.src}, ({dt})1.0f, {self.loop_len[loop]});")
            self.queued.append((q, src))
        n = self.loop_len[loop]
        self.emit(depth, f"q_{src}.EnQue({src});")
        self.emit(depth, f"{src} = q_{src}.DeQue<{dt}>();")
        self.emit(depth, f"DataCopyPad({s.glob}_gm[{self._gm_off(s.glob, loop)}], {src}, "
                         f"DataCopyExtParams(1, {n} * sizeof({dt}), 0, 0, 0));")

    def do_storescalar(self, s: ir.StoreScalar, depth: int, loop) -> None:
        dt = self.prog.glob(s.glob).dtype.cpp
        idx = f"row_{s.loop}" if s.loop else "0"
        self.emit(depth, f"{s.glob}_gm.SetValue({idx}, ({dt}){s.src});")

    def do_vec(self, s: ir.Vec, depth: int, loop: str) -> None:
        dt = s.dtype.cpp
        self.alloc(depth, s.dst, s.dtype, loop, s.line)
        n = self.loop_len[loop]
        a = [self.operand(x) for x in s.args]
        if s.op == "neg":
            self.emit(depth, f"Muls({s.dst}, {a[0]}, ({dt})-1.0f, {n});")
        elif s.args[-1][0] != "buf" and len(a) == 2:
            self.emit(depth, f"{_VEC[s.op]}({s.dst}, {a[0]}, ({dt})({a[1]}), {n});")
        else:
            self.emit(depth, f"{_VEC[s.op]}({s.dst}, {', '.join(a)}, {n});")

    def do_cast(self, s: ir.Cast, depth: int, loop: str) -> None:
        self.alloc(depth, s.dst, s.dtype, loop, s.line)
        mode = "CAST_RINT" if s.dtype.nbytes < self.dtype[s.src].nbytes else "CAST_NONE"
        self.emit(depth, f"Cast({s.dst}, {s.src}, RoundMode::{mode}, {self.loop_len[loop]});")

    def do_reduce(self, s: ir.Reduce, depth: int, loop: str) -> None:
        dt = self.dtype[s.src]
        cap = self.loop_cap[loop].format(n=dt.nbytes)
        self.decls.append(f"TBuf<QuePosition::VECCALC> w_{s.dst}, r_{s.dst};  // {s.line}")
        self.inits.append(f"pipe.InitBuffer(w_{s.dst}, {cap});")
        self.inits.append(f"pipe.InitBuffer(r_{s.dst}, {ALIGN_BYTES});")
        self.emit(depth, f"LocalTensor<{dt.cpp}> rt_{s.dst} = r_{s.dst}.Get<{dt.cpp}>();")
        fn = {"sum": "ReduceSum", "max": "ReduceMax", "min": "ReduceMin"}[s.op]
        self.emit(depth, f"{fn}(rt_{s.dst}, {s.src}, w_{s.dst}.Get<{dt.cpp}>(), {self.loop_len[loop]});")
        self.emit(depth, f"float {s.dst} = (float)rt_{s.dst}.GetValue(0);")

    def do_sca(self, s: ir.Sca, depth: int, loop) -> None:
        a = [self.operand(x) for x in s.args]
        expr = _SCA_BIN[s.op].format(a=a[0], b=a[1]) if len(a) == 2 else _SCA_UN[s.op].format(a=a[0])
        self.emit(depth, f"float {s.dst} = {expr};")

    def do_var(self, s: ir.Var, depth: int, loop) -> None:
        self.emit(depth, f"float {s.dst} = {flt(s.init)};")

    def do_update(self, s: ir.Update, depth: int, loop) -> None:
        self.emit(depth, f"{s.var} = {_SCA_BIN[s.op].format(a=s.var, b=self.operand(s.src))};")


def kernel_params(prog: ir.Program) -> list[str]:
    """The impl's parameters: one ``GM_ADDR`` per global, then the five sizes of each global."""
    return [f"GM_ADDR {g.name}" for g in prog.globals] + [f"uint32_t {g.name}_{d}" for g in prog.globals for d in DIMS]


def kernel_impl(prog: ir.Program) -> str:
    """C++ of ``__aicore__ inline void <op>_impl(...)``: the whole kernel body for one block."""
    e = _Emitter(prog)
    e.body(prog.body, 1, None)
    gms = [f"    GlobalTensor<{g.dtype.cpp}> {g.name}_gm;" for g in prog.globals]
    sets = [f"    {g.name}_gm.SetGlobalBuffer((__gm__ {g.dtype.cpp}*){g.name}, {g.name}_numel);" for g in prog.globals]
    params = ",\n        ".join(kernel_params(prog))
    return "\n".join([
        f"__aicore__ inline void {prog.name}_impl(\n        {params}) {{",
        "    TPipe pipe;",
        *("    " + d for d in e.decls), *gms, *sets, *("    " + i for i in e.inits), *e.lines, "}"])


HEADER = ("#include \"kernel_operator.h\"\n#include <cmath>\n"
          "// Generated by tile_dsl.lower from the DSL program {name}; edit the program, not this file.\n")


def kernel_name(prog: ir.Program) -> str:
    """The kernel's C name: ``<op>_custom`` (MultiKernelBench's convention; avoids libm names like ``hypot``)."""
    return f"{prog.name}_custom"


def kernel_source_direct(prog: ir.Program) -> str:
    """Direct-launch kernel source: the impl and ``extern "C" <op>_custom(GM_ADDR..., uint32_t sizes...)``."""
    args = ", ".join([g.name for g in prog.globals] + [f"{g.name}_{d}" for g in prog.globals for d in DIMS])
    return (HEADER.format(name=prog.name) + "\n" + kernel_impl(prog) + "\n\n"
            f"extern \"C\" __global__ __aicore__ void {kernel_name(prog)}({', '.join(kernel_params(prog))}) {{\n"
            f"    {prog.name}_impl({args});\n}}\n")


def blocks_of(prog: ir.Program) -> int:
    """The program's block count (its ``k.split``)."""
    return next(s for s in prog.body if isinstance(s, ir.Split)).blocks


def _shape_expr(g: ir.Global) -> str:
    kind, *rest = g.shape.split(":")
    if kind == "scalar":
        return "()"
    x = rest[0]
    if kind == "like":
        return f"tuple({x}.shape)"
    if kind == "rows":
        return f"tuple({x}.shape[:-1])"
    return f"(*{x}.shape[:-1], {x}.shape[-1] // {rest[1]})"


VIEW_SRC = '''
def _view(t, window=None):
    """numel, rows, cols, last, wpr of a tensor's row view (tile_dsl.executor.view_dims)."""
    numel = t.numel()
    last = t.shape[-1] if t.dim() else 1
    outer = numel // last if last else 0
    if window is None:
        return [numel, outer, last, last, 1]
    return [numel, outer * (last // window), window, last, last // window]
'''


def _forward(prog: ir.Program, call: str, init_params: str) -> str:
    ins = [g.name for g in prog.inputs]
    lines = ["class ModelNew(nn.Module):",
             f"    def __init__(self{', ' + init_params if init_params else ''}):",
             "        super().__init__()", "",
             f"    def forward(self, {', '.join(ins)}):",
             f"        dtype = {ins[0]}.dtype"]
    for g in prog.inputs:
        lines.append(f"        {g.name} = {g.name}.to({g.dtype.torch}).contiguous()")
    for g in prog.outputs:
        lines.append(f"        {g.name} = torch.empty({_shape_expr(g)}, dtype={g.dtype.torch})")
    lines.append(f"        {call}")
    outs = [f"{g.name}.to(dtype)" for g in prog.outputs]
    lines.append(f"        return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ')'}")
    return "\n".join(lines) + "\n"


def _launch_args(prog: ir.Program) -> str:
    views = [f"*_view({g.name}{', ' + str(g.window) if g.window else ''})" for g in prog.globals]
    return ", ".join([g.name for g in prog.globals] + views)


def lower_direct(prog: ir.Program, init_params: str = "") -> str:
    """The program as a direct-launch candidate (a Python file) for the emulator.

    Args:
        prog: a traced program (the executor should accept it first).
        init_params: the reference ``Model.__init__`` parameters after ``self`` (text), so
            ``ModelNew`` has the same constructor.

    Returns:
        Python source with ``kernel_src``, ``BLOCK_DIM`` and a ``ModelNew`` whose forward
        allocates the outputs and calls ``tools.ascendc.launch``.
    """
    call = f"launch(kernel_src, \"{kernel_name(prog)}\", BLOCK_DIM, [{_launch_args(prog)}])"
    return ("import torch\nimport torch.nn as nn\n\nfrom tools.ascendc import launch\n\n"
            f"kernel_src = r\"\"\"\n{kernel_source_direct(prog)}\"\"\"\n\nBLOCK_DIM = {blocks_of(prog)}\n"
            f"{VIEW_SRC}\n\n{_forward(prog, call, init_params)}")


# ------------------------------------------------------------------ MultiKernelBench form (host side untested)
def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) or "Op"


def lower_mkb(prog: ir.Program, init_params: str = "") -> str:
    """The program in MultiKernelBench's form: a Python file with the six source strings.

    The kernel reads the sizes from a tiling struct (``GET_TILING_DATA``) that the host tiling
    function fills from the input shapes; ``python_bind_src`` allocates the outputs and calls
    ``EXEC_NPU_CMD``; ``model_src``'s ``ModelNew`` calls ``custom_ops_lib.<op>``. The emulator
    runs only the kernel body (shared with ``lower_direct``); the host side, the op
    registration and the binding are generated text, untested without CANN.
    """
    op = kernel_name(prog)
    cls = _camel(op)
    fields = [f"{g.name}_{d}" for g in prog.globals for d in DIMS]
    tiling = "\n".join(f"  TILING_DATA_FIELD_DEF(uint32_t, {f});" for f in fields)
    host_tiling = (f"#include \"register/tilingdata_base.h\"\n\nnamespace optiling {{\n"
                   f"BEGIN_TILING_DATA_DEF({cls}TilingData)\n{tiling}\nEND_TILING_DATA_DEF;\n\n"
                   f"REGISTER_TILING_DATA_CLASS({cls}, {cls}TilingData)\n}}  // namespace optiling\n")
    set_lines = []
    for i, g in enumerate(prog.globals):
        src = f"context->GetInputShape({i})" if g.role == "in" else \
            f"context->GetOutputShape({i - len(prog.inputs)})"
        w = g.window or 0
        set_lines += [f"    {{  // {g.name}",
                      f"        const gert::Shape& s = {src}->GetStorageShape();",
                      "        uint32_t numel = s.GetShapeSize();",
                      "        uint32_t last = s.GetDimNum() ? s.GetDim(s.GetDimNum() - 1) : 1;",
                      "        uint32_t outer = last ? numel / last : 0;",
                      f"        uint32_t win = {w}, wpr = win ? last / win : 1, cols = win ? win : last;",
                      f"        tiling.set_{g.name}_numel(numel); tiling.set_{g.name}_rows(outer * wpr);",
                      f"        tiling.set_{g.name}_cols(cols); tiling.set_{g.name}_last(last); "
                      + f"tiling.set_{g.name}_wpr(wpr);", "    }"]
    regs = []
    for g in prog.globals:
        kind = "Input" if g.role == "in" else "Output"
        regs.append(f"        this->{kind}(\"{g.name}\").ParamType(REQUIRED).DataType({{{g.dtype.ge}}})"
                    ".Format({ge::FORMAT_ND}).UnknownShapeFormat({ge::FORMAT_ND});")
    host_operator = "\n".join([
        f"#include \"{op}_tiling.h\"", "#include \"register/op_def_registry.h\"", "",
        "namespace optiling {",
        "static ge::graphStatus TilingFunc(gert::TilingContext* context) {",
        f"    {cls}TilingData tiling;", *set_lines,
        f"    context->SetBlockDim({blocks_of(prog)});",
        "    tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());",
        "    context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());",
        "    size_t* ws = context->GetWorkspaceSizes(1);", "    ws[0] = 0;",
        "    return ge::GRAPH_SUCCESS;", "}", "}  // namespace optiling", "",
        "namespace ops {", f"class {cls} : public OpDef {{", "public:",
        f"    explicit {cls}(const char* name) : OpDef(name) {{", *regs,
        "        this->AICore().SetTiling(optiling::TilingFunc);",
        "        this->AICore().AddConfig(\"ascend910b\");", "    }", "};", f"OP_ADD({cls});",
        "}  // namespace ops", ""])
    project_json = json.dumps([{
        "op": cls, "language": "cpp",
        "input_desc": [{"name": g.name, "param_type": "required", "format": ["ND"], "type": [g.dtype.json]}
                       for g in prog.inputs],
        "output_desc": [{"name": g.name, "param_type": "required", "format": ["ND"], "type": [g.dtype.json]}
                        for g in prog.outputs]}], indent=4)
    kargs = ", ".join([g.name for g in prog.globals] + [f"t.{f}" for f in fields])
    kernel = (HEADER.format(name=op) + "\n" + kernel_impl(prog) + "\n\n"
              f"extern \"C\" __global__ __aicore__ void {op}({', '.join('GM_ADDR ' + g.name for g in prog.globals)}, "
              f"GM_ADDR workspace, GM_ADDR tiling) {{\n    GET_TILING_DATA(t, tiling);\n    {prog.name}_impl({kargs});\n}}\n")
    ins = ", ".join(f"const at::Tensor& {g.name}" for g in prog.inputs)
    allocs = []
    for g in prog.outputs:
        kind, *rest = g.shape.split(":")
        if kind == "scalar":
            sizes = "{}"
        elif kind == "like":
            sizes = f"{rest[0]}.sizes().vec()"
        elif kind == "rows":
            sizes = f"std::vector<int64_t>({rest[0]}.sizes().begin(), {rest[0]}.sizes().end() - 1)"
        else:
            allocs.append(f"    std::vector<int64_t> {g.name}_sizes = {rest[0]}.sizes().vec();")
            allocs.append(f"    {g.name}_sizes.back() /= {rest[1]};")
            sizes = f"{g.name}_sizes"
        allocs.append(f"    at::Tensor {g.name} = at::empty({sizes}, {prog.inputs[0].name}.options());")
    ret_t = "at::Tensor" if len(prog.outputs) == 1 else f"std::tuple<{', '.join(['at::Tensor'] * len(prog.outputs))}>"
    ret = prog.outputs[0].name if len(prog.outputs) == 1 else \
        "std::make_tuple(" + ", ".join(g.name for g in prog.outputs) + ")"
    bind = "\n".join([
        "#include <torch/library.h>", "#include <torch/extension.h>", "#include \"pytorch_npu_helper.hpp\"", "",
        f"{ret_t} {op}_impl_npu({ins}) {{", *allocs,
        f"    EXEC_NPU_CMD(aclnn{cls}, {', '.join(g.name for g in prog.globals)});", f"    return {ret};", "}", "",
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
        f"    m.def(\"{op}\", &{op}_impl_npu, \"{op} (generated by tile_dsl)\");", "}", ""])
    model = ("import torch\nimport torch.nn as nn\nimport custom_ops_lib\n\n\n"
             f"class ModelNew(nn.Module):\n    def __init__(self{', ' + init_params if init_params else ''}):\n"
             f"        super().__init__()\n\n    def forward(self, {', '.join(g.name for g in prog.inputs)}):\n"
             f"        return custom_ops_lib.{op}({', '.join(g.name for g in prog.inputs)})\n")
    parts = {"project_json_src": project_json, "host_tiling_src": host_tiling, "host_operator_src": host_operator,
             "kernel_src": kernel, "python_bind_src": bind, "model_src": model}
    return "".join(f"{k} = r'''\n{v}'''\n\n" for k, v in parts.items())
