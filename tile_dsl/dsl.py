"""The tile DSL: write an Ascend vector kernel as a Python function over blocks and tiles.

A program is a function ``program(k)`` that receives a ``Kernel`` builder and describes one
kernel the way AscendC runs it: declare the global tensors (``k.input``, ``k.output``), split
a run-time total over a constant number of blocks (``k.split``), walk the block's share in
tiles with a tail (``k.tiles``) or row by row (``k.rows``), copy into on-chip buffers
(``k.copy_in``), compute with vector ops (operators ``+ - * /``, ``k.exp``...), reduce to
scalars (``k.reduce_sum``...), cast (``k.cast``), and copy out (``k.copy_out``, ``k.store``)::

    def program(k):
        x = k.input("x", "f32")
        y = k.output("y", "f32", shape="like:x")
        for blk in k.split(x.numel, blocks=8):
            for t in k.tiles(blk, 2048):
                k.copy_out(y, t, k.relu(k.copy_in(x, t)))

Calling the function traces it once into an ``ir.Program`` (``trace``). The loops are
Python ``for`` loops over one symbolic item, so their bodies are traced once. Errors are
``DSLError`` and name the program line (``file.py:LINE: message``).
"""

from __future__ import annotations

import os
import sys
import traceback
from contextlib import contextmanager

from tile_dsl import ir
from tile_dsl.rules import ALIGN_BYTES, MAX_BLOCKS

_HERE = os.path.abspath(__file__)

UNARY = ("exp", "ln", "abs", "sqrt", "relu", "neg", "reciprocal")
BINARY = ("add", "sub", "mul", "div", "max", "min")
SCALAR_UNARY = ("sqrt", "exp", "ln", "abs", "neg", "reciprocal")


class DSLError(Exception):
    """A program breaks a DSL or Ascend rule; ``line`` is ``file.py:LINE`` of the offending DSL call."""

    def __init__(self, message: str, line: str | None = None) -> None:
        self.line = line
        self.message = message
        super().__init__(f"{line}: {message}" if line else message)


def where() -> str:
    """``file:lineno`` of the innermost frame outside this module (the program line being traced)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename) == _HERE:
        f = f.f_back
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}" if f is not None else "?"


# ------------------------------------------------------------------ handles the program sees
class GlobalRef:
    """A global tensor; ``numel``, ``rows`` and ``cols`` are run-time sizes of its 2-D view."""

    def __init__(self, g: ir.Global) -> None:
        self.g = g

    @property
    def numel(self) -> ir.Dim:
        """Element count (run time)."""
        return ir.Dim(self.g.name, "numel")

    @property
    def rows(self) -> ir.Dim:
        """Rows of the view: ``numel // last`` rows, or the windows of a pooling view (run time)."""
        return ir.Dim(self.g.name, "rows")

    @property
    def cols(self) -> ir.Dim:
        """Row width: the last dimension, or the window of a pooling view."""
        return ir.Dim(self.g.name, "cols")


class BlockRef:
    """This block's share of a split (``unit`` is ``elements`` or ``rows``)."""

    def __init__(self, name: str, unit: str) -> None:
        self.name, self.unit = name, unit


class LoopRef:
    """The current tile (``kind="tiles"``, ``size`` elements) or row (``kind="rows"``)."""

    def __init__(self, name: str, kind: str, size: int | None, line: str) -> None:
        self.name, self.kind, self.size, self.line = name, kind, size, line


class Value:
    """Base of buffers and scalars: arithmetic operators emit DSL ops."""

    k: Kernel

    def __add__(self, o):
        return self.k._binary("add", self, o)

    def __radd__(self, o):
        return self.k._binary("add", o, self)

    def __sub__(self, o):
        return self.k._binary("sub", self, o)

    def __rsub__(self, o):
        return self.k._binary("sub", o, self)

    def __mul__(self, o):
        return self.k._binary("mul", self, o)

    def __rmul__(self, o):
        return self.k._binary("mul", o, self)

    def __truediv__(self, o):
        return self.k._binary("div", self, o)

    def __rtruediv__(self, o):
        return self.k._binary("div", o, self)

    def __neg__(self):
        return self.k._unary("neg", self)


