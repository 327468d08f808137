"""The tile DSL's intermediate representation: what a traced program is, for the executor and the lowering.

A program is a tree of statements. ``Split`` divides a symbolic total (elements or rows
of a global tensor) over a constant number of blocks; inside it, ``Tiles`` walks the
block's elements in tiles of a constant size with a shorter tail tile, and ``Rows`` walks
the block's rows one at a time. Buffers (values in the on-chip Unified Buffer) and scalars
are named SSA values; accumulators (``Var``) are the only mutable values. Every statement
carries the program line that created it, for error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class DType:
    """A DSL dtype: its numpy type, size in bytes, and names in AscendC, the op registry and torch."""

    name: str
    np: type
    nbytes: int
    cpp: str
    ge: str
    json: str
    torch: str


F32 = DType("f32", np.float32, 4, "float", "ge::DT_FLOAT", "float", "torch.float32")
F16 = DType("f16", np.float16, 2, "half", "ge::DT_FLOAT16", "float16", "torch.float16")
DTYPES = {"f32": F32, "f16": F16}


@dataclass(frozen=True)
class Dim:
    """A size known only at run time: ``numel``, ``rows`` or ``cols`` of a global tensor's row view."""

    glob: str
    kind: str

    def __str__(self) -> str:
        return f"{self.glob}.{self.kind}"


@dataclass
class Global:
    """A kernel argument in global memory (GM).

    Attributes:
        name: argument name (also the forward argument name for inputs).
        dtype: element type.
        role: ``in`` or ``out``.
        window: pooling view: rows are the ``last // window`` windows of ``window`` elements along the
            last dimension (a remainder shorter than a window is left out, as ``nn.MaxPool1d``
            does); None: rows are the last dimension.
        shape: output shape rule: ``like:X`` (shape of input X), ``rows:X`` (X's shape without its
            last dimension), ``pool:X:K`` (X's last dimension divided by K) or ``scalar`` (shape ``()``).
        line: where it was declared.
    """

    name: str
    dtype: DType
    role: str
    window: int | None
    shape: str
    line: str


@dataclass
class Stmt:
    """Base of all statements; ``line`` is ``file:lineno`` of the DSL call."""

    line: str


@dataclass
class Split(Stmt):
    """``for blk in k.split(total, blocks)``: block ``i`` gets ``[i*per, i*per+count)`` of ``total``.

    ``per = ceil(ceil(total / blocks) / align) * align``; ``count = clamp(total - i*per, 0, per)``.
    """

    var: str
    total: Dim
    blocks: int
    align: int
    unit: str  # "elements" or "rows"
    body: list = field(default_factory=list)


@dataclass
class Tiles(Stmt):
    """``for t in k.tiles(blk, size)``: tiles of ``size`` elements, the last one ``count % size`` long."""

    var: str
    block: str
    size: int
    body: list = field(default_factory=list)


@dataclass
class Rows(Stmt):
    """``for r in k.rows(blk)``: one row of the blocks' rows at a time (whole row in the UB)."""

    var: str
    block: str
    body: list = field(default_factory=list)


@dataclass
class Load(Stmt):
    """``dst = k.copy_in(glob, loop)``: GM -> UB copy of the tile or row."""

    dst: str
    glob: str
    loop: str
    dtype: DType


@dataclass
class Store(Stmt):
    """``k.copy_out(glob, loop, src)``: UB -> GM copy of the tile or row."""

    glob: str
    loop: str
    src: str


@dataclass
class StoreScalar(Stmt):
    """``k.store(glob, loop_or_None, scalar)``: one element: ``glob[row]`` in a rows loop, else ``glob[0]``."""

    glob: str
    loop: str | None
    src: str


@dataclass
class Vec(Stmt):
    """Element-wise vector op ``dst = op(args)``; args are ``("buf", name)``, ``("sca", name)`` or ``("const", v)``."""

    dst: str
    op: str
    args: list
    dtype: DType
    loop: str


@dataclass
class Cast(Stmt):
    """``dst = k.cast(src, dtype)``: round to nearest even when narrowing (AscendC ``RoundMode::CAST_RINT``)."""

    dst: str
    src: str
    dtype: DType
    loop: str


@dataclass
class Reduce(Stmt):
    """``dst = k.reduce_<op>(src)``: rounded to the buffer's dtype, widened to f32; sums are pairwise (``executor.tree_sum``)."""

    dst: str
    op: str
    src: str


@dataclass
class Sca(Stmt):
    """Scalar arithmetic in float32: ``dst = op(args)``; args as in ``Vec`` plus ``("dim", Dim)``."""

    dst: str
    op: str
    args: list


@dataclass
class Var(Stmt):
    """An accumulator ``dst = k.var(init)``, float32, updated in loops by ``Update``."""

    dst: str
    init: float


@dataclass
class Update(Stmt):
    """``var.add_(s)`` / ``var.max_(s)`` / ``var.min_(s)``: ``var = op(var, s)`` in float32."""

    var: str
    op: str
    src: tuple


@dataclass
class Program:
    """A traced program: its globals (inputs in forward order, then outputs) and statements."""

    name: str
    globals: list[Global]
    body: list[Stmt]

    @property
    def inputs(self) -> list[Global]:
        """Input globals in forward-argument order."""
        return [g for g in self.globals if g.role == "in"]

    @property
    def outputs(self) -> list[Global]:
        """Output globals in declaration order."""
        return [g for g in self.globals if g.role == "out"]

    def glob(self, name: str) -> Global:
        """The global named ``name``."""
        return next(g for g in self.globals if g.name == name)


def walk(body: list[Stmt]):
    """Every statement of ``body``, depth first, loops before their bodies."""
    for s in body:
        yield s
        if isinstance(s, (Split, Tiles, Rows)):
            yield from walk(s.body)
