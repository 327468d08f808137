"""Load repair patterns and rank them by the symptoms of a diagnosis.

Each pattern file (``kb/patterns/*.toml``) names its repair operators (``tools.repair.operators``
or ``tools.repair.mutations``, with parameters; none for a fix only an LLM can make), the
categories of kernels it concerns, the symptoms it answers with weights, and text for
people and LLMs (explanation, fix, before/after example). ``kb.store`` indexes them for
search by meaning; ``rank_patterns`` is the symptom-only ranking the store adds to.
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache

PATTERN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patterns")
REQUIRED = ("id", "title", "categories", "symptoms", "explanation", "fix", "before", "after")


class PatternError(Exception):
    """A pattern file is malformed (message names the file)."""


@lru_cache(maxsize=4)
def load_patterns(directory: str = PATTERN_DIR) -> tuple[dict, ...]:
    """All patterns in ``directory``, sorted by id.

    Raises:
        PatternError: a file is not TOML or lacks a required key.
    """
    out = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".toml"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as f:
                pat = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise PatternError(f"{path}: invalid TOML: {e}") from None
        missing = [k for k in REQUIRED if k not in pat]
        if missing:
            raise PatternError(f"{path}: missing {', '.join(missing)}")
        out.append(_normalise(pat, path))
    return tuple(out)


def _normalise(pat: dict, path: str) -> dict:
    """Give every pattern ``operators``: a list of ``{"id", "params"}`` (``operator = "x"`` is short for one)."""
    ops = pat.get("operators")
    if ops is None:
        ops = [{"id": pat["operator"]}] if pat.get("operator") else []
    if not isinstance(ops, list) or not all(isinstance(o, dict) and isinstance(o.get("id"), str) for o in ops):
        raise PatternError(f"{path}: operators must be a list of {{ id = \"...\", params = {{...}} }} tables")
    pat["operators"] = [{"id": o["id"], "params": dict(o.get("params") or {})} for o in ops]
    pat["operator"] = ops[0]["id"] if ops else None
    return pat


def symptom_score(pat: dict, symptoms: list[str]) -> float:
    """``prior + sum of the weights of the pattern's symptoms present``; unknown names weigh nothing."""
    return float(pat.get("prior", 0.5)) + sum(float(w) for k, w in pat["symptoms"].items() if k in symptoms)


def rank_patterns(symptoms: list[str], directory: str = PATTERN_DIR) -> list[tuple[float, dict]]:
    """Patterns ordered by ``prior + sum of the weights of matched symptoms``, best first.

    The score is a plain additive evidence count; ties keep file order.
    """
    scored = [(symptom_score(pat, symptoms), pat) for pat in load_patterns(directory)]
    scored.sort(key=lambda t: -t[0])
    return scored
