"""The integrity audit in both directions: every cheat of the corpus is rejected, every honest kernel accepted.

Each file of ``corpus/`` is a small task-like candidate whose docstring says which
reference it is for (``reference:``), what the audit must find (``expect:`` error checks,
or ``clean``), optional warnings (``warn:``) and, for repairs, the candidate it was
repaired from (``original:``). Each is audited as the integrity auditor does it
(``tools.integrity.audit.audit_candidate``): static checks, then one sandboxed audit run per
candidate on the Triton interpreter (held-out variants failing are the triage's verdict for
a candidate as given, so the corpus expects the audit's own findings).
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner
from tools.integrity.audit import audit_candidate, process_findings, protected_fingerprint, same_layout_variants

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
ROOT = os.path.dirname(os.path.dirname(HERE))


def _meta(name: str) -> dict:
    with open(os.path.join(CORPUS, name + ".py")) as f:
        doc = f.read().split('"""')[1]
    meta = dict(re.findall(r"^(\w+): (.+)$", doc, re.M))
    for key in ("expect", "warn"):
        meta[key] = [x.strip() for x in meta.get(key, "").split(",") if x.strip()]
    return meta


NAMES = sorted(f[:-3] for f in os.listdir(CORPUS) if f.endswith(".py"))
AUDITED = [n for n in NAMES if _meta(n).get("role") != "original"]
CHEATS = [n for n in AUDITED if _meta(n)["expect"] != ["clean"]]
HONEST = [n for n in AUDITED if _meta(n)["expect"] == ["clean"]]


def _source(name: str) -> str:
    with open(os.path.join(CORPUS, name + ".py")) as f:
        return f.read()


def _reference(name: str) -> str:
    with open(os.path.join(HERE, "references", name + ".py")) as f:
        return f.read()


@pytest.fixture(scope="module")
def runners(tmp_path_factory):
    out = {}
    for ref in sorted({_meta(n)["reference"] for n in AUDITED}):
        r = Runner(str(tmp_path_factory.mktemp(ref)), _reference(ref), INTERPRETER, timeout_s=60)
        r.build_suite()
        out[ref] = r
    return out


def _audit(runners, name: str):
    """Audit as the integrity auditor does: a repair on the held-out variants, a candidate as given on one layout."""
    meta = _meta(name)
    r = runners[meta["reference"]]
    original = _source(meta["original"]) if meta.get("original") else None
    ids = None if original else same_layout_variants(r.variants)
    return audit_candidate(r, _source(name), _reference(meta["reference"]), original, ids)


@pytest.mark.parametrize("name", CHEATS)
def test_cheat_is_rejected(runners, name):
    run = _audit(runners, name)
    errors = {f.check for f in run.findings if f.severity == "error"}
    missing = set(_meta(name)["expect"]) - errors
    assert not missing, f"{name}: expected {sorted(missing)}; got {[f.model_dump() for f in run.findings]}"


@pytest.mark.parametrize("name", HONEST)
def test_honest_kernel_is_accepted(runners, name):
    run = _audit(runners, name)
    errors = [f.model_dump() for f in run.findings if f.severity == "error"]
    assert not errors, f"{name}: {errors}"
    assert run.heldout.passed and all(v.audit.get("launches") for v in run.heldout.variants)
    warnings = {f.check for f in run.findings if f.severity == "warning"}
    assert set(_meta(name)["warn"]) <= warnings


def test_corpus_covers_every_check_family():
    """At least one cheat per check the issue lists, so a check that stops firing shows up here."""
    expected = {c for n in CHEATS for c in _meta(n)["expect"]}
    assert {"torch_compute", "torch_fallback", "reference_call", "try_except", "inherits_reference",
            "shape_special_case", "cache", "stale_output", "monkey_patch", "streams_threads",
            "precision_downgrade", "exec_io", "output_not_from_kernel", "inputs_mutated", "output_aliases_input",
            "out_of_bounds", "no_launch", "nondeterministic", "output_type", "kernel_rewritten",
            "kernel_removed", "grid_growth", "host_code", "kernel_causality", "launch_callable",
            "host_prologue", "host_scalars", "program_order"} <= expected
    assert len(HONEST) >= 4


