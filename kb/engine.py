"""The offline repair engine's plan: which edits to screen, in what order.

Order: (1) replays of learned repairs whose symptoms match the diagnosis (``kb.learn``),
(1b) edits derived from the diagnosis' relations (``tools.repair.derived``: a factor in scope, a
missing row offset, a literal stride, a clamp, a zero-divisor guard), (2) the operators of
the retrieved patterns, in the store's ranking, each with the pattern's parameters, (2b)
derived edits no relation points to, (3) every generic mutation (``tools.repair.mutations``) not
proposed yet.
The patcher screens the plan in batches within its evaluation budget; nothing here runs
a candidate.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kb.retrieve import rank_patterns
from kb.store import Hit, KBStore, StoreError, open_store, query_text
from tools.phases import phase
from tools.records import Patch
from tools.repair.derived import derive
from tools.repair.mutations import MUTATIONS, mutate
from tools.repair.operators import OPERATORS, Context, analyse, matches

SUSPICIOUS_BOOST = 3.0  # a defect idiom in the code outweighs any single symptom (weights run 0.3-5)
NOT_APPLICABLE = 1.0
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


def _proposals(ctx: Context, op: str, params: dict | None) -> list[Patch]:
    if op in OPERATORS:
        return [p for p in OPERATORS[op](ctx) if matches(p, params)]
    if op in MUTATIONS:
        return [p for p in MUTATIONS[op](ctx) if matches(p, params)]
    return []  # an operator this version does not have (an old learned entry): nothing to replay


def retrieve(diagnosis: dict, categories: list[str], store: KBStore | None = None) -> tuple[list[dict], list[Hit], bool]:
    """Learned entries and scored pattern hits for a diagnosis, from ``store`` (or the default store).

    Uses the dense path when the diagnosis has text (summary or findings). Falls back to
    the symptom-only ranking of the pattern files when no store can be opened.

    Returns:
        ``(learned, hits, dense)``.
    """
    symptoms = list(diagnosis.get("symptoms", []))
    text = query_text(symptoms, diagnosis.get("summary", ""), diagnosis.get("findings")) \
        if (diagnosis.get("summary") or diagnosis.get("findings")) else ""
    own = store is None
    try:
        store = store or open_store()
    except StoreError:
        return [], [Hit(s, p, s, None) for s, p in rank_patterns(symptoms)], False
    try:
        learned = store.learned(symptoms, categories)
        hits = store.search(text, symptoms, categories, limit=1000)
    finally:
        if own:
            store.close()
    return learned, hits, bool(text)


def rank(source: str, diagnosis: dict, tensor_params: list[str] | None = None, store: KBStore | None = None
         ) -> tuple[list[dict], list[tuple[float, dict, list[Patch]]], bool]:
    """Learned entries, and patterns scored by retrieval plus what their operators find in the candidate.

    A pattern gains ``SUSPICIOUS_BOOST`` when one of its operators edits a site that is
    itself a defect idiom (``Patch.suspicious``), and loses ``NOT_APPLICABLE`` when none of
    its idiom-aware operators finds anything to edit (generic mutations apply anywhere and
    prove nothing; LLM-only patterns keep their score).

    Returns:
        ``(learned, [(score, pattern, patches)], dense)``, best pattern first.

    Raises:
        SyntaxError: the source does not parse.
    """
    with phase("retrieval"):
        learned, hits, dense = retrieve(diagnosis, infer_categories(source), store)
    ctx = analyse(source, tensor_params)
    memo: dict[str, list[Patch]] = {}  # each operator runs once; patterns filter its patches by their params
    out = []
    for h in hits:
        for o in h.pattern["operators"]:
            if o["id"] not in memo:
                memo[o["id"]] = _proposals(ctx, o["id"], None)
        patches = [p for o in h.pattern["operators"] for p in memo[o["id"]] if matches(p, o.get("params"))]
        adj = SUSPICIOUS_BOOST if any(p.suspicious for p in patches) else 0.0
        specific = [o for o in h.pattern["operators"] if o["id"] not in MUTATIONS]  # mutations apply anywhere
        if specific and not any(p.operator not in MUTATIONS for p in patches):
            adj -= NOT_APPLICABLE
        from tools.repair.ascend_operators import family_boost
        adj += family_boost(h.pattern, diagnosis)  # patterns of the target family that failed (Ascend) first
        out.append((h.score + adj, h.pattern, patches))
    out.sort(key=lambda t: (-t[0], t[1]["id"]))
    return learned, out, dense


def plan(source: str, diagnosis: Mapping[str, Any], tensor_params: list[str] | None = None, store: KBStore | None = None,
         tried: set[str] | None = None, key=lambda s: s) -> Plan:
    """All edits of the best candidate so far, learned replays first, then patterns, then mutations.

    Args:
        source: the candidate to edit.
        diagnosis: ``tools.diagnosis.diagnostics.diagnose`` output (symptoms, summary, findings).
        tensor_params: ``ModelNew.forward`` parameters that are tensors.
        store: an open ``KBStore`` (default: open the default one for this call).
        tried: keys (``key(patch.source)``) of sources already screened; they are left out.
        key: maps a patched source to its key in ``tried``.

    Raises:
        SyntaxError: the source does not parse.
    """
    t0 = time.perf_counter()
    learned, ranked, dense = rank(source, diagnosis, tensor_params, store)
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

    ctx = analyse(source, tensor_params)
    from tools.repair.ascend_operators import ascend_plan
    add(ascend_plan(ctx, diagnosis))  # an Ascend compile finding: its operators, sized by the compiler's figures
    for e in learned:  # the exact edit that repaired a run with these symptoms
        add(_proposals(ctx, e["operator"], e.get("params")))
    add(derive(source, diagnosis, tensor_params))  # edits that would explain the localised relation
    for _, _, patches in ranked:
        add(patches)
    add(derive(source, diagnosis, tensor_params, blind=True))
    add(mutate(source, None, tensor_params))
    return Plan(out, [p["id"] for _, p, _ in ranked[:5]], learned, infer_categories(source), round(secs, 3), dense)
