import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise sum z = x + y; x, y: [batch_size, dim] float32 (or float16)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


batch_size = 16
dim = 1000


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
