"""The state owns the evaluation count: a runner re-created after ``--resume`` continues it."""

import agents.common as common


class _CountingRunner:
    """Stands in for ``tools.evaluate.runner.Runner`` so that no sandboxed process starts; the subject is
    ``agents.common.runner``, which must carry the state's count into the runner it creates."""

    def __init__(self, *args, **kwargs):
        self.evaluations = 0
        self.variants = [{"id": "default/seed0", "split": "search"}]
        self.startup_s: list[float] = []

    def build_suite(self, candidate_source=""):
        self.evaluations += 3  # building the suite runs processes: they must not be counted twice
        return self.variants


def test_runner_recreated_after_resume_continues_the_state_count(monkeypatch, tmp_path):
    monkeypatch.setattr(common, "Runner", _CountingRunner)
    run_dir = str(tmp_path)
    state = {"run_dir": run_dir, "reference_source": "", "evaluations": 17,
             "suite": [{"id": "default/seed0", "split": "heldout"}]}
    try:
        r = common.runner(state)
        assert r.evaluations == 17
        assert r.variants[0]["split"] == "heldout"
    finally:
        common.forget_runner(run_dir)


def test_fresh_run_starts_at_zero(monkeypatch, tmp_path):
    monkeypatch.setattr(common, "Runner", _CountingRunner)
    run_dir = str(tmp_path)
    try:
        assert common.runner({"run_dir": run_dir, "reference_source": ""}).evaluations == 0
    finally:
        common.forget_runner(run_dir)


def test_judge_stops_at_the_evaluation_cap_from_the_state():
    from agents.convergence_judge import convergence_judge

    state = {"options": {"max_evaluations": 5}, "evaluations": 5, "iterations": 1,
             "triage": {"status": "fail"}}
    update = convergence_judge(state)
    assert update["verdict"] == "not_repaired" and "evaluation cap" in update["reason"]
