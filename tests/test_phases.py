"""tools.phases: nested phases count once; the report field adds up; the profile table (evals.profile)."""

import time

from evals.profile import profile_tables, ratio
from tools.phases import Recorder, ordered


def test_nested_phase_is_subtracted_from_its_parent():
    rec = Recorder()
    with rec.phase("triage_eval"):
        time.sleep(0.05)
        with rec.phase("worker_start"):
            time.sleep(0.1)
    with rec.phase("attempt"):
        time.sleep(0.02)
    with rec.phase("attempt"):
        pass
    rep = rec.report()
    tot = rep["total_s"]
    assert 0.09 <= tot["worker_start"] < 0.2
    assert 0.04 <= tot["triage_eval"] < 0.1  # its own 0.05 s, not the 0.1 s of the nested start
    assert rep["count"] == {"triage_eval": 1, "worker_start": 1, "attempt": 2}
    outer = next(r for r in rep["timeline"] if r["name"] == "triage_eval")
    assert outer["s"] >= 0.14 and outer["self_s"] < 0.1
    assert [r["name"] for r in rep["timeline"]] == ["triage_eval", "worker_start", "attempt", "attempt"]


def test_phase_survives_an_exception():
    rec = Recorder()
    try:
        with rec.phase("audit"):
            raise ValueError
    except ValueError:
        pass
    assert rec.report()["count"] == {"audit": 1}


def test_profile_table_median_other_and_ratio():
    rows = [{"case": "a", "status": "repaired", "wall_s": 10.0, "phases": {"triage_eval": 2.0, "attempt": 1.0}},
            {"case": "b", "status": "repaired", "wall_s": 20.0, "phases": {"triage_eval": 2.5, "audit": 3.0}},
            {"case": "c", "status": "invalid_input", "wall_s": 1.0}]
    md, summ = profile_tables(rows)
    assert summ["columns"][:3] == ["triage_eval", "attempt", "audit"]  # pipeline order
    a = summ["rows"][0]
    assert a["other"] == 7.0 and a["wall/eval"] == 5.0 and a["audit"] is None
    assert ratio(rows[2]) is None
    assert summ["median"]["wall/eval"] == 6.5 and summ["median"]["wall"] == 10.0
    assert md.count("\n| ") == 4  # three cases and the median and "| **median** |" in md
    assert ordered(["zz", "report", "cli_import"]) == ["cli_import", "report", "zz"]


# ---------------------------------------------------------------- session 6: less work per run
def _preload_calls(monkeypatch, cached: bool, **settings):
    import agents.triage as triage
    from graph.context import Settings
    from kb import embed

    calls = []
    monkeypatch.setattr(embed, "_model", None)
    monkeypatch.setattr(embed, "is_cached", lambda text: cached)
    monkeypatch.setattr(embed, "preload", lambda: calls.append(1))
    monkeypatch.delenv("NEARMISS_EMBED_PRELOAD", raising=False)
    diag = {"symptoms": ["fails_on_default"], "summary": "3 of 17 variants fail", "findings": []}
    triage._preload_embedding(Settings(**settings), diag)
    return len(calls)


def test_model_preload_only_when_the_query_embedding_is_not_cached(monkeypatch):
    assert _preload_calls(monkeypatch, cached=False, patcher="patterns") == 1
    assert _preload_calls(monkeypatch, cached=True, patcher="patterns") == 0
    assert _preload_calls(monkeypatch, cached=False, patcher="llm") == 0  # the LLM patcher retrieves nothing
    assert _preload_calls(monkeypatch, cached=False, patcher="patterns", check=True) == 0


def test_parent_compares_with_one_torch_thread(monkeypatch):
    import torch

    from tools.evaluate.runner import parent_threads

    before = torch.get_num_threads()
    try:
        monkeypatch.delenv("NEARMISS_PARENT_THREADS", raising=False)
        parent_threads()
        assert torch.get_num_threads() == 1
        monkeypatch.setenv("NEARMISS_PARENT_THREADS", "2")
        parent_threads()
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_zygote_preimports_exist():
    import importlib.util

    from tools.worker.zygote import PREIMPORT

    assert "torch._inductor.config" in PREIMPORT  # what torch.use_deterministic_algorithms imports
    assert all(importlib.util.find_spec(name) is not None for name in PREIMPORT)


def test_profile_table_has_cpu_and_load_columns():
    rows = [{"case": "a", "status": "repaired", "wall_s": 10.0, "cpu_s": 7.5, "load1": 2.0,
             "phases": {"triage_eval": 2.0}}]
    md, summ = profile_tables(rows)
    assert summ["median"]["cpu"] == 7.5 and summ["median"]["load1"] == 2.0
    assert "| cpu | load1 |" in md


def test_bench_cpu_without_cgroup_is_none():
    from evals.bench import _cgroup_cpu_s

    assert _cgroup_cpu_s(None) is None


def test_warm_workers_start_on_one_long_lived_thread():
    # bwrap --die-with-parent fires when the starting *thread* ends: every warm worker starts on one thread
    import threading

    import pytest

    from tools.sandbox.launch import _on_starter_thread

    names = []
    for _ in range(2):
        t = threading.Thread(target=lambda: names.append(_on_starter_thread(lambda: threading.current_thread())))
        t.start()
        t.join()
    assert names[0] is names[1] and names[0].is_alive() and names[0].name == "nearmiss-warm-starter"
    with pytest.raises(RuntimeError, match="no start"):
        _on_starter_thread(lambda: (_ for _ in ()).throw(RuntimeError("no start")))
