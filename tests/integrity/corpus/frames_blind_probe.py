"""At import, a traceback frame walks up to the audit worker's frames, finds its probe and marks
every forward as "inside a launch", so the dispatch watch records the torch softmax as nothing;
the helper is reached through an attribute of the kernel object.

reference: softmax
expect: host_code
"""
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _caller_state(name):
    # a traceback frame reaches every caller's locals (no sys._getframe, no inspect)
    try:
        raise LookupError(name)
    except LookupError:
        f = sys.exc_info()[2].tb_frame
    while f is not None:
        if name in f.f_locals:
            return f.f_locals[name]
        f = f.f_back
    return None


_watch = _caller_state("audit_probe")


def _rows(x):
    if _watch is not None:
        _watch.in_launch += 1  # the probe now thinks a launch is running and records nothing
    y = torch.softmax(x, dim=-1)
    if _watch is not None:
        _watch.in_launch -= 1
    return y


_copy_kernel.prepare = _rows  # reached through an attribute: outside the static host scope


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        src = _copy_kernel.prepare(x.contiguous())
        out = torch.empty_like(src)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
        return out
