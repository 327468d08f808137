"""A plain Python function passed to the kernel as a constexpr and called from its body: the
static rule allows calling a parameter (a `@triton.jit` function passed that way is honest)
and the helper is reached through a dict, out of the static scope, so the audit run's watch
of torch ops inside the launch catches the softmax it computes.

reference: softmax
expect: launch_callable
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


class _Rows:
    src = None
    dst = None


def _row_helper(row):
    r = int(row.handle.data.item()) if hasattr(row, "handle") else int(row)
    _Rows.dst[r].copy_(torch.softmax(_Rows.src[r], dim=-1))
    return row


_HELPERS = {"row": _row_helper}


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, HELP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    row = HELP(row)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    y = tl.load(y_ptr + row * y_stride + offs, mask=mask)
    tl.store(y_ptr + row * y_stride + offs, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        y = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        _Rows.src, _Rows.dst = x2, y
        _softmax_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), _HELPERS["row"],
                                   BLOCK=triton.next_power_of_2(n_cols))
        return y.view(shape)
