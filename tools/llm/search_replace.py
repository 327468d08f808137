"""SEARCH/REPLACE edit blocks (ARCHITECTURE §8): parse them from an answer and apply them exactly.

A block is::

    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

Blocks hold whole lines (the newline before ``=======`` belongs to SEARCH) and apply in order,
each to the result of the previous one; each SEARCH text must occur
exactly once in the source it applies to (an ambiguous or absent SEARCH is an error, never
a guess). As a last resort an answer may hold a whole file in one fenced python block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BLOCK = re.compile(r"^<{5,9} ?SEARCH[^\n]*\n(.*?)^={5,9}[ \t]*\n(.*?)^>{5,9} ?REPLACE[^\n]*$", re.M | re.S)
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


class EditError(Exception):
    """An edit block cannot be applied (the message says which block and why)."""


@dataclass(frozen=True)
class Block:
    """One SEARCH/REPLACE edit: exact old text and its replacement (both may span lines)."""

    search: str
    replace: str


def parse_blocks(text: str) -> list[Block]:
    """All SEARCH/REPLACE blocks in ``text``, in order (empty when there are none)."""
    return [Block(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]


def apply_blocks(source: str, blocks: list[Block]) -> str:
    """Apply blocks in order to ``source``.

    Raises:
        EditError: a SEARCH is empty, absent, or occurs more than once.
    """
    out = source
    for i, b in enumerate(blocks, 1):
        if not b.search.strip():
            raise EditError(f"block {i}: the SEARCH part is empty")
        n = out.count(b.search)
        if n == 0:
            raise EditError(f"block {i}: the SEARCH text does not occur in the candidate (it must match the "
                            f"current lines exactly, indentation included): {_first_line(b.search)!r}")
        if n > 1:
            raise EditError(f"block {i}: the SEARCH text occurs {n} times; include more lines so that it matches "
                            f"once: {_first_line(b.search)!r}")
        out = out.replace(b.search, b.replace, 1)
    return out


def whole_file(text: str, must_define: str = "class ModelNew") -> str | None:
    """The last fenced python block of ``text`` that defines ``must_define``, or None."""
    files = [m.group(1) for m in _FENCE.finditer(text) if must_define in m.group(1)]
    return files[-1] if files else None


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:120]
