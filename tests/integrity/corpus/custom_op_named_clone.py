"""Torch softmax inside a `torch.library.custom_op` named `clone`: the dispatch watch filed ops by
their bare name (movement), and a custom op's body runs with the watch off.

reference: softmax
expect: host_code
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


# An op whose *name* is "clone": the audit's dispatch watch files it under data movement,
# and whatever runs inside its implementation runs with the watch switched off.
@torch.library.custom_op("rowops::clone", mutates_args=())
def _rows(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


_copy_kernel.stage = _rows  # reached through an attribute: outside the static host scope


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        src = _copy_kernel.stage(x.contiguous())
        out = torch.empty_like(src)
        n = out.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](src, out, n, BLOCK=1024)
        return out