def test_changed_reference_tolerance_or_suite_is_a_process_finding(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("suite.json", "inputs.pt", "expected.pt"):
        (suite / name).write_bytes(b"data of " + name.encode())
    ref = _reference("softmax")
    at_triage = protected_fingerprint(ref, None, str(suite))
    assert process_findings(at_triage, protected_fingerprint(ref, None, str(suite))) == []
    changed = {
        "reference": protected_fingerprint(ref.replace("dim=-1", "dim=0"), None, str(suite)),
        "tolerance": protected_fingerprint(ref, (1.0, 1.0), str(suite)),
    }
    (suite / "expected.pt").write_bytes(b"edited")
    changed["suite/expected.pt"] = protected_fingerprint(ref, None, str(suite))
    for what, now in changed.items():
        findings = process_findings(at_triage, now)
        assert [f.check for f in findings] == ["process_integrity"] and findings[0].severity == "error"
        assert what in findings[0].message


def test_check_cli_rejects_a_torch_softmax_fallback(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    shutil.copy(os.path.join(HERE, "references", "softmax.py"), task / "reference.py")
    shutil.copy(os.path.join(CORPUS, "fallback_torch_softmax.py"), task / "candidate.py")
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "graph.run", str(task), "--check", "--targets", "none", "--out",
                        str(out), "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["status"] == "rejected" and report["integrity"]["passed"] is False
    errors = {f["check"] for f in report["integrity"]["findings"] if f["severity"] == "error"}
    assert {"torch_compute", "torch_fallback"} <= errors
    assert "torch_compute" in p.stderr  # the progress line names the finding
    md = (out / "report.md").read_text()
    assert "torch_compute" in md and "torch_fallback" in md


def test_large_diff_and_cost_growth_are_degeneration():
    """Thresholds of tools.integrity.audit on synthetic audit facts (no sandbox needed)."""
    from tools.integrity.audit import degeneration_findings
    from tools.records import EvalResult, VariantResult

    original = _source("near_miss_softmax")
    padded = original + "".join(f"\n# filler line {k}" for k in range(40))
    assert "large_diff" in {f.check for f in degeneration_findings(original, padded, None, None, "interpreter")}

    def ev(launches, programs, wall):
        return EvalResult(status="pass", backend="interpreter", variants=[VariantResult(
            variant_id="default/seed1", status="pass", wall_s=wall,
            audit={"launches": launches, "programs": programs})])
    fixed = _source("honest_repair")
    assert degeneration_findings(original, fixed, ev(1, 4, 0.1), ev(3, 20, 1.9), "interpreter") == []
    checks = {f.check for f in degeneration_findings(original, fixed, ev(1, 4, 0.1), ev(4, 21, 2.1), "interpreter")}
    assert checks == {"launch_growth", "grid_growth", "time_growth"}


def test_time_growth_needs_cpu_growth_when_both_forwards_report_cpu_seconds():
    """A load burst inflates wall time only: with CPU seconds on both sides, time_growth needs them to grow too."""
    from tools.integrity.audit import degeneration_findings
    from tools.records import EvalResult, VariantResult

    def ev(wall, cpu):
        return EvalResult(status="pass", backend="interpreter", variants=[VariantResult(
            variant_id="default/seed1", status="pass", wall_s=wall, cpu_s=cpu, audit={"launches": 1, "programs": 4})])
    original, fixed = _source("near_miss_softmax"), _source("honest_repair")

    def growth(a, b):
        return "time_growth" in {f.check for f in degeneration_findings(original, fixed, a, b, "interpreter")}
    assert not growth(ev(0.5, 0.4), ev(9.6, 0.5))  # the wall grew under load, the CPU did not
    assert growth(ev(0.5, 0.4), ev(9.6, 9.0))  # a real slow-down shows in both
    assert growth(ev(0.5, None), ev(9.6, 0.5))  # no CPU seconds on one side (a GPU backend): wall decides


def test_triage_escape_findings_fire_on_escapes_never_on_honest_kernels():
    """``escape_findings`` (run by triage before anything executes): escapes only, no honest kernel refused."""
    from tools.integrity.static_checks import escape_findings

    def found(name: str) -> list:
        with open(os.path.join(CORPUS, name + ".py")) as f:
            return escape_findings(f.read())
    assert [n for n in HONEST if found(n)] == []
    for name in ("exec_hidden_fallback", "forged_result_frames", "frames_blind_probe", "marshal_loaded_code",
                 "read_answer_file", "suite_files_posix"):
        assert found(name) and all(f.check == "escape" and f.severity == "error" for f in found(name)), name
    # correctness cheats stay with the auditor (after the run): not an escape
    for name in ("fallback_torch_softmax", "host_numpy_copy", "host_math_tolist"):
        assert found(name) == [], name
