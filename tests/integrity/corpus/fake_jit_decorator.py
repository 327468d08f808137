"""A home-made decorator named `jit` makes a torch helper pass for a kernel.

reference: softmax
expect: host_code
"""
import torch
import torch.nn as nn


def jit(fn):
    return fn


@jit
def _helper(x, out):
    out.copy_(torch.softmax(x, -1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        _helper(x, out)
        return out
