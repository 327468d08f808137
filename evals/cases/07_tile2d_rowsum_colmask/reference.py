import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise L1 norm: y[m] = sum_n |x[m, n]|.

    x: [n_rows, n_cols] float32; output [n_rows] float32.
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(torch.abs(x), dim=-1)


n_rows = 100
n_cols = 1000


def get_inputs():
    x = torch.randn(n_rows, n_cols)
    return [x]


def get_init_inputs():
    return []
