"""``evals.bench --mode compare`` figures: the pass@k estimator, the per-success figures, table and plot.

The estimator is checked against values computed by hand from Chen et al. 2021, eq. 1; the
summary against rows whose totals are known; the end-to-end command against the scripted
loopback server on one case (regenerate answers scripted, the debug arm repairing offline).
"""

import json
import os
import subprocess
import sys
from math import comb

import pytest
from conftest import ROOT
from fake_openai import FakeOpenAI

from evals.regenerate import compare_plot, compare_summary, compare_table, merge_model_only, pass_at


@pytest.mark.parametrize("n,c,k", [(3, 0, 1), (3, 1, 1), (3, 1, 2), (3, 2, 2), (3, 3, 3), (5, 2, 3), (10, 1, 5)])
def test_pass_at_equals_the_combinatorial_form(n, c, k):
    assert pass_at(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_pass_at_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at(3, 1, 4)
    with pytest.raises(ValueError):
        pass_at(3, 4, 1)


def test_summary_table_and_plot(tmp_path):
    debug = [{"case": "a", "status": "repaired", "exit": 0, "tokens": 0, "wall_s": 30.0},
             {"case": "b", "status": "not_repaired", "exit": 1, "tokens": 5000, "wall_s": 90.0}]
    regen = [{"case": "a", "k": 3, "successes": 1, "tokens": 3000, "wall_s": 60.0},
             {"case": "b", "k": 3, "successes": 0, "tokens": 2400, "wall_s": 45.0}]
    s = compare_summary(debug, regen, 3, "m")
    assert s["debug"]["pass_at_1"] == 0.5 and s["debug"]["tokens_per_success"] == 5000
    assert s["debug"]["wall_per_success_s"] == 120.0
    r = s["regenerate"]
    assert r["pass_at"]["1"] == pytest.approx((1 / 3 + 0) / 2) and r["pass_at"]["3"] == pytest.approx(0.5)
    assert r["pass_at"]["2"] == pytest.approx((1 - comb(2, 2) / comb(3, 2)) / 2)
    assert r["tokens_per_success"] == 5400 and r["wall_per_success_s"] == 105.0
    table = compare_table(s)
    assert "| Pass@1 | Pass@2 | Pass@3 |" in table and "| 0.500 | - | - |" in table and "5,400" in table
    none = compare_summary(debug[1:], regen[1:], 3, "m")
    assert none["regenerate"]["tokens_per_success"] is None and "n/a (no success)" in compare_table(none)
    compare_plot(s, str(tmp_path / "c.png"))
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_compare_mode_end_to_end_against_the_scripted_server(tmp_path):
    cases = tmp_path / "cases"
    (cases / "gelu").mkdir(parents=True)
    src = os.path.join(ROOT, "evals", "cases", "01_gelu_tail")
    for f in ("reference.py", "candidate.py"):
        (cases / "gelu" / f).write_text(open(os.path.join(src, f)).read())
    fixed = open(os.path.join(src, "fixed.py")).read()
    server = FakeOpenAI().start()
    # k = 2 generations: prose (no file), then the known fix as a whole file.
    server.script = [{"content": "I cannot do that.", "usage": {"prompt_tokens": 300, "completion_tokens": 5}},
                     {"content": "```python\n" + fixed + "```", "usage": {"prompt_tokens": 300,
                                                                         "completion_tokens": 400}}]
    env = {**os.environ, "NEARMISS_LLM_MODEL": "scripted", "NEARMISS_LLM_BASE_URL": server.url,
           "NEARMISS_LLM_MAX_RETRIES": "0", "NO_PROXY": "127.0.0.1",
           "NEARMISS_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "cmp.json"
    try:
        p = subprocess.run([sys.executable, "-m", "evals.bench", "--mode", "compare", "--patcher", "llm", "--k", "2",
                            "--cases", str(cases), "--extra", "--targets none", "--out", str(out)], cwd=ROOT,
                           env=env, capture_output=True, text=True, timeout=1200)
    finally:
        server.stop()
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads(out.read_text())
    s = data["compare"]
    assert s["regenerate"]["successes"] == 1 and s["regenerate"]["pass_at"]["2"] == 1.0
    assert s["regenerate"]["pass_at"]["1"] == 0.5 and s["regenerate"]["tokens"] == 1005
    assert [g["status"] for g in data["regenerate_rows"][0]["generations"]] == ["no_file", "already_correct"]
    assert [r["temperature"] for r in server.requests] == [0.8, 0.8] and [r["seed"] for r in server.requests] == [0, 1]
    assert (tmp_path / "cmp.md").exists() and (tmp_path / "cmp.png").exists()


def _compare_json(tmp_path, debug, regen, model="m"):
    s = compare_summary(debug, regen, 3, model)
    s.update(jobs=2, elapsed_s=100.0, cases_planned=len(debug))
    path = tmp_path / "cmp.json"
    path.write_text(json.dumps({"compare": s, "rows": debug, "regenerate_rows": regen, "debug_llm_rows": []}))
    return path


def test_the_model_only_arm_is_merged_as_its_own_row(tmp_path):
    debug = [{"case": "a", "status": "repaired", "exit": 0, "tokens": 0, "wall_s": 30.0},
             {"case": "b", "status": "repaired", "exit": 0, "tokens": 0, "wall_s": 50.0}]
    regen = [{"case": "a", "k": 3, "successes": 0, "tokens": 3000, "wall_s": 60.0},
             {"case": "b", "k": 3, "successes": 0, "tokens": 2400, "wall_s": 45.0}]
    cmp = _compare_json(tmp_path, debug, regen)
    # The model alone ran on one case of the two and failed: its own runs are its denominator.
    mo = tmp_path / "mo.json"
    mo.write_text(json.dumps({"model": "m", "extra": ["--token-budget", "6000"], "rows": [
        {"case": "b", "status": "not_repaired", "exit": 1, "tokens": 4483, "wall_s": 200.0}]}))
    table = merge_model_only(str(cmp), str(mo))
    data = json.loads(cmp.read_text())
    dl = data["compare"]["debug_llm"]
    assert dl["runs"] == 1 and dl["successes"] == 0 and dl["pass_at_1"] == 0.0 and dl["tokens"] == 4483
    assert dl["tokens_per_success"] is None and dl["extra"] == ["--token-budget", "6000"]
    assert data["compare"]["debug"]["pass_at_1"] == 1.0 and data["compare"]["jobs"] == 2
    row = [ln for ln in table.splitlines() if ln.startswith("| Debug, model only")]
    assert row == ["| Debug, model only (--patcher llm), 1 of 2 cases | 0.000 | - | - | 0 / 1 | n/a (no success) | "
                   "n/a (no success) | 4,483 | 200 s |"]
    assert (tmp_path / "cmp.md").read_text().strip() == table and (tmp_path / "cmp.png").exists()
    # Rendered again without the rows file: same table, and it still says where the rows came from.
    assert merge_model_only(str(cmp), None) == table
    assert json.loads(cmp.read_text())["compare"]["debug_llm"]["source"] == str(mo)


def test_a_stopped_run_says_how_many_cases_it_finished():
    debug = [{"case": "a", "status": "repaired", "exit": 0, "tokens": 0, "wall_s": 30.0}]
    regen = [{"case": "a", "k": 3, "successes": 0, "tokens": 3000, "wall_s": 60.0}]
    s = compare_summary(debug, regen, 3, "m")
    assert compare_table(s).splitlines()[0] == "Model `m`, 1 cases."
    s["cases_planned"] = 14
    assert compare_table(s).splitlines()[0] == "Model `m`, 1 of 14 cases (the run was stopped)."


def test_merge_refuses_another_model_or_an_unknown_case(tmp_path):
    debug = [{"case": "a", "status": "repaired", "exit": 0, "tokens": 0, "wall_s": 30.0}]
    regen = [{"case": "a", "k": 3, "successes": 0, "tokens": 3000, "wall_s": 60.0}]
    cmp = _compare_json(tmp_path, debug, regen)
    mo = tmp_path / "mo.json"
    mo.write_text(json.dumps({"model": "other", "rows": [dict(debug[0])]}))
    with pytest.raises(ValueError, match="model"):
        merge_model_only(str(cmp), str(mo))
    mo.write_text(json.dumps({"model": "m", "rows": [dict(debug[0], case="z")]}))
    with pytest.raises(ValueError, match="z"):
        merge_model_only(str(cmp), str(mo))
