CATEGORY = "loss"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)


batch_size, dim = 32, 300


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def program(k):
    p = k.input("predictions", "f32")
    q = k.input("targets", "f32")
    out = k.output("loss", "f32", shape="scalar")
    for blk in k.split(p.numel, blocks=1):  # one block: a full reduction without atomics
        acc = k.var(0.0)
        for t in k.tiles(blk, 4096):
            d = k.copy_in(p, t) - k.copy_in(q, t)
            acc.add_(k.reduce_sum(d * d))
        k.store(out, acc / k.scalar(p.numel))
