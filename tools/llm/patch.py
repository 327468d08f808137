"""The LLM patcher's prompt and answer: assemble the context, parse and validate what comes back.

The prompt holds the candidate with line numbers, the reference, the diagnosis (symptoms,
summary, smallest failing variant, findings), the best-ranked repair patterns, and earlier
attempts with their outcomes. An answer is either SEARCH/REPLACE edits
(``tools.llm.search_replace``; a whole file in one python block as last resort) or a probe
request (a JSON object ``{"probe": {...}}``, fields of ``tools.diagnosis.probes.ProbeRequest``).
Validation happens before anything runs: the edits must apply exactly, the result must
parse, still define ``ModelNew`` and differ from the candidate.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from string import Template
from typing import Any

from pydantic import ValidationError

from tools.diagnosis.probes import ProbeRequest
from tools.llm.search_replace import EditError, apply_blocks, parse_blocks, whole_file
from tools.records import Patch
from tools.repair.source_edit import unified_diff

_JSON = re.compile(r"```json[ \t]*\n(.*?)```", re.S)


class AnswerError(Exception):
    """The answer holds no usable edit or probe (the message is fed back to the model)."""


@dataclass
class Answer:
    """A validated answer: ``patch`` (a ``tools.records.Patch`` dict) or ``probe`` (a ``ProbeRequest`` dict)."""

    kind: str
    patch: dict | None = None
    probe: dict | None = None


def number_lines(source: str) -> str:
    """The source with 1-based, right-aligned line numbers (``  12 | text``)."""
    lines = source.splitlines()
    w = len(str(len(lines)))
    return "\n".join(f"{i:>{w}} | {ln}" for i, ln in enumerate(lines, 1))


def describe_diagnosis(diagnosis: Mapping[str, Any]) -> str:
    """Markdown lines for a diagnosis dict (``tools.diagnosis.diagnostics.diagnose``)."""
    out = [f"- summary: {diagnosis.get('summary') or 'none'}",
           f"- symptoms: {', '.join(diagnosis.get('symptoms', [])) or 'none'}",
           f"- smallest failing input: {diagnosis.get('smallest_failing') or 'none'}"]
    fc = diagnosis.get("fault_class") or {}
    if fc.get("name") and fc.get("name") != "unknown":
        out.append(f"- likely fault class: {fc['name']}: {fc.get('reading', '')}")
    out += [f"- localisation: {x.get('name')}: {x.get('detail', '')}" for x in diagnosis.get("localisation", [])[:6]]
    out += [f"- {f}" for f in diagnosis.get("findings", [])[:12]]
    probes = diagnosis.get("probes") or {}
    for site in (probes.get("sites") or [])[:20]:
        vals = ", ".join(f"{k} {site[k]:.4g}" for k in ("min", "max") if isinstance(site.get(k), (int, float)))
        out.append(f"- probe {site.get('kernel')} line {site.get('line')} `{site.get('name')}` over "
                   f"{site.get('programs')} programs: {vals or 'no numeric value'}"
                   + (f", {site['nan']} NaN" if site.get("nan") else ""))
    return "\n".join(out)


def describe_patterns(patterns: list[dict], limit: int = 3) -> str:
    """Markdown for the best-ranked KB patterns: title, explanation, fix."""
    if not patterns:
        return "none"
    parts = []
    for p in patterns[:limit]:
        parts.append(f"### {p.get('title', p.get('id'))}\n{str(p.get('explanation', '')).strip()}\n"
                     f"Fix: {str(p.get('fix', '')).strip()}")
    return "\n\n".join(parts)


def describe_attempts(attempts: list[dict]) -> str:
    """One line per earlier attempt or rejected answer: what it did and what came of it."""
    if not attempts:
        return "none"
    return "\n".join(f"- {a.get('what', '')}: {a.get('outcome', '')}" for a in attempts)


def patch_messages(system: Template, user: Template, *, candidate: str, reference: str, diagnosis: Mapping[str, Any],
                   patterns: list[dict], attempts: list[dict], feedback: list[str]) -> list[tuple[str, str]]:
    """Chat messages asking for one edit of ``candidate``.

    Args:
        system, user: the templates ``patch_system`` and ``patch_user`` (``agents/prompts``).
        candidate: the best candidate so far (the edit applies to it).
        reference: the reference source.
        diagnosis: the latest diagnosis.
        patterns: ranked KB pattern dicts (best first).
        attempts: ``{"what", "outcome"}`` records of earlier attempts.
        feedback: errors of this patcher turn's earlier answers, to be corrected.
    """
    fb = ""
    if feedback:
        fb = "\n## Your previous answer was rejected\n\n" + "\n".join(f"- {f}" for f in feedback) + \
             "\n\nAnswer again, following the format exactly.\n"
    return [("system", system.substitute()),
            ("user", user.substitute(reference=reference.rstrip(), candidate=number_lines(candidate),
                                     diagnosis=describe_diagnosis(diagnosis), patterns=describe_patterns(patterns),
                                     attempts=describe_attempts(attempts), feedback=fb))]


def parse_answer(text: str, source: str) -> Answer:
    """Validate an answer against the candidate it edits.

    Raises:
        AnswerError: no block and no probe; a block that does not apply; a result that does not
            parse, lacks ``ModelNew``, or equals the candidate; a malformed probe.
    """
    blocks = parse_blocks(text)
    if blocks:
        try:
            new = apply_blocks(source, blocks)
        except EditError as e:
            raise AnswerError(str(e)) from None
        how = f"{len(blocks)} SEARCH/REPLACE block" + ("s" if len(blocks) > 1 else "")
    else:
        probe = _probe(text)
        if probe is not None:
            return Answer(kind="probe", probe=probe)
        new = whole_file(text)
        if new is None:
            raise AnswerError("the answer holds no SEARCH/REPLACE block, no probe request and no whole file "
                              "defining ModelNew")
        how = "whole file"
    try:
        ast.parse(new)
    except SyntaxError as e:
        raise AnswerError(f"the edited candidate does not parse: line {e.lineno}: {e.msg}") from None
    if "ModelNew" not in new:
        raise AnswerError("the edited candidate no longer defines ModelNew")
    if new == source:
        raise AnswerError("the edit changes nothing")
    diff = unified_diff(source, new)
    return Answer(kind="patch", patch=Patch(operator="llm", description=_description(text, how),
                                            line=_first_changed_line(source, new), source=new,
                                            diff=diff).model_dump())


def _probe(text: str) -> dict | None:
    """The probe request in ``text`` (a ```json block, or the whole answer as JSON), or None."""
    for raw in [m.group(1) for m in _JSON.finditer(text)] + [text.strip()]:
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and "probe" in obj:
            try:
                return ProbeRequest.model_validate(obj["probe"]).model_dump()
            except ValidationError as e:
                raise AnswerError(f"malformed probe request: {e.errors()[0]['msg']}") from None
    return None


def _description(text: str, how: str) -> str:
    """The answer's first prose line (before any block), or what kind of edit it is."""
    for ln in text.splitlines():
        s = ln.strip()
        if s.startswith(("<<<<<<<", "```")):
            break
        if s:
            return f"{s[:160]} ({how})"
    return f"LLM edit ({how})"


def _first_changed_line(old: str, new: str) -> int:
    a, b = old.splitlines(), new.splitlines()
    return next((i + 1 for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)) + 1)


def regenerate_messages(system: Template, user: Template, *, reference: str, error: str) -> list[tuple[str, str]]:
    """Chat messages asking for a fresh ``ModelNew`` (the regenerate baseline), given an earlier error summary."""
    return [("system", system.substitute()),
            ("user", user.substitute(reference=reference.rstrip(), error=error or "unknown"))]
