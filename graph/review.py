"""Terminal side of ``--review``: show a patch the graph paused on and read the reviewer's decision.

The graph side is ``agents.review``: the hardware runner interrupts with the patch as
payload; the CLI resumes it with ``Command(resume=ask(payload, ...))``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from typing import TextIO

from rich.console import Console
from rich.syntax import Syntax

from tools.repair.source_edit import parses

PROMPT = "[bold]apply this patch?[/bold] \\[a]ccept / \\[r]eject / \\[e]dit: "


class NoAnswer(Exception):
    """stdin closed before the reviewer answered."""


def _line(console: Console, stdin: TextIO, prompt: str) -> str:
    console.print(prompt, end="")
    line = stdin.readline()
    if not line:
        raise NoAnswer
    return line.strip()


def _edited_source(console: Console, stdin: TextIO, source: str) -> str | None:
    """The reviewer's version of ``source``: from ``$EDITOR`` on a temp copy, else from a file path read on stdin."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="nearmiss-review-", delete=False) as f:
            f.write(source)
        try:
            subprocess.run([*shlex.split(editor), f.name], check=False)
            with open(f.name) as g:
                return g.read()
        finally:
            os.unlink(f.name)
    path = _line(console, stdin, "file with the edited candidate (empty: back): ")
    if not path:
        return None
    try:
        with open(os.path.expanduser(path)) as g:
            return g.read()
    except OSError as e:
        console.print(f"[red]cannot read {path}: {e.strerror}[/red]")
        return None


def ask(payload: dict, console: Console, stdin: TextIO) -> dict:
    """Show the patch of a ``review_patch`` interrupt and read accept / reject / edit.

    Args:
        payload: the interrupt value (``operator``, ``description``, ``line``, ``diff``, ``source``).
        console: where the diff and the prompts go (stderr, so ``--json`` keeps stdout clean).
        stdin: where answers come from, one per line.

    Returns:
        ``{"action": "accept"}``, ``{"action": "reject"}`` or ``{"action": "edit", "source": str}``.

    Raises:
        NoAnswer: stdin closed before a usable answer.
    """
    console.rule(f"review: attempt {payload.get('attempt')} — {payload.get('operator')}")
    console.print(str(payload.get("description")), markup=False)
    if payload.get("error"):
        console.print(f"[red]{payload['error']}[/red]")
    console.print(Syntax(payload.get("diff") or "(empty diff)", "diff", theme="ansi_dark"))
    while True:
        answer = _line(console, stdin, PROMPT).lower()
        if answer in ("a", "accept", "y", "yes"):
            return {"action": "accept"}
        if answer in ("r", "reject", "n", "no"):
            return {"action": "reject"}
        if answer in ("e", "edit"):
            source = _edited_source(console, stdin, payload.get("source", ""))
            if source is not None and parses(source):
                return {"action": "edit", "source": source}
            if source is not None:
                console.print("[red]the edited candidate does not parse; answer again[/red]")
            continue
        console.print("answer a, r or e")
