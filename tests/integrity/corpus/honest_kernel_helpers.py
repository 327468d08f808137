"""Honest softmax whose kernel calls what kernels may call: a `@triton.jit` helper of the file,
another passed as a constexpr, `tl.math`, builtins, and methods of its own values.

reference: softmax
expect: clean
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_max(x):
    return tl.max(x, axis=0)


@triton.jit
def _exp(x):
    return tl.math.exp(x)


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, EXP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < min(n_cols, BLOCK)
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = EXP(x - _row_max(x))
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * y_stride + offs, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        y = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        _softmax_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), _exp,
                                   BLOCK=triton.next_power_of_2(n_cols))
        return y.view(shape)
