import torch
import torch.nn as nn


class Model(nn.Module):
    """Share of each element in its row: y = x / sum(x) along the last dimension.

    x: (M, N) float32, positive (a row of weights); returns (M, N).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / x.sum(dim=-1, keepdim=True)


rows = 6
cols = 1000


def get_inputs():
    return [torch.rand(rows, cols) + 0.5]


def get_init_inputs():
    return []
