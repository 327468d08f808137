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
    ("        return y.sum()", "torch_compute"),
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
