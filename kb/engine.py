"""The offline repair engine's plan: which edits to screen, in what order.

Order: (1) replays of learned repairs whose symptoms match the diagnosis (``kb.learn``),
(2) the operators of the retrieved patterns, in the store's ranking, each with the
pattern's parameters, (3) every generic mutation (``tools.mutations``) not proposed yet.
The patcher screens the plan in batches within its evaluation budget; nothing here runs
a candidate.
"""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field

from kb.retrieve import rank_patterns
from kb.store import KBStore, StoreError, open_store, query_text
from tools.mutations import MUTATIONS, mutate
from tools.operators import OPERATORS, matches, propose
from tools.records import Patch

#: Triton calls that mark a kernel category (a boost for patterns of that category, never a filter).
CATEGORY_CALLS = {
    "dot": "matmul", "cumsum": "scan", "associative_scan": "scan", "cumprod": "scan", "sqrt": "normalization",
    "rsqrt": "normalization", "exp": "softmax", "exp2": "softmax", "log": "loss", "tanh": "activation",
    "sigmoid": "activation", "erf": "activation", "cos": "rope", "sin": "rope", "atomic_add": "reduction",
}


@dataclass
class Plan:
    """Edits to screen in order, and how retrieval produced them."""

    patches: list[Patch]
    patterns: list[str] = field(default_factory=list)
    learned: list[dict] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    retrieval_s: float = 0.0
    dense: bool = False
    note: str = ""


def infer_categories(source: str) -> list[str]:
    """Kernel categories suggested by the ``tl.*`` calls of a candidate (``CATEGORY_CALLS``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                and n.func.value.id in ("tl", "libdevice") and n.func.attr in CATEGORY_CALLS:
            c = CATEGORY_CALLS[n.func.attr]
            if c not in out:
                out.append(c)
    return out


def _proposals(source: str, op: str, params: dict | None, tensor_params: list[str] | None) -> list[Patch]:
    if op in OPERATORS:
        return propose(source, [(op, params)], tensor_params)
    if op in MUTATIONS:
        return [p for p in mutate(source, [op], tensor_params) if matches(p, params)]
    return []  # an operator this version does not have (an old learned entry): nothing to replay


def retrieve(diagnosis: dict, categories: list[str], store: KBStore | None = None) -> tuple[list[dict], list[dict], bool]:
    """Learned entries and ranked patterns for a diagnosis, from ``store`` (or the default store).

    Uses the dense path when the diagnosis has text (summary or findings). Falls back to
    the symptom-only ranking of the pattern files when no store can be opened.

    Returns:
        ``(learned, patterns, dense)``.
    """
    symptoms = list(diagnosis.get("symptoms", []))
    text = query_text(symptoms, diagnosis.get("summary", ""), diagnosis.get("findings")) \
        if (diagnosis.get("summary") or diagnosis.get("findings")) else ""
    own = store is None
    try:
        store = store or open_store()
    except StoreError:
        return [], [p for _, p in rank_patterns(symptoms)], False
    try:
        learned = store.learned(symptoms, categories)
        hits = store.search(text, symptoms, categories, limit=1000)
    finally:
        if own:
            store.close()
    return learned, [h.pattern for h in hits], bool(text)


def plan(source: str, diagnosis: dict, tensor_params: list[str] | None = None, store: KBStore | None = None,
         tried: set[str] | None = None, key=lambda s: s) -> Plan:
    """All edits of the best candidate so far, learned replays first, then patterns, then mutations.

    Args:
        source: the candidate to edit.
        diagnosis: ``tools.diagnostics.diagnose`` output (symptoms, summary, findings).
        tensor_params: ``ModelNew.forward`` parameters that are tensors.
        store: an open ``KBStore`` (default: open the default one for this call).
        tried: keys (``key(patch.source)``) of sources already screened; they are left out.
        key: maps a patched source to its key in ``tried``.

    Raises:
        SyntaxError: the source does not parse.
    """
    t0 = time.perf_counter()
    categories = infer_categories(source)
    learned, patterns, dense = retrieve(diagnosis, categories, store)
    secs = time.perf_counter() - t0
    tried = tried or set()
    seen: set[str] = set()
    out: list[Patch] = []

    def add(patches: list[Patch]) -> None:
        for p in patches:
            k = key(p.source)
            if k not in seen and k not in tried:
                seen.add(k)
                out.append(p)

    for e in learned:  # the exact edit that repaired a run with these symptoms
        add(_proposals(source, e["operator"], e.get("params"), tensor_params))
    for pat in patterns:
        for o in pat["operators"]:
            add(_proposals(source, o["id"], o.get("params"), tensor_params))
    add(mutate(source, None, tensor_params))
    return Plan(out, [p["id"] for p in patterns[:5]], learned, categories, round(secs, 3), dense)
