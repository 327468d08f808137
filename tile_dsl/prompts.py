"""Prompts of the generation agent: the DSL's description, the exemplars, the retry message.

Templates only; ``tile_dsl.agent`` fills them. The exemplars are the team's programs
(``tile_dsl.exemplars``), one per category, each shown with its reference's ``forward``.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from tile_dsl import exemplars

SYSTEM = """You write Ascend NPU vector kernels in a small tile DSL embedded in Python. Answer with one
```python block defining `def program(k):` and nothing else in the block. The DSL:

- `x = k.input(name, "f32"|"f16", window=None)`: the next forward argument (declare all, in order);
  its rows are its last dimension (`x.numel`, `x.rows`, `x.cols` are run-time sizes); `window=K` makes
  the rows the windows of K along the last dimension (pooling).
- `y = k.output(name, dtype, shape="like:x"|"rows:x"|"pool:x:K"|"scalar")`: an output, allocated for you.
- `for blk in k.split(x.numel or x.rows, blocks=B):` exactly once, at top level (1 <= B <= 65535);
  the body runs once per block. Full reductions to one value use blocks=1 (no atomics).
- inside it `for t in k.tiles(blk, SIZE):` (elements; the tail tile is handled) or `for r in k.rows(blk):`.
- `b = k.copy_in(x, t)`; `k.copy_out(y, t, b)`; `k.store(y, scalar, row=r)` or `k.store(y, scalar)`.
- vector ops on buffers of one dtype: `+ - *`, `a / b` (buffers), `k.exp k.ln k.abs k.sqrt k.relu
  k.reciprocal k.max k.min`, `k.cast(b, "f32")`; a buffer with a scalar or number: `+ - * k.max k.min`
  (no buffer / scalar: multiply by `1.0 / s`).
- `s = k.reduce_sum(b)` / `k.reduce_max` / `k.reduce_min`: float32 scalars; scalar arithmetic
  `+ - * /`, `k.sqrt(s)`, `k.scalar(x.cols)`; accumulators `acc = k.var(0.0)`, `acc.add_(s)`.

Ascend rules, checked: tile bytes a multiple of 32; all buffers (loaded and stored ones count twice:
double buffering) within the 192 KB Unified Buffer; no two blocks write the same output element."""

EXEMPLAR = """Category {category}. Reference:
```python
{forward}
```
DSL program:
```python
{program}
```"""

USER = """Write the DSL program for this reference (a KernelBench task; get_inputs gives the shapes):
```python
{reference}
```"""

RETRY = """The DSL executor rejected your program:
{error}
Fix it and answer with the whole corrected program in one ```python block."""


def _forward_of(reference: str) -> str:
    tree = ast.parse(reference)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            fwd = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
            if fwd is not None:
                return textwrap.dedent(ast.get_source_segment(reference, fwd, padded=True) or "")
    return reference


def exemplar_messages() -> list[str]:
    """One exemplar text per category: the first exemplar of each, by name."""
    seen, out = set(), []
    for name in exemplars.names():
        m = exemplars.load(name)
        if m.CATEGORY in seen:
            continue
        seen.add(m.CATEGORY)
        out.append(EXEMPLAR.format(category=m.CATEGORY, forward=_forward_of(m.REFERENCE),
                                   program=inspect.getsource(m.program).rstrip()))
    return out


def first_messages(reference: str) -> list[tuple[str, str]]:
    """The opening chat: the DSL description with the exemplars, then the task."""
    return [("system", SYSTEM + "\n\nExamples:\n\n" + "\n\n".join(exemplar_messages())),
            ("user", USER.format(reference=reference.strip()))]
