"""Load repair patterns and rank them by the symptoms of a diagnosis.

Each pattern file (``kb/patterns/*.toml``) names a repair operator (``tools.operators``),
the symptoms it answers with weights, and text for people and LLMs (explanation, fix,
before/after example).
"""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache

PATTERN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "patterns")
REQUIRED = ("id", "title", "operator", "symptoms", "explanation", "fix")


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
        out.append(pat)
    return tuple(out)


def rank_patterns(symptoms: list[str], directory: str = PATTERN_DIR) -> list[tuple[float, dict]]:
    """Patterns ordered by ``prior + sum of the weights of matched symptoms``, best first.

    The score is a plain additive evidence count; ties keep file order.
    """
    scored = []
    for pat in load_patterns(directory):
        s = float(pat.get("prior", 0.5)) + sum(float(w) for k, w in pat["symptoms"].items() if k in symptoms)
        scored.append((s, pat))
    scored.sort(key=lambda t: -t[0])
    return scored
