"""Minimal, position-exact edits of Python source located with ``ast``.

Edits replace the exact character span of an AST node (or insert whole lines), so the rest
of the candidate keeps its formatting and the diff stays minimal.
"""

from __future__ import annotations

import ast
import difflib


class SourceMap:
    """Map AST (line, utf-8 column) positions of one source to string offsets."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    def offset(self, lineno: int, col_utf8: int) -> int:
        """String offset of an AST position (1-based line, utf-8 byte column)."""
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        col = len(line.encode("utf-8")[:col_utf8].decode("utf-8", "replace"))
        return self.starts[lineno - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Start and end string offsets of a node."""
        return (self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))

    def text(self, node: ast.AST) -> str:
        """The exact source text of a node."""
        a, b = self.span(node)
        return self.source[a:b]

    def replace(self, node: ast.AST, new_text: str) -> str:
        """Return the source with ``node``'s span replaced by ``new_text``."""
        a, b = self.span(node)
        return self.source[:a] + new_text + self.source[b:]

    def indent_of(self, lineno: int) -> str:
        """Leading whitespace of a line."""
        line = self.lines[lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    def insert_lines_after(self, stmt: ast.stmt, lines: list[str]) -> str:
        """Insert lines (without indentation) after a statement, at its indentation."""
        ind = self.indent_of(stmt.lineno)
        at = self.starts[stmt.end_lineno]
        text = "".join(ind + ln + "\n" for ln in lines)
        prefix = self.source[:at]
        if not prefix.endswith("\n"):
            text = "\n" + text
        return prefix + text + self.source[at:]

    def insert_lines_before(self, stmt: ast.stmt, lines: list[str]) -> str:
        """Insert lines (without indentation) before a statement, at its indentation."""
        ind = self.indent_of(stmt.lineno)
        at = self.starts[stmt.lineno - 1]
        return self.source[:at] + "".join(ind + ln + "\n" for ln in lines) + self.source[at:]


def unified_diff(old: str, new: str, name: str = "candidate.py") -> str:
    """Unified diff between two versions of a file."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


def parses(source: str) -> bool:
    """True when the source is valid Python."""
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False
