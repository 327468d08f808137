"""Static integrity checks in both directions: honest kernels pass, cheats are caught."""

import pytest

from tools.integrity.static_checks import run_static_checks

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


# ------------------------------------------------------------------ host-code allowlist (tools.integrity.host_allowlist)
def _host(extra_import: str, forward_line: str) -> str:
    src = HONEST.replace("import torch\n", extra_import + "import torch\n", 1)
    return src.replace("        return y.view(x.shape)", forward_line + "\n        return y.view(x.shape)")


@pytest.mark.parametrize("imp,line", [
    ("import numpy as np\n", "        y = torch.from_numpy(np.exp(x.numpy()))"),
    ("import math\n", "        y = torch.tensor([math.exp(v) for v in x.tolist()])"),
    ("", "        y = getattr(x, 'soft' + 'max')(-1)"),
    ("", "        y = x.__matmul__(x)"),
    ("import operator\n", "        y = operator.methodcaller('exp')(x)"),
    ("import marshal\n", "        pass"),
    ("import threading\n", "        pass"),
    ("import sys\n", "        y = sys.modules['torch'].softmax(x, -1)"),
    ("", "        torch._C._DisableTorchDispatch()"),
    ("", "        grid = lambda meta: (torch.softmax(x, -1).numel(),)"),
    ("import os\n", "        os.kill(os.getppid(), 9)"),
])
def test_host_code_outside_the_allowlist_is_an_error_with_its_line(imp, line):
    src = _host(imp, line)
    found = [f for f in run_static_checks(src) if f.check == "host_code"]
    assert found and found[0].severity == "error" and found[0].message.startswith("line ")


def test_fake_jit_decorator_and_import_time_work_are_errors():
    fake = HONEST.replace("@triton.jit\n", "def jit(f):\n    return f\n\n\n@jit\n")
    assert any(f.check == "host_code" and "not triton.jit" in f.message for f in run_static_checks(fake))
    at_import = HONEST.replace("\n\nclass ModelNew", "\n_T = torch.softmax(torch.zeros(3), 0)\n\n\nclass ModelNew")
    assert any(f.check == "host_code" and "at import" in f.message for f in run_static_checks(at_import))


def test_honest_launch_parameters_views_and_main_guard_are_allowed():
    src = _host("import math\n", "        block = 1 << math.ceil(math.log2(max(n, 1)))\n"
                                 "        grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)\n"
                                 "        y = y.reshape(-1).view(x.shape).to(x.dtype)")
    src += "\n\nif __name__ == '__main__':\n    import numpy as np\n    print(np.zeros(3), torch.randn(3).tolist())\n"
    assert run_static_checks(src) == []


def test_tf32_dot_behind_a_constexpr_is_an_error_and_atomics_a_warning():
    dot = HONEST.replace("def _k(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):",
                         "def _k(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, PREC: tl.constexpr = 'tf32'):")
    dot = dot.replace("    tl.store(y_ptr", "    a = tl.dot(tl.zeros((16, 16), tl.float32), tl.zeros((16, 16), tl.float32),"
                                          " input_precision=PREC)\n    tl.atomic_add(y_ptr, 1.0)\n    tl.store(y_ptr")
    found = {(f.check, f.severity) for f in run_static_checks(dot)}
    assert ("tf32_dot", "error") in found and ("atomic_order", "warning") in found
    plain = dot.replace(", input_precision=PREC", "")
    assert ("tf32_dot", "warning") in {(f.check, f.severity) for f in run_static_checks(plain)}
    ieee = dot.replace("input_precision=PREC", "input_precision='ieee'")
    assert "tf32_dot" not in {f.check for f in run_static_checks(ieee)}


def test_poisoned_copy_rewrites_only_real_kernel_stores():
    from tools.integrity.causality import POISON, poison_kernels
    src = HONEST + "\n\ndef helper(t):\n    t.store(1, 2)\n    return t\n"
    new, count = poison_kernels(src)
    assert count == 1 and f"* 0 + {POISON}" in new
    assert "t.store(1, 2)" in new  # not a kernel: untouched
    assert poison_kernels("import torch\n") is None
