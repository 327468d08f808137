"""Integrity checks suited to AscendC kernels (static, on the kernel's C++; tree-sitter C++ grammar).

The Python-level checks (``tools.integrity.static_checks``: torch compute in ``ModelNew``, caches,
monkey patching...) and the dynamic audit apply to AscendC candidates unchanged; these
add what only the C++ shows:

- ``cpp_shape_special_case``: the kernel compares a size (a scalar parameter, or a member
  set from one) with an integer literal of at least 16 (``if (total == 16000)``): code
  that works for the tested shapes only.
- ``cpp_precomputed_table``: a brace initialiser with at least 64 numeric literals in the
  kernel: a precomputed result copied out instead of computed.
- ``cpp_no_output``: no entry point's code writes global memory (no ``DataCopy``/
  ``DataCopyPad`` to a ``GlobalTensor``, no ``SetValue``): the outputs come from elsewhere.
"""

from __future__ import annotations

from tools.ascendc.backend import kernel_signatures_safe, kernel_sources
from tools.records import Finding

MIN_SIZE_LITERAL = 16
TABLE_LITERALS = 64


def _ints(text: str) -> int | None:
    try:
        return int(text.rstrip("uUlL"), 0)
    except ValueError:
        return None


def cpp_findings(source: str) -> list[Finding]:
    """Findings of the C++ checks on every AscendC kernel source of a candidate (empty for none)."""
    from tools.ascendc.operators import _global_types, _parser, _t, _walk
    out: list[Finding] = []
    for name, (text, start) in kernel_sources(source).items():
        root = _parser().parse(text.encode()).root_node
        sizes = {p for params in kernel_signatures_safe(text).values() for t, p in params if t != "ptr"}
        for n in _walk(root):  # members assigned from a size parameter count as sizes too
            if n.type == "assignment_expression":
                right = _t(n.child_by_field_name("right"))
                if right in sizes or any(right == f"this->{s}" for s in sizes):
                    left = _t(n.child_by_field_name("left"))
                    sizes.add(left.replace("this->", ""))
        for n in _walk(root):
            if n.type == "binary_expression" and _t(n.child_by_field_name("operator")) in ("==", "!="):
                a, b = n.child_by_field_name("left"), n.child_by_field_name("right")
                for x, y in ((a, b), (b, a)):
                    v = _ints(_t(y)) if y.type == "number_literal" else None
                    if v is not None and v >= MIN_SIZE_LITERAL and _t(x).replace("this->", "") in sizes:
                        out.append(Finding(check="cpp_shape_special_case", severity="error",
                                           message=f"line {start + n.start_point[0]}: kernel compares the size "
                                                   f"`{_t(x)}` with {_t(y)} (code for one tested shape)"))
            elif n.type == "initializer_list":
                lits = sum(1 for c in n.children if c.type == "number_literal" or
                           (c.type == "unary_expression" and c.children[-1].type == "number_literal"))
                if lits >= TABLE_LITERALS:
                    out.append(Finding(check="cpp_precomputed_table", severity="error",
                                       message=f"line {start + n.start_point[0]}: a table of {lits} literals in the "
                                               "kernel (a precomputed result)"))
        types = _global_types(root)
        writes = False
        for n in _walk(root):
            if n.type == "call_expression":
                fn = _t(n.child_by_field_name("function"))
                args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
                if fn in ("DataCopy", "DataCopyPad") and args:
                    base = _t(args[0]).split("[")[0].replace("this->", "")
                    writes |= base in types
                elif fn.endswith(".SetValue") and fn.split(".")[0].replace("this->", "") in types:
                    writes = True
        if not writes:
            out.append(Finding(check="cpp_no_output", severity="error",
                               message=f"line {start}: `{name}` never writes global memory "
                                       "(no DataCopy/DataCopyPad to a GlobalTensor, no SetValue)"))
    return out


def check_ascendc_kernel(c) -> Finding | None:
    """``tools.integrity.static_checks`` form: the first C++ finding of the candidate, or None."""
    found = cpp_findings(c.source)
    return found[0] if found else None
