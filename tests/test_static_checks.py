"""Static integrity checks in both directions: honest kernels pass, cheats are caught."""

import pytest

from tools.static_checks import run_static_checks

HONEST = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous().float()
        y = torch.empty_like(x)
        n = x.numel()
        _k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)
        return y.view(x.shape)
'''


def test_honest_kernel_has_no_findings():
    assert run_static_checks(HONEST) == []


@pytest.mark.parametrize("line,check", [
    ("        return torch.softmax(x, dim=-1)", "torch_compute"),
    ("        return F.relu(x)", "torch_compute"),
    ("        return x @ x", "torch_compute"),
    ("        return x.sum()", "torch_compute"),
    ("        return torch.nn.functional.gelu(x)", "torch_compute"),
])
def test_torch_compute_in_forward_is_caught(line, check):
    src = HONEST.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n")
    src = src.replace("        return y.view(x.shape)", line)
    findings = run_static_checks(src)
    assert [f.check for f in findings] == [check]
    assert findings[0].severity == "error"


def test_try_except_fallback_is_caught():
    src = HONEST.replace(
        "        _k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)",
        "        try:\n            _k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK_SIZE=1024)\n"
        "        except Exception:\n            y = x * 2")
    assert "try_except" in [f.check for f in run_static_checks(src)]


def test_inheriting_the_reference_is_caught():
    src = HONEST.replace("class ModelNew(nn.Module):", "class ModelNew(Model):")
    assert "inherits_reference" in [f.check for f in run_static_checks(src)]


def test_alias_of_torch_is_resolved():
    src = HONEST.replace("import torch\n", "import torch\nimport torch as T\n").replace(
        "        return y.view(x.shape)", "        return T.tanh(x)")
    assert [f.check for f in run_static_checks(src)] == ["torch_compute"]


def test_reduction_of_a_kernel_output_is_only_a_warning():
    """``y.sum()`` of a buffer the kernel wrote may be an epilogue: the audit run measures it."""
    src = HONEST.replace("        return y.view(x.shape)", "        return y.sum()")
    findings = run_static_checks(src)
    assert [(f.check, f.severity) for f in findings] == [("torch_compute", "warning")]


@pytest.mark.parametrize("extra,line,check", [
    ("from torch import softmax as sm\n", "        return sm(x, -1)", "torch_compute"),
    ("", "        return getattr(torch, 'softmax')(x, -1)", "torch_compute"),
    ("", "        return self.cached", "cache"),
    ("import functools\n", "        return y if id(x) else y", "cache"),
    ("import time\ntime.perf_counter = lambda: 0.0\n", "        return y", "monkey_patch"),
    ("import threading\n", "        return y", "streams_threads"),
    ("", "        return eval('y')", "exec_io"),
    ("", "        return y if x.shape[0] != 4096 else x", "shape_special_case"),
])
def test_other_cheats_are_caught(extra, line, check):
    src = HONEST.replace("import triton\n", "import triton\n" + extra, 1).replace("        return y.view(x.shape)", line)
    assert check in [f.check for f in run_static_checks(src) if f.severity == "error"]


def test_fp16_cast_is_a_downgrade_only_against_an_fp32_reference():
    src = HONEST.replace("x.contiguous().float()", "x.contiguous().half()")
    fp32_ref = "import torch\nclass Model:\n    def forward(self, x):\n        return x * 2\n"
    fp16_ref = fp32_ref + "def get_inputs():\n    return [torch.randn(8).half()]\n"
    assert "precision_downgrade" in [f.check for f in run_static_checks(src, fp32_ref)]
    assert "precision_downgrade" not in [f.check for f in run_static_checks(src, fp16_ref)]


def test_parameters_built_in_init_and_rank_tests_are_honest():
    src = HONEST.replace("        super().__init__()\n",
                         "        super().__init__()\n        self.w = nn.Parameter(torch.randn(4))\n"
                         "        self.cfg = {}\n        self.cfg['BLOCK'] = 1024\n", 1)
    src = src.replace("        x = x.contiguous().float()", "        assert len(x.shape) == 1\n        x = x.contiguous().float()\n"
                      "        if x.dim() == 2:\n            x = x.reshape(-1)")
    assert run_static_checks(src) == []
