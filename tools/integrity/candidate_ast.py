"""What the integrity checks read from a candidate's source: its imports' aliases, the kernels
that the real ``triton.jit`` decorates, and the parsed candidate the static checks share.

One home for the rule "is this a Triton kernel": ``_is_jit`` (by decorator name, for the
anti-degeneration counts) and ``triton_kernels`` (resolved through the imports, so a
home-made decorator named ``jit`` does not make a host helper pass for a kernel).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field


@dataclass
class CandidateAST:
    """A parsed candidate plus what the checks share: aliases, the audited scope, its kernels.

    Attributes:
        tree: the candidate module.
        source: its text.
        aliases: local name -> dotted path (imports and simple assignments).
        modelnew: ``ModelNew``'s class node, or None.
        scope: nodes audited as host code: ``ModelNew`` and what it reaches by name.
        kernels: ``@triton.jit`` (or autotune/heuristics) functions.
        reference_tree: the reference module when known (the precision check needs it).
    """

    tree: ast.Module
    source: str
    aliases: dict[str, str]
    modelnew: ast.ClassDef | None
    scope: list[ast.AST]
    kernels: list[ast.FunctionDef]
    reference_tree: ast.Module | None = None
    shape_names: set[str] = field(default_factory=set)
    init_nodes: set[int] = field(default_factory=set)

    def dotted(self, node: ast.expr) -> str | None:
        """Dotted name of an expression with aliases resolved (``F.relu`` -> ``torch.nn.functional.relu``)."""
        parts = []
        while True:
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str):
                parts.append(node.args[1].value)  # getattr(torch, "softmax") is torch.softmax
                node = node.args[0]
            else:
                break
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
            return ".".join(reversed(parts))
        return None

    def walk(self):
        """Every node of the audited host scope."""
        for root in self.scope:
            yield from ast.walk(root)

    def calls(self):
        """(call node, dotted name or None) for every call in the host scope."""
        for n in self.walk():
            if isinstance(n, ast.Call):
                yield n, self.dotted(n.func)


def _is_jit(fn: ast.AST) -> bool:
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for d in fn.decorator_list:
        text = ast.unparse(d.func if isinstance(d, ast.Call) else d)
        if text.split(".")[-1] in ("jit", "autotune", "heuristics"):
            return True
    return False


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path, from imports and simple ``name = dotted`` assignments."""
    out: dict[str, str] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom) and n.module:
            for a in n.names:
                out[a.asname or a.name] = f"{n.module}.{a.name}"
    probe = CandidateAST(tree, "", out, None, [], [])
    for _ in range(2):  # chains like f = F; g = f.softmax
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, (ast.Attribute, ast.Name, ast.Call)):
                name = probe.dotted(n.value)
                if name and name.split(".")[0] in ("torch", "triton", "time", "os", "builtins", "numpy"):
                    out[n.targets[0].id] = name
    return out


def triton_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    """Functions decorated with the real ``triton.jit`` (or ``triton.autotune``/``heuristics`` over it)."""
    alias = _aliases(tree)

    def resolves(d: ast.AST) -> bool:
        node = d.func if isinstance(d, ast.Call) else d
        text = ast.unparse(node)
        head, _, rest = text.partition(".")
        full = alias.get(head, head) + (f".{rest}" if rest else "")
        return full in ("triton.jit", "triton.runtime.jit.jit", "triton.autotune", "triton.heuristics")

    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(resolves(d) for d in n.decorator_list)]
