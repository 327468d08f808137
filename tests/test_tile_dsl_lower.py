"""The lowering is correct by test: lowered AscendC on the emulator == the executor on the whole suite.

Every exemplar is lowered to the direct-launch form, compiled once (the emulator caches by
source hash) and run on every suite variant of its dtypes; its outputs must equal the
executor's bit for bit, except programs with ``exp``/``ln``, whose elementary functions
differ between numpy and the C library (``INEXACT`` table). A deliberately wrong lowering
rule must be caught by the same comparison (mutation test).
"""

import types

import numpy as np
import pytest
import torch

from tile_dsl import execute, exemplars, ir, lower, trace
from tile_dsl.check import load_reference, suite

#: Allowed difference for programs using exp/ln, per output dtype: (atol, rtol). numpy's float32
#: exp/log and glibc's expf/logf are each within about 1 ulp, not correctly rounded; a softmax
#: then divides by a sum of 1000 of them. fp16: one fp16 ulp relative (2**-10).
INEXACT = {"f32": (1e-7, 1e-5), "f16": (0.0, 2 ** -10)}

PROGS = {n: trace(exemplars.load(n).program, n) for n in exemplars.names()}


def inexact(prog) -> bool:
    return any(isinstance(s, (ir.Vec, ir.Sca)) and s.op in ("exp", "ln") for s in ir.walk(prog.body))


def candidate(prog):
    mod = types.ModuleType(f"lowered_{prog.name}")
    exec(compile(lower.lower_direct(prog), f"lowered_{prog.name}.py", "exec"), mod.__dict__)
    return mod.ModelNew()


def variants(name):
    prog = PROGS[name]
    vs = [v for v in suite(load_reference(exemplars.load(name).REFERENCE))
          if len(v.inputs) == len(prog.inputs) and all(str(x.dtype) == g.dtype.torch
                                                       for g, x in zip(prog.inputs, v.inputs))]
    assert len(vs) >= 9
    return vs


def differences(prog, model, vs) -> list[str]:
    """Variants where the emulator's outputs differ from the executor's (beyond the table)."""
    bad = []
    for v in vs:
        out = model(*[x.clone() for x in v.inputs])
        out = out if isinstance(out, tuple) else (out,)
        for o, g, e in zip(out, prog.outputs, execute(prog, v.inputs)):
            o = o.numpy()
            if o.shape != e.shape:
                bad.append(f"{v.id}: shape {o.shape} vs {e.shape}")
            elif inexact(prog):
                atol, rtol = INEXACT[g.dtype.name]
                if not np.allclose(o.astype(np.float64), e.astype(np.float64), atol=atol, rtol=rtol, equal_nan=True):
                    bad.append(f"{v.id}: {g.name} outside (atol, rtol) = {(atol, rtol)}")
            elif o.tobytes() != e.tobytes():  # bit for bit
                bad.append(f"{v.id}: {g.name} differs bitwise")
    return bad


@pytest.mark.parametrize("name", exemplars.names())
def test_lowered_kernel_on_the_emulator_equals_the_executor(name):
    prog = PROGS[name]
    assert differences(prog, candidate(prog), variants(name)) == []


def test_bit_exact_for_most_exemplars():
    exact = [n for n, p in PROGS.items() if not inexact(p)]
    assert len(exact) >= 11  # only softmax and silu use exp


@pytest.mark.parametrize("rule,wrong,names", [
    ("tile_count", lambda count, size: f"{count} / {size}", ("add", "mse_loss")),  # the tail tile dropped
    ("block_share", lambda total, blocks, align: [  # per-block share by integer division: the remainder lost
        f"uint32_t per = ({total}) / {blocks};", "uint32_t start = GetBlockIdx() * per;",
        f"uint32_t count = start >= ({total}) ? 0 : (({total}) - start < per ? ({total}) - start : per);"],
     ("add", "row_sum")),
])
def test_a_wrong_lowering_rule_is_caught(monkeypatch, rule, wrong, names):
    monkeypatch.setitem(lower.RULES, rule, wrong)
    caught = {}
    for name in names:
        prog = PROGS[name]
        torch.manual_seed(0)
        caught[name] = differences(prog, candidate(prog), variants(name))
    assert all(caught.values()), caught


def test_mkb_form_has_the_six_sources_and_the_same_kernel_body():
    prog = PROGS["softmax"]
    ns: dict = {}
    exec(lower.lower_mkb(prog, "eps: float = 1e-5"), ns)
    for key in ("project_json_src", "host_tiling_src", "host_operator_src", "kernel_src", "python_bind_src",
                "model_src"):
        assert isinstance(ns[key], str) and ns[key].strip(), key
    assert lower.kernel_impl(prog) in ns["kernel_src"] and "GET_TILING_DATA" in ns["kernel_src"]
    assert "custom_ops_lib.softmax_custom(x)" in ns["model_src"] and "def __init__(self, eps" in ns["model_src"]
    assert "SetBlockDim(8)" in ns["host_operator_src"]
