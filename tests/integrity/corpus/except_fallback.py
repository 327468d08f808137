"""try/except around the kernel: it raises on non-power-of-two rows (tl.arange), the except branch uses torch.

reference: softmax
expect: try_except, torch_fallback
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, x_row_stride, N_COLS: tl.constexpr):
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, N_COLS)
    x = tl.load(x_ptr + row * x_row_stride + offsets)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(y_ptr + row * x_row_stride + offsets, num / tl.sum(num, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        try:
            _softmax_kernel[(x.shape[0],)](x, y, x.stride(0), N_COLS=x.shape[1])
        except Exception:
            y = torch.softmax(x, dim=-1)
        return y
