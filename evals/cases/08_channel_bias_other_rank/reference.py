import torch
import torch.nn as nn


class Model(nn.Module):
    """Per-channel bias: y = x + b broadcast over every dimension after the channel.

    x: (N, C, *spatial) float32 (the default is (N, C, L); images come as (N, C, H, W)); b: (C,).
    """

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return x + b.view(1, -1, *([1] * (x.dim() - 2)))


batch = 4
channels = 6
length = 35


def get_inputs():
    return [torch.randn(batch, channels, length), torch.randn(channels)]


def get_init_inputs():
    return []
