"""The convergence judge's guards on synthetic states (no sandbox, no run folder): each decision and its reason."""

from agents.common import source_hash
from agents.convergence_judge import convergence_judge
from tools.records import EvalResult, TensorError, VariantResult

ORIGINAL = "class ModelNew: pass  # original\n"


def evaluation(failing: int, err: float = 0.5) -> dict:
    """A search-suite evaluation with ``failing`` mismatching variants (of 4) of max abs error ``err``."""
    vs = [VariantResult(variant_id=f"v{i}", status="mismatch" if i < failing else "pass",
                        errors=[TensorError(output_index=0, shape=[8], dtype="float32", ok=i >= failing,
                                            max_abs_err=err if i < failing else 0.0)]) for i in range(4)]
    return EvalResult(status="mismatch" if failing else "pass", variants=vs, backend="interpreter").model_dump()


def state(best_failing: int, new_failing: int, new_source: str = "class ModelNew: pass  # edit\n", **extra) -> dict:
    s = {"candidate_source": ORIGINAL, "best_source": ORIGINAL, "best_eval": evaluation(best_failing),
         "triage": {"status": "mismatch"}, "iterations": 1, "evaluations": 3, "options": {}, "attempts": [],
         "pending_patch": {"operator": "llm", "description": "edit", "line": 1, "source": new_source, "diff": ""},
         "last_eval": evaluation(new_failing), "last_source": new_source}
    s.update(extra)
    return s


def test_improvement_is_kept_and_rediagnosed():
    u = convergence_judge(state(3, 1))
    assert u["route"] == "retry_plan" and u["since_best"] == 0 and "improves" in u["reason"]
    assert u["best_source"].endswith("# edit\n")
    assert u["decisions"] == [{"n": 1, "route": "retry_plan", "reason": u["reason"]}]


def test_regression_reverts_to_the_best_so_far():
    u = convergence_judge(state(1, 3))
    assert u["route"] == "retry_patch" and "best_source" not in u
    assert u["reason"] == "attempt 1 regresses (3 failing variants, best so far 1): revert to the best so far"


def test_stagnation_aborts_after_k_attempts_without_improvement():
    u = convergence_judge(state(2, 2, since_best=3, options={"stagnation_k": 4}))
    assert u["route"] == "abort" and u["verdict"] == "not_repaired"
    assert u["reason"].startswith("stagnation: the best error has not improved in 4 consecutive attempts")
    assert u["report"]["decisions"][-1]["reason"] == u["reason"]
    u = convergence_judge(state(2, 2, since_best=2, options={"stagnation_k": 4}))
    assert u["route"] == "retry_patch" and u["since_best"] == 3


def test_oscillation_back_to_the_original_or_an_earlier_attempt_aborts():
    u = convergence_judge(state(2, 2, new_source=ORIGINAL))
    assert u["route"] == "abort" and "oscillation: attempt 1 returns the candidate to the source of the original" \
        in u["reason"]
    earlier = "class ModelNew: pass  # attempt 1\n"
    u = convergence_judge(state(2, 3, new_source=earlier, iterations=2,
                                attempts=[{"n": 1, "operator": "llm", "source_hash": source_hash(earlier)}]))
    assert u["route"] == "abort" and "source of attempt 1" in u["reason"]


def test_token_budget_spent_aborts():
    u = convergence_judge(state(3, 3, tokens={"prompt": 900, "completion": 200, "total": 1100},
                                options={"token_budget": 1000}))
    assert u["route"] == "abort" and u["reason"] == "token budget spent (1100 of 1000 tokens)"
    assert u["report"]["tokens"]["total"] == 1100
