"""Golden semantics of the tile DSL: run a traced program with numpy, block by block, tile by tile.

The whole program body runs once per block (SPMD, as an AscendC kernel does); ``k.split``
gives each block its share. Outputs start as NaN so an element no block writes shows up.
The executor enforces at run time what depends on sizes: the UB budget (row buffers),
reads and writes inside the tensors, and that no two blocks write the same output element
(blocks run in parallel on the NPU: that would be a race).

Arithmetic: vector ops compute in the buffer's dtype (numpy's float16 ops round each result
to fp16), scalars are float32, ``reduce_sum`` adds pairwise in float32 (``tree_sum``).
"""

from __future__ import annotations

import numpy as np

from tile_dsl import ir
from tile_dsl.dsl import DSLError
from tile_dsl.rules import ALIGN_BYTES, QUEUE_DEPTH, UB_BYTES, round_up

F32 = np.float32


def view_dims(g: ir.Global, arr: np.ndarray) -> dict[str, int]:
    """Sizes of a global's row view: ``numel``, ``rows``, ``cols``, ``last`` (last dimension), ``wpr``.

    Plain view: rows are the last dimension (``cols = last``, ``wpr = 1``). Pooling view
    (``window=K``): ``wpr = last // K`` windows per last-dimension row, ``rows = outer * wpr``,
    ``cols = K``; row ``r`` starts at element ``(r // wpr) * last + (r % wpr) * K``.
    """
    numel = int(arr.size)
    last = int(arr.shape[-1]) if arr.ndim else 1
    outer = numel // last if last else 0
    if g.window is None:
        return {"numel": numel, "rows": outer, "cols": last, "last": last, "wpr": 1}
    wpr = last // g.window
    return {"numel": numel, "rows": outer * wpr, "cols": g.window, "last": last, "wpr": wpr}


