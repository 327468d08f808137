"""Suite inputs for AscendC candidates: the size constants of the kernel's C++.

The suite moves each size of the reference just past the candidate's constants
(``tools.suite.variants.candidate_boundaries``). For a Triton candidate those are Python integers;
an AscendC candidate keeps its tile lengths in the C++ text (``constexpr uint32_t
TILE_LEN = 1024``), so they are read from there: integer literals of the kernel sources,
found with tree-sitter's C++ grammar, from 16 to 2**20 (the same range as the Python ones).
"""

from __future__ import annotations

LOW, HIGH = 16, 1 << 20


def cpp_constants(candidate_source: str) -> list[int]:
    """Integer literals (16..2**20) of the candidate's AscendC kernel sources, sorted; [] for none."""
    from tools.ascendc.operators import _parser, _t, _walk, editable_sources
    srcs = editable_sources(candidate_source)  # kernels, and a MultiKernelBench project's host tiling code
    if not srcs:
        return []
    found = set()
    for text, _ in srcs.values():
        for n in _walk(_parser().parse(text.encode()).root_node):
            if n.type == "number_literal":
                lit = _t(n).rstrip("uUlL")
                try:
                    v = int(lit, 0)
                except ValueError:
                    continue
                if LOW <= v <= HIGH:
                    found.add(v)
    return sorted(found)
