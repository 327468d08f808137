CATEGORY = "activation"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size, dim = 16, 1000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def program(k):
    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="like:x")
    for blk in k.split(x.numel, blocks=8):
        for t in k.tiles(blk, 1024):
            xb = k.copy_in(x, t)
            k.copy_out(y, t, k.relu(xb))
