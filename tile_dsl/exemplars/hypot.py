CATEGORY = "math"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.sqrt(x * x + y * y)


batch_size, dim = 64, 257


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def program(k):
    x = k.input("x", "f32")
    y = k.input("y", "f32")
    z = k.output("z", "f32", shape="like:x")
    for blk in k.split(x.numel, blocks=16):
        for t in k.tiles(blk, 1024):
            xb = k.copy_in(x, t)
            yb = k.copy_in(y, t)
            k.copy_out(z, t, k.sqrt(xb * xb + yb * yb))
