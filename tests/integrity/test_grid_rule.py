"""The grid-callable rule on every form a grid takes, without a sandbox (static resolution only).

A grid callable runs inside the launch; whatever form it takes (a ``def``, a lambda, a
``functools.partial``, a method, a callable object, a name bound to one, a factory's
result) it may only compute launch parameters. The audit run's watch of the grid call
(``launch_callable``) covers what the resolution cannot follow; see the corpus.
"""

import pytest

from tools.integrity.audit import dynamic_findings
from tools.integrity.host_allowlist import grid_findings
from tools.integrity.static_checks import parse_candidate
from tools.records import EvalResult, VariantResult

HEAD = """import functools
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

"""
#: form -> (module-level code, code in forward before the launch, the grid expression); ``BODY``
#: is the grid's statement (honest: launch arithmetic; cheat: tensor compute into the output).
FORMS = {
    "nested_def": ("", "        def grid(meta):\n            BODY\n            return (triton.cdiv(n, meta['BLOCK']),)\n",
                   "grid"),
    "factory": ("def _mk(x, y, n):\n    def g(meta):\n        BODY\n        return (triton.cdiv(n, meta['BLOCK']),)\n"
                "    return g\n\n", "", "_mk(x, y, n)"),
    "partial": ("def _g(x, y, n, meta):\n    BODY\n    return (triton.cdiv(n, meta['BLOCK']),)\n\n", "",
                "functools.partial(_g, x, y, n)"),
    "alias": ("def _g(meta):\n    return (1,)\n\n", "        def h(meta):\n            BODY\n            return (1,)\n"
              "        g2 = h\n", "g2"),
    "callable_object": ("class G:\n    def __init__(self, x, y, n):\n        self.a = (x, y, n)\n\n"
                        "    def __call__(self, meta):\n        x, y, n = self.a\n        BODY\n"
                        "        return (triton.cdiv(n, meta['BLOCK']),)\n\n", "", "G(x, y, n)"),
    "method": ("", "        self.x, self.y, self.n = x, y, n\n", "self._grid"),
}
METHOD = ("    def _grid(self, meta):\n        x, y, n = self.x, self.y, self.n\n        BODY\n"
          "        return (triton.cdiv(n, meta['BLOCK']),)\n\n")
CHEATS = {"call": "y.copy_(x * 2)", "store": "y[:] = x * 2", "augmented": "y[0] += 1"}
HONEST = "blocks = max(1, triton.cdiv(n, meta.get('BLOCK', 1024)) * x.size(0) // max(1, x.numel()))"


def _source(form: str, body: str) -> str:
    top, pre, expr = FORMS[form]
    cls = ("class ModelNew(nn.Module):\n" + (METHOD if form == "method" else "")
           + "    def forward(self, x):\n        y = torch.empty_like(x)\n        n = x.numel()\n" + pre
           + f"        _k[{expr}](x, y, n, BLOCK=1024)\n        return y\n")
    return (HEAD + top + cls).replace("BODY", body)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_tensor_work_in_a_grid_callable_is_host_code(form, cheat):
    found = grid_findings(parse_candidate(_source(form, CHEATS[cheat])))
    assert found and found[0].check == "host_code" and found[0].severity == "error", _source(form, CHEATS[cheat])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_launch_arithmetic_in_a_grid_callable_is_accepted(form):
    assert grid_findings(parse_candidate(_source(form, HONEST))) == []


def test_static_grids_and_unresolved_grids_give_no_static_finding():
    src = _source("nested_def", HONEST).replace("_k[grid]", "_k[(triton.cdiv(n, 1024),)]")
    assert grid_findings(parse_candidate(src)) == []
    src = _source("nested_def", CHEATS["call"]).replace("_k[grid]", "_k[{'g': grid}['g']]")
    assert grid_findings(parse_candidate(src)) == []  # left to the audit run's watch of the grid call


def _ev(**audit) -> EvalResult:
    base = {"launches": 1, "programs": 1, "torch_ops": [], "torch_read": 0, "input_elements": 8, "outputs": []}
    return EvalResult(status="pass", backend="interpreter", variants=[VariantResult(
        variant_id="default/seed1", status="pass", launches=1, audit={**base, **audit})])


def test_launch_ops_and_host_prologue_facts_are_errors():
    checks = {f.check: f.severity for f in dynamic_findings(_ev(launch_ops=["add", "copy_"]), "interpreter")}
    assert checks.get("launch_callable") == "error"
    prologue = [{"op": "launch", "into": "_k tensor argument 2"}]
    checks = {f.check: f.severity for f in dynamic_findings(_ev(host_prologue=prologue), "interpreter")}
    assert checks.get("host_prologue") == "error"
    assert not {f.check for f in dynamic_findings(_ev(launch_ops=[], host_prologue=[]), "interpreter")} & {
        "launch_callable", "host_prologue"}
