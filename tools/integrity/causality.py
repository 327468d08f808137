"""Kernel causality, checked from the parent: do the outputs come from the candidate's kernels?

The parent rewrites the candidate's source so that every value its ``@triton.jit`` kernels
store (``tl.store``, ``tl.atomic_*``) is a poison constant, and runs that copy on the same
variants. If the outputs are still right, the kernels did not compute them (a torch or
host fallback, a kernel launched for show, a tensor subclass that computes its values
later). The rewrite happens here, outside the candidate's process; nothing the
candidate does at run time can switch the check off, and the candidate cannot tell a
poisoned run from a normal one except by the values its kernels store.

A kernel is found by resolving its decorator to ``triton.jit`` through the file's
imports (``tools.integrity.static_checks``'s alias table): a home-made decorator named ``jit`` is
not a kernel and its function is left alone (and the host allowlist flags it).
"""

from __future__ import annotations

import ast

from tools.integrity.candidate_ast import triton_kernels

#: Stored instead of every kernel value: ``value * 0 + POISON`` keeps the value's shape and
#: dtype. 7919 (a prime) is not a value a reference plausibly produces everywhere; NaN and
#: inf inputs stay NaN (NaN * 0), which no finite expected output matches either.
POISON = 7919
_STORES = {"store", "atomic_add", "atomic_xchg", "atomic_max", "atomic_min", "atomic_and", "atomic_or",
           "atomic_xor"}


class _Poison(ast.NodeTransformer):
    def __init__(self) -> None:
        self.count = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in _STORES and len(node.args) >= 2:
            v = node.args[1]
            node.args[1] = ast.BinOp(ast.BinOp(v, ast.Mult(), ast.Constant(0)), ast.Add(), ast.Constant(POISON))
            self.count += 1
        elif name in _STORES:
            for kw in node.keywords:
                if kw.arg in ("value", "val"):
                    kw.value = ast.BinOp(ast.BinOp(kw.value, ast.Mult(), ast.Constant(0)), ast.Add(),
                                         ast.Constant(POISON))
                    self.count += 1
        return node


def poison_kernels(source: str) -> tuple[str, int] | None:
    """The source with every store of every Triton kernel writing ``POISON``; and how many stores.

    Returns:
        ``(new source, stores rewritten)``; None when the source does not parse or has no kernel.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    kernels = triton_kernels(tree)
    if not kernels:
        return None
    t = _Poison()
    for k in kernels:
        t.visit(k)
    return ast.unparse(ast.fix_missing_locations(tree)), t.count
