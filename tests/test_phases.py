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