class Buffer(Value):
    """A vector in the Unified Buffer, as long as its loop's tile or row."""

    def __init__(self, k: Kernel, name: str, dtype: ir.DType, loop: LoopRef) -> None:
        self.k, self.name, self.dtype, self.loop = k, name, dtype, loop


class Scalar(Value):
    """A float32 scalar (a reduction result, a size, an expression of them)."""

    def __init__(self, k: Kernel, name: str, scope: str | None) -> None:
        self.k, self.name, self.scope = k, name, scope


class VarRef(Scalar):
    """An accumulator: ``acc.add_(s)``, ``acc.max_(s)``, ``acc.min_(s)`` update it in place."""

    def add_(self, s) -> None:
        """``acc = acc + s``."""
        self.k._update(self, "add", s)

    def max_(self, s) -> None:
        """``acc = max(acc, s)``."""
        self.k._update(self, "max", s)

    def min_(self, s) -> None:
        """``acc = min(acc, s)``."""
        self.k._update(self, "min", s)


# ------------------------------------------------------------------ the builder
class Kernel:
    """The builder a program receives; its methods are the DSL."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.globals: list[ir.Global] = []
        self.body: list[ir.Stmt] = []
        self._stack = [self.body]
        self._active: list[object] = []  # BlockRef / LoopRef of the loops being traced
        self._n = 0
        self._split_seen = False

    # -------------------------------------------------------------- helpers
    def _fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def _emit(self, stmt: ir.Stmt) -> None:
        self._stack[-1].append(stmt)

    def _loop(self) -> LoopRef | None:
        return next((h for h in reversed(self._active) if isinstance(h, LoopRef)), None)

    def _scope(self) -> str | None:
        loop = self._loop()
        return loop.name if loop else None

    def _check_live(self, v: Value, line: str) -> None:
        names = {getattr(h, "name", None) for h in self._active}
        if isinstance(v, Buffer) and v.loop.name not in names:
            raise DSLError(f"buffer {v.name} belongs to the loop at {v.loop.line} and is used outside it", line)
        if isinstance(v, Scalar) and v.scope is not None and v.scope not in names:
            raise DSLError(f"scalar {v.name} was computed inside a loop and is used outside it", line)

    def _operand(self, v, line: str):
        if isinstance(v, Buffer):
            self._check_live(v, line)
            return ("buf", v.name)
        if isinstance(v, Scalar):
            self._check_live(v, line)
            return ("sca", v.name)
        if isinstance(v, ir.Dim):
            return ("dim", v)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return ("const", float(v))
        raise DSLError(f"operand of type {type(v).__name__} is not a buffer, scalar, size or number", line)

    def _new_buffer(self, dtype: ir.DType, loop: LoopRef, line: str, prefix: str = "b") -> Buffer:
        if loop.kind == "tiles" and (loop.size * dtype.nbytes) % ALIGN_BYTES:
            raise DSLError(f"a {dtype.name} tile of {loop.size} elements is {loop.size * dtype.nbytes} B, not a "
                           f"multiple of {ALIGN_BYTES} B (UB buffers and DataCopy are {ALIGN_BYTES}-byte aligned)",
                           line)
        return Buffer(self, self._fresh(prefix), dtype, loop)

    @staticmethod
    def _dtype(d, line: str) -> ir.DType:
        if isinstance(d, ir.DType):
            return d
        if d not in ir.DTYPES:
            raise DSLError(f"unknown dtype {d!r}; use one of {', '.join(ir.DTYPES)}", line)
        return ir.DTYPES[d]

    # -------------------------------------------------------------- globals
    def input(self, name: str, dtype: str, window: int | None = None) -> GlobalRef:
        """Declare the next forward argument, a tensor in GM, whose rows are its last dimension.

        Args:
            name: argument name.
            dtype: ``"f32"`` or ``"f16"``.
            window: pooling view (constant): rows are the windows of ``window`` elements along the
                last dimension, ``last // window`` per row, the remainder left out.
        """
        line = where()
        if self._split_seen or any(g.role == "out" for g in self.globals):
            raise DSLError("declare inputs first, then outputs, before k.split", line)
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
            raise DSLError(f"window must be a positive int, not {window!r}", line)
        return self._global(name, dtype, "in", window, "", line)

    def output(self, name: str, dtype: str, shape: str) -> GlobalRef:
        """Declare an output tensor, allocated by ``ModelNew`` with a shape rule.

        Args:
            name: output name.
            dtype: ``"f32"`` or ``"f16"``.
            shape: ``"like:X"``, ``"rows:X"`` (X's shape without its last dimension), ``"pool:X:K"``
                (X's last dimension divided by K) or ``"scalar"``; X is an input name.
        """
        line = where()
        if self._split_seen:
            raise DSLError("declare outputs before k.split", line)
        parts = shape.split(":")
        inputs = {g.name for g in self.globals if g.role == "in"}
        ok = (parts == ["scalar"] or (len(parts) == 2 and parts[0] in ("like", "rows") and parts[1] in inputs)
              or (len(parts) == 3 and parts[0] == "pool" and parts[1] in inputs and parts[2].isdigit()
                  and int(parts[2]) > 0))
        if not ok:
            raise DSLError(f"shape {shape!r}: use like:X, rows:X, pool:X:K or scalar with X one of "
                           f"{sorted(inputs) or 'the inputs (none declared yet)'}", line)
        return self._global(name, dtype, "out", None, shape, line)

    def _global(self, name, dtype, role, cols, shape, line) -> GlobalRef:
        if not isinstance(name, str) or not name.isidentifier():
            raise DSLError(f"tensor name {name!r} is not an identifier", line)
        if any(g.name == name for g in self.globals):
            raise DSLError(f"tensor {name!r} declared twice", line)
        g = ir.Global(name, self._dtype(dtype, line), role, cols, shape, line)
        self.globals.append(g)
        return GlobalRef(g)

    # -------------------------------------------------------------- loops
    @contextmanager
    def _open(self, stmt, handle):
        self._emit(stmt)
        self._stack.append(stmt.body)
        self._active.append(handle)
        try:
            yield handle
        finally:
            self._stack.pop()
            self._active.pop()

    def split(self, total: ir.Dim, blocks: int, align: int | None = None):
        """Divide ``total`` (``X.numel`` or ``X.rows``) over ``blocks`` blocks; iterate once per block.

        Each block gets ``per = ceil(total / blocks)`` units rounded up to ``align`` (default: 32 bytes
        of the narrowest dtype for elements, 1 for rows), the last ones fewer or none.

        Raises:
            DSLError: not top level, a second split, a bad total, or ``blocks`` outside ``[1, 65535]``.
        """
        line = where()
        if self._active or self._split_seen:
            raise DSLError("a program has exactly one k.split, at top level (the block loop of the kernel)", line)
        if not isinstance(total, ir.Dim) or total.kind not in ("numel", "rows"):
            raise DSLError("k.split divides X.numel or X.rows of a declared tensor", line)
        if not isinstance(blocks, int) or not 1 <= blocks <= MAX_BLOCKS:
            raise DSLError(f"blocks={blocks!r}: an Ascend kernel runs on 1 to {MAX_BLOCKS} blocks", line)
        unit = "elements" if total.kind == "numel" else "rows"
        if align is None:
            align = ALIGN_BYTES // min(g.dtype.nbytes for g in self.globals) if unit == "elements" else 1
        if not isinstance(align, int) or align < 1:
            raise DSLError(f"align must be a positive int, not {align!r}", line)
        self._split_seen = True
        handle = BlockRef(self._fresh("blk"), unit)
        with self._open(ir.Split(line, handle.name, total, blocks, align, unit), handle) as h:
            yield h

    def tiles(self, blk: BlockRef, size: int):
        """Walk the block's elements in tiles of ``size`` (constant); the last tile is the tail.

        Raises:
            DSLError: ``blk`` is not the current element split, or ``size`` is not a positive int.
        """
        line = where()
        self._inner_of(blk, "elements", line, "k.tiles")
        if not isinstance(size, int) or size < 1:
            raise DSLError(f"tile size must be a positive int, not {size!r}", line)
        handle = LoopRef(self._fresh("t"), "tiles", size, line)
        with self._open(ir.Tiles(line, handle.name, blk.name, size), handle) as h:
            yield h

    def rows(self, blk: BlockRef):
        """Walk the block's rows one at a time (each row whole in the UB)."""
        line = where()
        self._inner_of(blk, "rows", line, "k.rows")
        handle = LoopRef(self._fresh("r"), "rows", None, line)
        with self._open(ir.Rows(line, handle.name, blk.name), handle) as h:
            yield h

    def _inner_of(self, blk, unit: str, line: str, what: str) -> None:
        if not isinstance(blk, BlockRef) or not self._active or self._active[-1] is not blk:
            raise DSLError(f"{what} must be directly inside the k.split loop, over its block", line)
        if blk.unit != unit:
            raise DSLError(f"{what} walks {unit}, but the split is over {blk.unit} "
                           f"({'X.numel' if unit == 'elements' else 'X.rows'} needed)", line)

    def _cur(self, loop, line: str, what: str) -> LoopRef:
        if not isinstance(loop, LoopRef) or loop is not self._loop():
            raise DSLError(f"{what} takes the innermost k.tiles / k.rows loop variable", line)
        return loop

    # -------------------------------------------------------------- data movement
    def copy_in(self, x: GlobalRef, loop: LoopRef) -> Buffer:
        """Copy the current tile (or row) of input ``x`` from GM into a new UB buffer."""
        line = where()
        self._cur(loop, line, "k.copy_in")
        if not isinstance(x, GlobalRef) or x.g.role != "in":
            raise DSLError("k.copy_in reads a declared input", line)
        b = self._new_buffer(x.g.dtype, loop, line, "in_")
        self._emit(ir.Load(line, b.name, x.g.name, loop.name, x.g.dtype))
        return b

    def copy_out(self, y: GlobalRef, loop: LoopRef, buf: Buffer) -> None:
        """Copy ``buf`` to the current tile (or row) of output ``y`` in GM."""
        line = where()
        self._cur(loop, line, "k.copy_out")
        if not isinstance(y, GlobalRef) or y.g.role != "out":
            raise DSLError("k.copy_out writes a declared output", line)
        if not isinstance(buf, Buffer):
            raise DSLError("k.copy_out writes a buffer (use k.store for a scalar)", line)
        self._check_live(buf, line)
        if buf.loop is not loop:
            raise DSLError("k.copy_out: the buffer belongs to another loop", line)
        if buf.dtype != y.g.dtype:
            raise DSLError(f"k.copy_out of a {buf.dtype.name} buffer to {y.g.dtype.name} output {y.g.name}: "
                           "k.cast it first", line)
        self._emit(ir.Store(line, y.g.name, loop.name, buf.name))

    def store(self, y: GlobalRef, value, row: LoopRef | None = None) -> None:
        """Write scalar ``value`` to ``y[row]`` (``row``: the current k.rows variable) or to ``y[0]``."""
        line = where()
        if not isinstance(y, GlobalRef) or y.g.role != "out":
            raise DSLError("k.store writes a declared output", line)
        if row is not None:
            self._cur(row, line, "k.store")
            if row.kind != "rows":
                raise DSLError("k.store(y, s, row) needs a k.rows loop variable", line)
        if not isinstance(value, Scalar):
            raise DSLError("k.store writes a scalar (use k.copy_out for a buffer)", line)
        self._check_live(value, line)
        self._emit(ir.StoreScalar(line, y.g.name, row.name if row is not None else None, value.name))

    # -------------------------------------------------------------- compute
    def _unary(self, op: str, x) -> Value:
        line = where()
        if isinstance(x, Buffer):
            self._check_live(x, line)
            if op not in UNARY:
                raise DSLError(f"no vector op {op}", line)
            b = self._new_buffer(x.dtype, x.loop, line)
            self._emit(ir.Vec(line, b.name, op, [("buf", x.name)], x.dtype, x.loop.name))
            return b
        if isinstance(x, Scalar):
            self._check_live(x, line)
            if op not in SCALAR_UNARY:
                raise DSLError(f"no scalar op {op}", line)
            s = Scalar(self, self._fresh("s"), self._scope_of([x]))
            self._emit(ir.Sca(line, s.name, op, [("sca", x.name)]))
            return s
        raise DSLError(f"k.{op} takes a buffer or a scalar, not {type(x).__name__}", line)

    def _scope_of(self, vals) -> str | None:
        return self._scope()  # declared where it is computed (a C++ local of that loop body)

    def _binary(self, op: str, a, b) -> Value:
        line = where()
        bufs = [v for v in (a, b) if isinstance(v, Buffer)]
        if not bufs:  # scalar arithmetic
            oa, ob = self._operand(a, line), self._operand(b, line)
            if op not in BINARY:
                raise DSLError(f"no scalar op {op}", line)
            s = Scalar(self, self._fresh("s"), self._scope_of([a, b]))
            self._emit(ir.Sca(line, s.name, op, [oa, ob]))
            return s
        if len(bufs) == 2:
            if a.dtype != b.dtype:
                raise DSLError(f"{op} of a {a.dtype.name} and a {b.dtype.name} buffer: Ascend vector ops take one "
                               "dtype, k.cast one of them first", line)
            if a.loop is not b.loop:
                raise DSLError(f"{op} of buffers from different loops", line)
            oa, ob = self._operand(a, line), self._operand(b, line)
            return self._vec(op, [oa, ob], a, line)
        buf = bufs[0]
        other = b if a is buf else a
        if isinstance(other, ir.Dim):
            raise DSLError(f"{op} of a buffer and a size: make it a scalar first (e.g. k.scalar(x.cols))", line)
        oo = self._operand(other, line)
        self._operand(buf, line)
        if op == "div":
            if a is buf:
                raise DSLError("buffer / scalar: Ascend has no vector-scalar divide; multiply by the reciprocal "
                               "(a scalar: 1.0 / s) instead", line)
            if oo != ("const", 1.0):
                raise DSLError("scalar / buffer: only 1.0 / buffer (k.reciprocal) is a vector op", line)
            return self._vec("reciprocal", [("buf", buf.name)], buf, line)
        if op == "sub":
            if a is buf:  # x - s == x + (-s), exact
                if oo[0] == "const":
                    return self._vec("adds", [("buf", buf.name), ("const", -oo[1])], buf, line)
                neg = self._binary_scalar_neg(oo, line)
                return self._vec("adds", [("buf", buf.name), neg], buf, line)
            negb = self._vec("neg", [("buf", buf.name)], buf, line)  # s - x == (-x) + s, exact
            return self._vec("adds", [("buf", negb.name), oo], buf, line)
        return self._vec({"add": "adds", "mul": "muls", "max": "maxs", "min": "mins"}[op],
                         [("buf", buf.name), oo], buf, line)

    def _binary_scalar_neg(self, operand, line):
        s = Scalar(self, self._fresh("s"), self._scope())
        self._emit(ir.Sca(line, s.name, "neg", [operand]))
        return ("sca", s.name)

    def _vec(self, op: str, args: list, like: Buffer, line: str) -> Buffer:
        out = self._new_buffer(like.dtype, like.loop, line)
        self._emit(ir.Vec(line, out.name, op, args, like.dtype, like.loop.name))
        return out

    def exp(self, x):
        """Element-wise ``e**x`` (buffer or scalar)."""
        return self._unary("exp", x)

    def ln(self, x):
        """Element-wise natural log."""
        return self._unary("ln", x)

    def abs(self, x):
        """Element-wise absolute value."""
        return self._unary("abs", x)

    def sqrt(self, x):
        """Element-wise square root."""
        return self._unary("sqrt", x)

    def relu(self, x):
        """Element-wise ``max(x, 0)`` (buffer)."""
        return self._unary("relu", x)

    def reciprocal(self, x):
        """Element-wise ``1 / x``."""
        return self._unary("reciprocal", x)

    def max(self, a, b):
        """Element-wise maximum of two buffers, a buffer and a scalar or number, or two scalars."""
        return self._binary("max", a, b)

    def min(self, a, b):
        """Element-wise minimum (as ``max``)."""
        return self._binary("min", a, b)

    def cast(self, x: Buffer, dtype: str) -> Buffer:
        """Convert a buffer to ``dtype``; narrowing rounds to nearest even (AscendC ``CAST_RINT``)."""
        line = where()
        if not isinstance(x, Buffer):
            raise DSLError("k.cast takes a buffer", line)
        self._check_live(x, line)
        dt = self._dtype(dtype, line)
        b = self._new_buffer(dt, x.loop, line)
        self._emit(ir.Cast(line, b.name, x.name, dt, x.loop.name))
        return b

    def _reduce(self, op: str, x) -> Scalar:
        line = where()
        if not isinstance(x, Buffer):
            raise DSLError(f"k.reduce_{op} takes a buffer", line)
        self._check_live(x, line)
        s = Scalar(self, self._fresh("s"), x.loop.name)
        self._emit(ir.Reduce(line, s.name, op, x.name))
        return s

    def reduce_sum(self, x: Buffer) -> Scalar:
        """Sum of the buffer, pairwise in float32 (``executor.tree_sum``), rounded to the buffer's dtype."""
        return self._reduce("sum", x)

    def reduce_max(self, x: Buffer) -> Scalar:
        """Maximum of the buffer (float32 scalar)."""
        return self._reduce("max", x)

    def reduce_min(self, x: Buffer) -> Scalar:
        """Minimum of the buffer (float32 scalar)."""
        return self._reduce("min", x)

    def scalar(self, v) -> Scalar:
        """A float32 scalar from a number or a run-time size (``x.cols``, ``x.numel``...)."""
        line = where()
        s = Scalar(self, self._fresh("s"), self._scope())
        self._emit(ir.Sca(line, s.name, "copy", [self._operand(v, line)]))
        return s

    def var(self, init: float = 0.0) -> VarRef:
        """An accumulator (float32) that loops update with ``add_``, ``max_``, ``min_``."""
        line = where()
        if not isinstance(init, (int, float)):
            raise DSLError("k.var takes a number", line)
        v = VarRef(self, self._fresh("v"), self._scope())
        self._emit(ir.Var(line, v.name, float(init)))
        return v

    def _update(self, var: VarRef, op: str, s) -> None:
        line = where()
        self._check_live(var, line)
        if isinstance(s, Buffer):
            raise DSLError(f"acc.{op}_ takes a scalar, not a buffer (reduce it first)", line)
        self._emit(ir.Update(line, var.name, op, self._operand(s, line)))


def trace(program, name: str) -> ir.Program:
    """Trace ``program(k)`` into an IR program named ``name``.

    Raises:
        DSLError: a DSL or Ascend rule broken, or a Python error in the program (with its line).
    """
    k = Kernel(name)
    try:
        program(k)
    except DSLError:
        raise
    except Exception as e:  # noqa: BLE001 - a Python error in the program: name its line
        src = getattr(getattr(program, "__code__", None), "co_filename", None)
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == src] or \
            [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) != _HERE]
        line = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else None
        raise DSLError(f"{type(e).__name__}: {e}", line) from None
    if not k._split_seen:
        raise DSLError(f"program {name}: no k.split (a kernel splits its work over blocks)")
    written = {s.glob for s in ir.walk(k.body) if isinstance(s, (ir.Store, ir.StoreScalar))}
    for g in k.globals:
        if g.role == "out" and g.name not in written:
            raise DSLError(f"output {g.name} is never written", g.line)
    if not any(g.role == "in" for g in k.globals):
        raise DSLError(f"program {name}: no input declared")
    return ir.Program(name, k.globals, k.body)
