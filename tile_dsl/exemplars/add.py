CATEGORY = "math"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


n = 10007


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
'''


def program(k):
    a = k.input("a", "f32")
    b = k.input("b", "f32")
    c = k.output("c", "f32", shape="like:a")
    for blk in k.split(a.numel, blocks=8):
        for t in k.tiles(blk, 512):
            k.copy_out(c, t, k.copy_in(a, t) + k.copy_in(b, t))
