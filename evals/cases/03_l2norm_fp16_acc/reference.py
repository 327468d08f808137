import torch
import torch.nn as nn


class Model(nn.Module):
    """Euclidean (L2) norm of each row of a float16 [n_rows, n_cols] matrix; output [n_rows] float16."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=2, dim=-1)


n_rows = 32
n_cols = 2000


def get_inputs():
    x = torch.randn(n_rows, n_cols, dtype=torch.float16) * 8.0
    return [x]


def get_init_inputs():
    return []
