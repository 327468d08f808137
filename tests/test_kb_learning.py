"""Learning end to end: a near-miss only a generic mutation repairs is repaired; the accepted repair is
stored in the ``learned`` collection; a second run replays it first and needs fewer evaluations."""

import os

from conftest import FIXTURES, axpy_swapped

from graph.build import graph


def _run(tmp_path, name):
    ref = open(os.path.join(FIXTURES, "vadd", "reference.py")).read()  # y = x + alpha * z
    cand = axpy_swapped()  # launched with x and z swapped
    out = graph.invoke({"candidate_source": cand, "reference_source": ref, "name": name,
                        "options": {"out": str(tmp_path / name), "backend": "interpreter", "targets": "none"}})
    return out["report"]


def test_fallback_repair_is_learned_and_replayed_with_fewer_evaluations(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARMISS_CACHE", str(tmp_path / "cache"))  # a fresh store: nothing learned yet
    monkeypatch.delenv("NEARMISS_QDRANT_URL", raising=False)
    monkeypatch.delenv("NEARMISS_LEARN", raising=False)
    first = _run(tmp_path, "first")
    assert first["status"] == "repaired", first["reason"]
    fix = first["attempts"][-1]
    assert fix["operator"] == "swap_launch_args"  # a generic mutation: no pattern operator repairs it
    assert fix["learned"]["new"] is True
    second = _run(tmp_path, "second")
    assert second["status"] == "repaired", second["reason"]
    assert second["attempts"][-1]["operator"] == "swap_launch_args"
    assert second["attempts"][-1]["learned"] == {"key": fix["learned"]["key"], "new": False}
    print(f"\nevaluations: first run {first['evaluations']}, second run (learned entry first) {second['evaluations']}")
    assert second["evaluations"] < first["evaluations"]
