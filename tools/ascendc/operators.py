"""Repair operators for AscendC candidates: single edits of the kernel's C++, found with tree-sitter.

Each operator reads the candidate's kernel sources (``backend.kernel_sources``), parses each
with tree-sitter's C++ grammar, and proposes whole-candidate ``Patch``es: the C++ text edited
at byte ranges of the syntax tree, put back in place of the original text in the Python
source. Operators propose; the patcher screens (nothing here runs a candidate).

Operators (ids are what ``kb/patterns/ascendc_*.toml`` name):
    ascendc_ceil_div     ``A / B`` (integer tiling) -> ``(A + B - 1) / B``
    ascendc_datacopy_pad ``DataCopy(dst, src, n)`` between GM and UB -> ``DataCopyPad`` with a byte length
    ascendc_reduce_init  a running max/min initialised to 0 -> -INFINITY / INFINITY
    ascendc_queue_count  ``InitBuffer(q, N, len)`` -> ``N + 1`` buffers; ``TQue<pos, D>`` -> depth ``D + 1``
    ascendc_block_offset a block's global offset scaled by a length the source names
    ascendc_acc_fp32     a reduced-precision compute/accumulator template argument -> ``float``
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Iterator

from tools.ascendc.backend import kernel_sources
from tools.records import Patch

_PARSER = None
LENGTH_NAME = re.compile(r"(len|length|cols|col|dim|size|width|num|count|stride|per)", re.I)
LOW = ("half", "bfloat16_t", "bfloat16")


def _parser():
    global _PARSER
    if _PARSER is None:
        import tree_sitter_cpp
        from tree_sitter import Language, Parser
        _PARSER = Parser(Language(tree_sitter_cpp.language()))
    return _PARSER


def _walk(node) -> Iterator:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _t(node) -> str:
    return node.text.decode()


class CppEdit:
    """One edit of a kernel source: byte-range replacements, a description and its parameters."""

    def __init__(self, edits: list[tuple[int, int, str]], desc: str, at: int, params: dict, suspicious: bool):
        self.edits, self.desc, self.at, self.params, self.suspicious = edits, desc, at, params, suspicious

    def apply(self, code: bytes) -> str:
        """The C++ text with every edit applied (spans in bytes of ``code``)."""
        for s, e, new in sorted(self.edits, key=lambda x: -x[0]):
            code = code[:s] + new.encode() + code[e:]
        return code.decode()


CppOperator = Callable[[object, bytes], list[CppEdit]]


# ---------------------------------------------------------------------------------- operators
def _is_ceil_already(left) -> bool:
    t = re.sub(r"\s+", "", _t(left))
    return t.endswith("-1)") or t.endswith("-1") or "+" in t and "-1" in t


def op_ceil_div(root, code: bytes) -> list[CppEdit]:
    """Integer ``A / B`` whose divisor is a name (a tile or block count) -> ``(A + B - 1) / B``.

    Suspicious when the quotient is assigned to a count or length (``tileNum``, ``perBlock``...):
    the tiling idiom whose floor drops the remainder (Ascend C samples compute the tile count
    this way and handle the tail separately).
    """
    out = []
    for n in _walk(root):
        if n.type != "binary_expression" or _t(n.child_by_field_name("operator")) != "/":
            continue
        a, b = n.child_by_field_name("left"), n.child_by_field_name("right")
        if b.type not in ("identifier", "field_expression", "qualified_identifier", "call_expression"):
            continue
        if "sizeof" in _t(b) or _is_ceil_already(a) or re.search(r"\d\.\d|\df\b|float|double", _t(a)):
            continue
        parent = n.parent
        target = ""
        while parent is not None and parent.type not in ("assignment_expression", "init_declarator"):
            parent = parent.parent if parent.type in ("parenthesized_expression", "binary_expression") else None
        if parent is not None:
            target = _t(parent.children[0])
        new = f"({_t(a)} + {_t(b)} - 1) / {_t(b)}"
        out.append(CppEdit([(n.start_byte, n.end_byte, new)], f"ceil-divide `{_t(n)}` -> `{new}`",
                           n.start_point[0] + 1, {"expr": _t(n)}, bool(LENGTH_NAME.search(target))))
    return out


def _global_types(root) -> dict[str, str]:
    """Names declared as ``GlobalTensor<T>`` -> T (members and locals)."""
    out = {}
    for n in _walk(root):
        if n.type in ("field_declaration", "declaration"):
            ty = n.child_by_field_name("type")
            if ty is not None and ty.type == "template_type" and _t(ty).startswith("GlobalTensor"):
                arg = ty.child_by_field_name("arguments")
                t = _t(arg)[1:-1].strip()
                for c in n.children:
                    if c.type in ("field_identifier", "identifier"):
                        out[_t(c)] = t
                    elif c.type == "init_declarator":
                        out[_t(c.children[0])] = t
    return out


def _base_name(node) -> str:
    while node.type in ("subscript_expression", "field_expression", "parenthesized_expression"):
        if node.type == "field_expression":
            node = node.child_by_field_name("field")
            break
        node = node.children[0] if node.type != "subscript_expression" else node.child_by_field_name("argument")
    return _t(node)


def op_datacopy_pad(root, code: bytes) -> list[CppEdit]:
    """Every GM<->UB ``DataCopy(dst, src, count)`` -> ``DataCopyPad`` with ``count * sizeof(T)`` bytes.

    ``DataCopy`` moves whole 32-byte blocks; ``DataCopyPad`` takes any byte length (Ascend C
    API reference, "DataCopy", "DataCopyPad"). One patch edits all the copies (a tail needs
    each of them), then one patch per copy.
    """
    types = _global_types(root)
    edits = []
    for n in _walk(root):
        if n.type != "call_expression" or _t(n.child_by_field_name("function")) != "DataCopy":
            continue
        args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
        if len(args) != 3 or "Params" in _t(args[2]):
            continue
        d, s = _base_name(args[0]), _base_name(args[1])
        if d in types:
            new = f"DataCopyPad({_t(args[0])}, {_t(args[1])}, DataCopyExtParams(1, ({_t(args[2])}) * sizeof({types[d]}), 0, 0, 0))"
        elif s in types:
            new = f"DataCopyPad({_t(args[0])}, {_t(args[1])}, DataCopyExtParams(1, ({_t(args[2])}) * sizeof({types[s]}), 0, 0, 0))"
        else:
            continue
        edits.append((n, new))
    out = []
    if edits:
        out.append(CppEdit([(n.start_byte, n.end_byte, new) for n, new in edits],
                           f"{len(edits)} DataCopy call(s) -> DataCopyPad with byte lengths", edits[0][0].start_point[0] + 1,
                           {"sites": "all"}, True))
    if len(edits) > 1:
        for n, new in edits:
            out.append(CppEdit([(n.start_byte, n.end_byte, new)], f"`{_t(n)}` -> DataCopyPad", n.start_point[0] + 1,
                               {"sites": _t(n)}, False))
    return out


def op_reduce_init(root, code: bytes) -> list[CppEdit]:
    """A scalar or ``Duplicate`` initial value of 0 for a running max/min -> the reduction's identity.

    A running maximum must start at -inf (a minimum at +inf): 0 is wrong whenever every value
    is negative (log-probabilities, a shifted input). Scalars: a float variable initialised
    to a zero literal and compared with ``>``/``<`` later. Tensors: ``Duplicate(t, 0, n)``
    of a tensor later passed to ``Max``/``Min`` as destination.
    """
    out = []
    body = code.decode()
    for n in _walk(root):
        if n.type == "init_declarator":
            val = n.child_by_field_name("value")
            name = _t(n.child_by_field_name("declarator"))
            if val is None or not re.fullmatch(r"\(?\s*(\(\w+\))?\s*0(\.0*)?f?\s*\)?", _t(val)) or not re.fullmatch(r"\w+", name):
                continue
            decl = n.parent
            ty = decl.child_by_field_name("type") if decl is not None else None
            if ty is None or _t(ty) not in ("float", "half", "double", "T", "ACC", "bfloat16_t"):
                continue
            cmp_max = re.search(rf"(>\s*{name}\b|\b{name}\s*<)(?!=)", body)
            cmp_min = re.search(rf"(<\s*{name}\b|\b{name}\s*>)(?!=)", body)
            for ident, hit in (("-INFINITY", cmp_max), ("INFINITY", cmp_min)):
                if hit:
                    out.append(CppEdit([(val.start_byte, val.end_byte, ident)], f"initial value of `{name}`: 0 -> {ident}",
                                       n.start_point[0] + 1, {"var": name, "init": ident}, True))
        elif n.type == "call_expression" and _t(n.child_by_field_name("function")) == "Duplicate":
            args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
            if len(args) == 3 and re.fullmatch(r"(\(\w+\))?\s*0(\.0*)?f?", _t(args[1]).strip()):
                t = _t(args[0])
                for fn, ident in (("Max", "-INFINITY"), ("Min", "INFINITY")):
                    if re.search(rf"\b{fn}\s*\(\s*{re.escape(t)}\s*,", body):
                        out.append(CppEdit([(args[1].start_byte, args[1].end_byte, ident)],
                                           f"Duplicate initial value of `{t}` for {fn}: 0 -> {ident}",
                                           n.start_point[0] + 1, {"var": t, "init": ident}, True))
    return out


def op_queue_count(root, code: bytes) -> list[CppEdit]:
    """One more buffer in a queue's ``InitBuffer(q, N, len)``, or one more depth in ``TQue<pos, D>``.

    ``AllocTensor`` with every buffer taken waits forever on the device, and ``EnQue`` past the
    depth fails (Ascend C API reference, "TQue", "AllocTensor"): the emulator reports both.
    """
    out = []
    for n in _walk(root):
        if n.type == "call_expression" and _t(n.child_by_field_name("function")).endswith("InitBuffer"):
            args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
            if len(args) == 3:
                new = str(int(_t(args[1])) + 1) if _t(args[1]).isdigit() else f"{_t(args[1])} + 1"
                out.append(CppEdit([(args[1].start_byte, args[1].end_byte, new)],
                                   f"InitBuffer({_t(args[0])}): {_t(args[1])} -> {new} buffers", n.start_point[0] + 1,
                                   {"queue": _t(args[0])}, False))
        elif n.type == "template_type" and _t(n.child_by_field_name("name")) == "TQue":
            args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
            if len(args) == 2:
                new = str(int(_t(args[1])) + 1) if _t(args[1]).isdigit() else f"{_t(args[1])} + 1"
                out.append(CppEdit([(args[1].start_byte, args[1].end_byte, new)], f"`{_t(n)}`: depth {_t(args[1])} -> {new}",
                                   n.start_point[0] + 1, {"depth": _t(n)}, False))
    return out


def op_block_offset(root, code: bytes) -> list[CppEdit]:
    """Global buffer offsets ``p + E`` in ``SetGlobalBuffer`` -> ``p + E * L`` for each length-like name L.

    For a block offset counted in rows where the buffer is in elements: the offset must be
    scaled by a row length. L ranges over the length-like members and parameters of the
    source (``cols``, ``rowLen``...) not already in E; every ``SetGlobalBuffer`` with the same
    offset E is edited together (the inputs and outputs of a block share it).
    """
    names = set()
    for n in _walk(root):
        if n.type == "field_identifier" and n.parent is not None and n.parent.type == "field_declaration":
            names.add(_t(n))
        elif n.type == "parameter_declaration":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                names.add(_t(d))
    names = sorted(nm for nm in names if LENGTH_NAME.search(nm) and not nm.isupper())
    groups: dict[str, list] = {}
    for n in _walk(root):
        if n.type != "call_expression" or not _t(n.child_by_field_name("function")).endswith("SetGlobalBuffer"):
            continue
        args = [c for c in n.child_by_field_name("arguments").children if c.is_named]
        if not args or args[0].type != "binary_expression" or _t(args[0].child_by_field_name("operator")) != "+":
            continue
        off = args[0].child_by_field_name("right")
        groups.setdefault(_t(off), []).append(off)
    out = []
    text = code.decode()
    for expr, offs in groups.items():
        used = {_t(x) for o in offs[:1] for x in _walk(o)}
        for nm in names:
            if nm in used:
                continue
            ref = f"this->{nm}" if re.search(rf"this->{nm}\b", text) else nm
            new = f"({expr}) * {ref}"
            out.append(CppEdit([(o.start_byte, o.end_byte, new) for o in offs], f"global offset `{expr}` -> `{new}`",
                               offs[0].start_point[0] + 1, {"scale": nm}, False))
    return out


def op_acc_fp32(root, code: bytes) -> list[CppEdit]:
    """A reduced-precision type as a later template argument (the compute/accumulator type) -> ``float``.

    ``Kernel<half, half>`` computes in half: sums lose precision and overflow at 65504. The
    vector unit computes in fp32 after a ``Cast`` (Ascend C API reference, "Cast"); with
    ``Kernel<half, float>`` the kernel casts in and out.
    """
    out = []
    for n in _walk(root):
        if n.type != "template_argument_list":
            continue
        args = [c for c in n.children if c.is_named]
        for a in args[1:]:
            if _t(a) in LOW:
                out.append(CppEdit([(a.start_byte, a.end_byte, "float")], f"compute type `{_t(n)}`: {_t(a)} -> float",
                                   n.start_point[0] + 1, {"template": _t(n)}, True))
    return out


CPP_OPERATORS: dict[str, CppOperator] = {
    "ascendc_ceil_div": op_ceil_div,
    "ascendc_datacopy_pad": op_datacopy_pad,
    "ascendc_reduce_init": op_reduce_init,
    "ascendc_queue_count": op_queue_count,
    "ascendc_block_offset": op_block_offset,
    "ascendc_acc_fp32": op_acc_fp32,
}


def editable_sources(source: str) -> dict[str, tuple[str, int]]:
    """The C++ the operators edit: the kernel sources, plus a MultiKernelBench project's host tiling code."""
    from tools.ascendc.mkb import mkb_parts
    out = dict(kernel_sources(source))
    for name, (text, line) in mkb_parts(source).items():
        if name in ("host_operator_src", "host_tiling_src"):
            out[name] = (text, line)
    return out


