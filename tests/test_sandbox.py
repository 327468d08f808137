"""The hardware runner contains candidates that hang, crash or raise, and still reports the others."""

import pytest

from tools.backends import INTERPRETER
from tools.runner import Runner


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    from conftest import fixture_text
    r = Runner(str(tmp_path_factory.mktemp("sandbox")), fixture_text("vadd", "reference.py"), INTERPRETER,
               timeout_s=20)
    r.build_suite()
    return r


def hostile(fixed: str, forward_prefix: str) -> str:
    return fixed.replace("        x, z = x.contiguous(), z.contiguous()\n",
                         forward_prefix + "        x, z = x.contiguous(), z.contiguous()\n")


def test_suite_has_default_seeds_sizes_and_regimes_split(runner):
    ids = runner.ids()
    assert {"default/seed1", "default/seed2", "default/seed3"} <= set(ids)
    assert any(i.startswith("size/n_elements=2999") for i in ids)
    assert any(i.startswith("regime/large") for i in ids)
    assert set(runner.ids("search")).isdisjoint(runner.ids("heldout"))
    assert runner.ids("heldout")


def test_fixed_passes_and_candidate_mismatches(runner, vadd_fixed, vadd_candidate):
    good, bad = runner.screen([vadd_fixed, vadd_candidate], runner.ids("search"))
    assert good.status == "pass" and all(v.launches >= 1 for v in good.variants)
    assert bad.status == "mismatch"
    v = bad.variants[0]
    assert v.errors[0].first_bad_index == [2048]  # the floor-divided grid leaves the tail block unwritten


def test_hanging_candidate_times_out_and_is_killed(tmp_path, vadd_reference, vadd_fixed):
    r = Runner(str(tmp_path), vadd_reference, INTERPRETER, timeout_s=8)
    r.build_suite()
    res = r.evaluate(hostile(vadd_fixed, "        while True:\n            pass\n"), ["default/seed1"])
    assert res.status == "timeout"
    assert "killed" in res.variants[0].message


def test_segfaulting_candidate_is_a_runtime_error_naming_the_signal(runner, vadd_fixed):
    seg = hostile(vadd_fixed, "        import ctypes\n        ctypes.string_at(0)\n")
    res_seg, res_good = runner.screen([seg, vadd_fixed], ["default/seed1"])
    assert res_seg.status == "runtime_error" and "SIGSEGV" in res_seg.variants[0].message
    assert res_good.status == "pass"  # the next candidate ran in a fresh process


def test_raising_kernel_maps_to_candidate_line(runner, vadd_fixed):
    src = vadd_fixed.replace("    tl.store(y_ptr + offsets, x + alpha * z, mask=mask)",
                             "    tl.store(y_ptr + offsets, x + alpha * undefined_name, mask=mask)")
    res = runner.evaluate(src, ["default/seed1"])
    assert res.status in ("compile_error", "runtime_error")
    line = [i + 1 for i, t in enumerate(src.splitlines()) if "undefined_name" in t][0]
    assert f"candidate.py:{line}" in res.variants[0].message


def test_candidate_that_fails_to_import_is_a_compile_error(runner):
    res = runner.evaluate("import torch\nraise ImportError('no such module')\n", ["default/seed1"])
    assert res.status == "compile_error"


def test_secrets_do_not_reach_the_candidate(runner, vadd_fixed, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    leak = hostile(vadd_fixed, "        import os\n        assert 'OPENAI_API_KEY' not in os.environ\n")
    assert runner.evaluate(leak, ["default/seed1"]).status == "pass"


def test_ill_conditioned_variants_are_dropped(tmp_path):
    """A one-pass variance of inputs offset by -100: even the fp32 reference misses fp64 by far."""
    ref = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x * x).mean(-1) - x.mean(-1) ** 2


rows = 8
cols = 512


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
'''
    r = Runner(str(tmp_path), ref, INTERPRETER)
    ids = [v["id"] for v in r.build_suite()]
    assert "regime/negative/seed1" in ids
    assert not any(i.startswith("regime/offset") for i in ids)
