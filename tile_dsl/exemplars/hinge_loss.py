CATEGORY = "loss"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 4099


def get_inputs():
    return [torch.randn(batch_size), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
'''


def program(k):
    p = k.input("predictions", "f32")
    y = k.input("targets", "f32")
    out = k.output("loss", "f32", shape="scalar")
    for blk in k.split(p.numel, blocks=1):
        acc = k.var(0.0)
        for t in k.tiles(blk, 2048):
            margin = 1.0 - k.copy_in(p, t) * k.copy_in(y, t)
            acc.add_(k.reduce_sum(k.relu(margin)))
        k.store(out, acc / k.scalar(p.numel))