def propose(source: str, op_id: str) -> list[Patch]:
    """Patches of a Python candidate from one C++ operator (empty for a candidate without AscendC code)."""
    op = CPP_OPERATORS[op_id]
    out = []
    for _, (text, start_line) in editable_sources(source).items():
        if source.count(text) != 1:  # only verbatim (raw) strings can be edited in place
            continue
        code = text.encode()
        root = _parser().parse(code).root_node
        for e in op(root, code):
            new_text = e.apply(code)
            new_source = source.replace(text, new_text)
            diff = "".join(difflib.unified_diff(source.splitlines(True), new_source.splitlines(True), n=0))
            out.append(Patch(operator=op_id, description=e.desc, line=start_line + e.at - 1, source=new_source,
                             diff=diff[:2000], params=e.params, suspicious=e.suspicious))
    return out


def _as_operator(op_id: str):
    def run(ctx) -> list[Patch]:
        return propose(ctx.source, op_id)
    run.__name__ = f"op_{op_id}"
    run.__doc__ = CPP_OPERATORS[op_id].__doc__
    return run


#: The operators in ``tools.repair.operators.OPERATORS`` form (``f(Context) -> list[Patch]``).
ASCENDC_OPERATORS = {k: _as_operator(k) for k in CPP_OPERATORS}