def row_offset(d: dict[str, int], row: int) -> int:
    """First element of row ``row`` of a view with sizes ``d`` (``view_dims``)."""
    return (row // d["wpr"]) * d["last"] + (row % d["wpr"]) * d["cols"] if d["wpr"] else 0


def output_shape(g: ir.Global, shapes: dict[str, tuple]) -> tuple:
    """The shape of output ``g`` from its rule and the input shapes.

    Raises:
        DSLError: a ``pool:X:K`` whose last dimension is not a multiple of K.
    """
    kind, *rest = g.shape.split(":")
    if kind == "scalar":
        return ()
    s = tuple(shapes[rest[0]])
    if kind == "like":
        return s
    if kind == "rows":
        return s[:-1]
    kk = int(rest[1])
    return s[:-1] + (s[-1] // kk,) if s else ()


def buffer_lengths(prog: ir.Program, dims: dict[str, dict[str, int]]) -> dict[str, tuple[int, ir.DType, str]]:
    """Every UB buffer's capacity in elements, dtype and line (rows: the loaded tensor's ``cols``)."""
    out: dict[str, tuple[int, ir.DType, str]] = {}
    loops: dict[str, int] = {}
    for s in ir.walk(prog.body):
        if isinstance(s, ir.Tiles):
            loops[s.var] = s.size
        elif isinstance(s, ir.Load):
            if s.loop not in loops:  # rows loop: length is the tensor's view width
                loops[s.loop] = dims[s.glob]["cols"]
            out[s.dst] = (loops[s.loop], s.dtype, s.line)
        elif isinstance(s, (ir.Vec, ir.Cast)):
            out[s.dst] = (loops.get(s.loop, 0), s.dtype, s.line)
    return out


def ub_plan(prog: ir.Program, dims: dict[str, dict[str, int]]) -> list[tuple[str, int, str]]:
    """The UB the lowered kernel allocates: ``[(buffer, bytes, line)]`` in program order.

    Loaded buffers sit in a VECIN queue and stored ones in a VECOUT queue, both ``QUEUE_DEPTH``
    deep; other buffers are single ``TBuf``s; a reduction needs a work buffer as large as its
    source plus one 32-byte result block. Capacities are rounded up to 32 bytes.
    """
    lens = buffer_lengths(prog, dims)
    stored = {s.src for s in ir.walk(prog.body) if isinstance(s, ir.Store)}
    loaded = {s.dst for s in ir.walk(prog.body) if isinstance(s, ir.Load)}
    plan = []
    for name, (n, dt, line) in lens.items():
        cap = round_up(max(n, 1) * dt.nbytes, ALIGN_BYTES)
        depth = QUEUE_DEPTH if name in loaded else 1
        plan.append((name, cap * depth, line))
        if name in stored:
            plan.append((name + "_out", cap * QUEUE_DEPTH, line))
    for s in ir.walk(prog.body):
        if isinstance(s, ir.Reduce):
            n = lens[s.src][0]
            plan.append((s.dst + "_work", round_up(max(n, 1) * 4, ALIGN_BYTES) + ALIGN_BYTES, s.line))
    return plan


def check_ub(prog: ir.Program, dims: dict[str, dict[str, int]]) -> int:
    """Total UB bytes of the program at these sizes.

    Raises:
        DSLError: the total exceeds ``UB_BYTES`` (named at the buffer that crosses it).
    """
    total = 0
    for _name, nbytes, line in ub_plan(prog, dims):
        total += nbytes
        if total > UB_BYTES:
            raise DSLError(f"UB overflow: buffers need {total} B with this one ({nbytes} B) and more, the Unified "
                           f"Buffer holds {UB_BYTES} B (192 KB); use smaller tiles", line)
    return total


def tree_sum(x: np.ndarray) -> np.float32:
    """Pairwise float32 sum: halves (the first ``n // 2`` elements, then the rest) down to at most
    8 elements, which add left to right from 0.

    This is the order of the AscendC emulator's ``ReduceSum`` (``tools/ascendc/include/
    kernel_operator.h``, ``detail::tree_sum``); the device adds partial sums in a tree whose exact
    order Ascend does not document.
    """
    n = x.size
    if n <= 8:
        acc = F32(0)
        for v in x:
            acc = F32(acc + v)
        return acc
    h = n // 2
    return F32(tree_sum(x[:h]) + tree_sum(x[h:]))


class _Block:
    def __init__(self, prog, arrays, dims, outs, owner, idx):
        self.prog, self.arrays, self.dims, self.outs, self.owner, self.idx = prog, arrays, dims, outs, owner, idx
        self.bufs: dict[str, np.ndarray] = {}
        self.scas: dict[str, np.float32] = {}
        self.blocks: dict[str, tuple[int, int]] = {}
        self.loops: dict[str, tuple] = {}

    def val(self, a):
        kind, v = a
        if kind == "buf":
            return self.bufs[v]
        if kind == "sca":
            return self.scas[v]
        if kind == "dim":
            return F32(self.dims[v.glob][v.kind])
        return F32(v)

    def run(self, body):
        for s in body:
            getattr(self, type(s).__name__.lower())(s)

    def split(self, s: ir.Split):
        total = self.dims[s.total.glob][s.total.kind]
        per = round_up(-(-total // s.blocks), s.align)
        start = self.idx * per
        count = max(0, min(per, total - start))
        self.blocks[s.var] = (start, count)
        self.run(s.body)

    def tiles(self, s: ir.Tiles):
        start, count = self.blocks[s.block]
        for t in range(-(-count // s.size)):
            self.loops[s.var] = ("tile", start + t * s.size, min(s.size, count - t * s.size))
            self.run(s.body)

    def rows(self, s: ir.Rows):
        start, count = self.blocks[s.block]
        width = next(self.dims[x.total.glob]["cols"] for x in self.prog.body if isinstance(x, ir.Split))
        for r in range(count):
            self.loops[s.var] = ("row", start + r, width)
            self.run(s.body)

    def _span(self, glob: str, loop: str, line: str, verb: str) -> tuple[int, int]:
        d = self.dims[glob]
        lp = self.loops[loop]
        if lp[0] == "tile":
            off, n = lp[1], lp[2]
        else:
            if lp[1] >= d["rows"]:
                raise DSLError(f"{verb} row {lp[1]} of {glob}, which has {d['rows']} rows (block {self.idx})", line)
            off, n = row_offset(d, lp[1]), d["cols"]
        if off + n > d["numel"]:
            raise DSLError(f"{verb} {glob}[{off}:{off + n}] past its end ({d['numel']} elements; block {self.idx})",
                           line)
        return off, n

    def load(self, s: ir.Load):
        lp = self.loops[s.loop]
        if lp[0] == "row" and self.dims[s.glob]["cols"] != lp[2]:
            raise DSLError(f"rows of {s.glob} have {self.dims[s.glob]['cols']} elements, the rows of the split "
                           f"{lp[2]}: a k.rows loop loads rows of one length", s.line)
        off, n = self._span(s.glob, s.loop, s.line, "copy_in reads")
        self.bufs[s.dst] = self.arrays[s.glob].reshape(-1)[off:off + n].copy()

    def _write(self, glob: str, off: int, vals: np.ndarray, line: str) -> None:
        own = self.owner[glob][off:off + len(vals)]
        clash = np.flatnonzero((own >= 0) & (own != self.idx))
        if clash.size:
            raise DSLError(f"{glob}[{off + int(clash[0])}] is written by blocks {int(own[clash[0]])} and {self.idx}: "
                           "blocks run in parallel on the NPU, so this is a race", line)
        own[:] = self.idx
        self.outs[glob].reshape(-1)[off:off + len(vals)] = vals

    def store(self, s: ir.Store):
        off, _ = self._span(s.glob, s.loop, s.line, "copy_out writes")
        self._write(s.glob, off, self.bufs[s.src], s.line)

    def storescalar(self, s: ir.StoreScalar):
        d = self.dims[s.glob]
        idx = self.loops[s.loop][1] if s.loop else 0
        if idx >= d["numel"]:
            raise DSLError(f"k.store writes {s.glob}[{idx}] past its end ({d['numel']} elements; block {self.idx})",
                           s.line)
        dt = self.prog.glob(s.glob).dtype.np
        self._write(s.glob, idx, np.asarray([self.scas[s.src]], dtype=F32).astype(dt), s.line)

    def vec(self, s: ir.Vec):
        dt = s.dtype.np
        a = [self.val(x) for x in s.args]
        if len(a) == 2 and s.args[1][0] != "buf":  # vector-scalar ops: the scalar in the buffer's dtype
            a[1] = dt(a[1])
        with np.errstate(all="ignore"):
            r = _VEC[s.op](*a)
        self.bufs[s.dst] = np.asarray(r, dtype=dt)

    def cast(self, s: ir.Cast):
        with np.errstate(all="ignore"):  # overflow to inf is the defined result
            self.bufs[s.dst] = self.bufs[s.src].astype(s.dtype.np)  # numpy narrows to nearest even

    def reduce(self, s: ir.Reduce):
        src = self.bufs[s.src]
        x = src.astype(F32)
        if s.op == "sum":  # pairwise in float32, the result rounded to the buffer's dtype
            r = tree_sum(x)
        elif x.size == 0:
            raise DSLError(f"reduce_{s.op} of an empty buffer", s.line)
        else:
            r = x.max() if s.op == "max" else x.min()
        with np.errstate(all="ignore"):
            self.scas[s.dst] = F32(src.dtype.type(r))

    def sca(self, s: ir.Sca):
        a = [F32(self.val(x)) for x in s.args]
        with np.errstate(all="ignore"):
            self.scas[s.dst] = F32(_SCA[s.op](*a))

    def var(self, s: ir.Var):
        self.scas[s.dst] = F32(s.init)

    def update(self, s: ir.Update):
        with np.errstate(all="ignore"):
            self.scas[s.var] = F32(_SCA[s.op](self.scas[s.var], F32(self.val(s.src))))


_VEC = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "max": np.maximum, "min": np.minimum,
    "adds": np.add, "muls": np.multiply, "maxs": np.maximum, "mins": np.minimum,
    "exp": np.exp, "ln": np.log, "abs": np.abs, "sqrt": np.sqrt, "neg": np.negative,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)), "reciprocal": lambda x: x.dtype.type(1) / x,
}
_SCA = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "max": np.maximum,
    "min": np.minimum, "sqrt": np.sqrt, "exp": np.exp, "ln": np.log, "abs": np.abs, "neg": np.negative,
    "reciprocal": lambda x: F32(1) / x, "copy": lambda x: x,
}


def execute(prog: ir.Program, inputs: list) -> list[np.ndarray]:
    """Run ``prog`` on ``inputs`` (numpy arrays or CPU tensors, forward order); return the outputs.

    Args:
        prog: a traced program.
        inputs: one array per ``prog.inputs``, of its dtype (fp32 or fp16), any shape.

    Returns:
        One numpy array per output, shaped by its shape rule.

    Raises:
        DSLError: wrong input count or dtype, UB overflow, an access past a tensor, a race between blocks.
    """
    if len(inputs) != len(prog.inputs):
        raise DSLError(f"{prog.name} takes {len(prog.inputs)} inputs "
                       f"({', '.join(g.name for g in prog.inputs)}), got {len(inputs)}")
    arrays: dict[str, np.ndarray] = {}
    for g, x in zip(prog.inputs, inputs):
        a = x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)
        if a.dtype != g.dtype.np:
            raise DSLError(f"input {g.name} is {a.dtype}, the program declares {g.dtype.name}", g.line)
        arrays[g.name] = np.ascontiguousarray(a)
    dims = {g.name: view_dims(g, arrays[g.name]) for g in prog.inputs}
    shapes = {g.name: arrays[g.name].shape for g in prog.inputs}
    outs = {}
    for g in prog.outputs:
        outs[g.name] = np.full(output_shape(g, shapes), np.nan, dtype=g.dtype.np)
        dims[g.name] = view_dims(g, outs[g.name])
    check_ub(prog, dims)
    owner = {g.name: np.full(outs[g.name].size, -1, dtype=np.int64) for g in prog.outputs}
    split = next(s for s in prog.body if isinstance(s, ir.Split))
    for idx in range(split.blocks):
        _Block(prog, {**arrays, **outs}, dims, outs, owner, idx).run(prog.body)
    return [outs[g.name] for g in prog.outputs]
