"""Patcher: propose one minimal edit for the diagnosis.

The offline engine (``kb.engine.plan``) orders every single edit of the best candidate so
far: replays of learned repairs with matching symptoms, then the operators of the patterns
retrieved from the knowledge base, then generic mutations. The patcher screens them in
that order on the smallest failing input (many per sandboxed process) within the
evaluation budget. The first edit that passes there is proposed; if none does, the one
that lowers the error most, after a bounded pair search (``tools.repair.derived.pair_edits``: second
edits derived from the diagnosis on top of it). Before screening, a large failing variant is
shrunk (``tools.suite.minimise``) so every screen runs on the smallest input that still fails. ``--patcher`` picks the engine: ``patterns`` (this one), ``llm``
(``agents.llm_patcher``), or ``auto`` (this one until it is exhausted, then the LLM).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agents.common import emit, runner, settings, source_hash
from agents.llm_patcher import llm_patcher
from kb.engine import plan
from tools.phases import phase
from tools.records import EvalResult
from tools.repair.derived import pair_edits

if TYPE_CHECKING:
    from graph.state import State


def patcher(state: State) -> dict:
    """Dispatch to the repair engine that ``--patcher`` names (``auto``: patterns, then the LLM once exhausted).

    Reads ``options`` (``patcher``) and ``engine``, then what the engine reads. Writes what
    ``offline_patcher()`` or ``agents.llm_patcher.llm_patcher`` writes (with ``--patcher auto`` both
    updates merged: ``tried`` of both, ``evaluations``).
    """
    mode = settings(state).patcher
    if mode == "llm" or (mode == "auto" and state.get("engine") == "llm"):
        return llm_patcher(state)
    update = offline_patcher(state)
    if mode == "auto" and update.get("exhausted"):
        llm = llm_patcher({**state, **update, "tried": list(state.get("tried", [])) + update.get("tried", [])})
        llm["tried"] = update.get("tried", []) + llm.get("tried", [])
        llm["evaluations"] = update.get("evaluations", state.get("evaluations", 0))
        return llm
    return update


def offline_patcher(state: State) -> dict:
    """Choose the next patch with the offline engine (or None when no untried edit is left).

    Reads ``options``, ``triage``, ``iterations``, ``diagnosis``, ``best_source``, ``best_eval``, ``tried``,
    ``suite``, ``run_dir`` (and the runner's keys). Writes ``pending_patch`` (a ``tools.records.Patch`` dict
    with its screen result and KB figures, or None), ``tried``, ``evaluations``, and when nothing is left ``exhausted``
    and ``reason``.
    """
    s = settings(state)
    if (state.get("triage") or {}).get("status") == "timeout" and not state.get("iterations"):
        # Every screen of an edit of a hanging kernel would wait out its deadline; no operator fixes a hang.
        return {"pending_patch": None, "exhausted": True,
                "reason": "the candidate does not finish in time; no repair operator addresses a hang"}
    r = runner(state)
    diag: Mapping[str, Any] = state.get("diagnosis", {})
    with phase("planning"):
        engine = plan(state["best_source"], diag, _tensor_params(state), tried=set(state.get("tried", [])), key=source_hash)
    patches = engine.patches
    kb = {"patterns": engine.patterns, "learned": len(engine.learned), "retrieval_s": engine.retrieval_s}
    target = diag.get("smallest_failing") or r.smallest(r.ids("search"))
    base = EvalResult(**state["best_eval"])
    base_v = next((v for v in base.variants if v.variant_id == target), None)
    budget_left = max(0, s.max_evaluations - r.evaluations)
    target, base_v, shrunk = _minimised(r, state, target, base_v, budget_left)
    budget_left = max(0, s.max_evaluations - r.evaluations)
    base_score = (1, 0.0) if base_v is None else EvalResult(status=base_v.status, variants=[base_v],
                                                              backend=base.backend).score()
    if shrunk:
        kb["minimised"] = shrunk
    screened: list[str] = []
    best_partial = None
    for i in range(0, len(patches), s.screen_batch):
        if budget_left <= 0:
            break
        batch = patches[i: i + s.screen_batch]
        before = r.evaluations
        emit("patcher", f"screening edits {i + 1}-{i + len(batch)} of {len(patches)} on {target}",
             first=i + 1, last=i + len(batch), total=len(patches))
        with phase("screening"):
            results = r.screen([p.source for p in batch], [target])
        budget_left -= r.evaluations - before
        for p, res in zip(batch, results):
            screened.append(source_hash(p.source))
            if res.variants and all(v.status == "pass" for v in res.variants):
                chosen = {**p.model_dump(), "screen": {"variant": target, "status": "pass"}, "kb": kb}
                return {"pending_patch": chosen, "tried": screened, "evaluations": r.evaluations}
            if res.score() < base_score and (best_partial is None or res.score() < best_partial[0]):
                best_partial = (res.score(), p, res)
    if best_partial is not None and budget_left > 0:
        # a bounded pair search: second edits derived from the diagnosis on top of the best partial one
        pairs = [q for q in pair_edits(best_partial[1], diag, _tensor_params(state), limit=PAIR_LIMIT)
                 if source_hash(q.source) not in set(state.get("tried", [])) | set(screened)]
        if pairs:
            emit("patcher", f"screening {len(pairs)} pairs on top of the best partial edit on {target}")
            for q, res in zip(pairs, r.screen([q.source for q in pairs], [target])):
                screened.append(source_hash(q.source))
                if res.variants and all(v.status == "pass" for v in res.variants):
                    chosen = {**q.model_dump(), "screen": {"variant": target, "status": "pass", "pair": True}, "kb": kb}
                    return {"pending_patch": chosen, "tried": screened, "evaluations": r.evaluations}
                if res.score() < best_partial[0]:
                    best_partial = (res.score(), q, res)
    if best_partial is not None:
        _, p, res = best_partial
        chosen = {**p.model_dump(), "screen": {"variant": target, "status": res.status, "partial": True}, "kb": kb}
        return {"pending_patch": chosen, "tried": screened, "evaluations": r.evaluations}
    return {"pending_patch": None, "tried": screened, "evaluations": r.evaluations, "exhausted": True,
            "reason": f"no untried edit ({len(screened)} screened: learned, patterns, mutations) passes or improves "
                      f"{target}"}


#: Pairs screened on top of the best partial edit (one evaluation: they run in one process).
PAIR_LIMIT = 12
_MINIMISED: dict[tuple[str, str, str], tuple[str, object, dict]] = {}


def _minimised(r, state: Mapping[str, Any], target: str, base_v, budget_left: int):
    """Shrink the failing variant before screening (``tools.suite.minimise``), once per source and variant.

    Returns:
        ``(variant id, its VariantResult for the best source, record or None)``; the original
        target when it is small, passes, or nothing smaller fails.
    """
    from tools.suite.minimise import MAX_ROUNDS, MINIMISE_FROM, minimise

    size = {v["id"]: v.get("numel", 0) for v in r.variants}
    if base_v is None or base_v.status == "pass" or size.get(target, 0) < MINIMISE_FROM:
        return target, base_v, None
    key = (state["run_dir"], source_hash(state["best_source"]), target)
    if key not in _MINIMISED or _MINIMISED[key][0] not in r.ids():
        new, record, res = minimise(r, state["best_source"], target, min(MAX_ROUNDS, budget_left // 4),
                                    base_v.status)
        _MINIMISED[key] = (new, res, record)
    new, res, record = _MINIMISED[key]
    if new != target:
        emit("patcher", f"failing input minimised: {target} ({record['numel_from']} elements) -> {new} "
                        f"({record['numel_to']}) in {record['evaluations']} evaluations", **record)
    return new, (res if new != target else base_v), (record if new != target else None)


def _tensor_params(state: Mapping[str, Any]) -> list[str] | None:
    """Names of ModelNew.forward parameters that receive tensors in the default inputs."""
    import ast

    suite = state.get("suite") or []
    if not suite:
        return None
    dtypes = suite[0].get("dtypes", [])
    try:
        tree = ast.parse(state["best_source"])
    except SyntaxError:
        return None
    for n in ast.walk(tree):
        if isinstance(n, ast.ClassDef) and n.name == "ModelNew":
            for f in n.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    names = [a.arg for a in f.args.args[1:]]
                    return [nm for nm, dt in zip(names, dtypes) if dt not in ("int", "float", "bool", "NoneType")]
    return None
