"""The softmax is computed by a Triton pre-run hook (`add_pre_run_hook`), which runs inside the
launch before the programs; the kernel only re-stores the output.

reference: softmax
expect: host_code, launch_callable
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    y = tl.load(y_ptr + row * y_stride + offs, mask=mask)
    tl.store(y_ptr + row * y_stride + offs, y, mask=mask)


def _prepare(x, y, n_cols, x_stride, y_stride, BLOCK):
    y.copy_(torch.softmax(x, dim=-1))


_softmax_kernel.add_pre_run_hook(_prepare)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        y = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        _softmax_kernel[(n_rows,)](x2, y, n_cols, x2.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(n_cols))
        return y.view(shape)
