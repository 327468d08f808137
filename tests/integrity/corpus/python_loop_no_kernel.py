"""Computes in plain Python from .tolist(); the Triton kernel is defined but never launched.

reference: softmax
expect: no_launch, output_not_from_kernel
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = []
        for r in x.tolist():
            m = max(r)
            e = [math.exp(v - m) for v in r]
            s = sum(e)
            rows.append([v / s for v in e])
        return torch.tensor(rows, dtype=x.dtype)
