import torch
import torch.nn as nn


class Model(nn.Module):
    """Row-wise log-sum-exp of temperature-scaled scores: y = logsumexp(x * scale, dim=-1).

    x: [n_rows, n_cols] float32; output [n_rows] float32.
    """

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x * self.scale, dim=-1)


n_rows = 64
n_cols = 1200
scale = 0.5


def get_inputs():
    x = torch.randn(n_rows, n_cols) - 2.0
    return [x]


def get_init_inputs():
    return [scale]
