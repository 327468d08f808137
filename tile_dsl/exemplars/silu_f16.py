CATEGORY = "activation"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)


batch_size, dim = 4, 255  # small: the emulator's inexact fp16 Cast is slow (about 0.25 ms per element)


def get_inputs():
    return [torch.randn(batch_size, dim).half()]


def get_init_inputs():
    return []
'''


def program(k):
    x = k.input("x", "f16")
    y = k.output("y", "f16", shape="like:x")
    for blk in k.split(x.numel, blocks=4):
        for t in k.tiles(blk, 2048):
            xf = k.cast(k.copy_in(x, t), "f32")  # fp16 in, compute in fp32
            sig = k.reciprocal(k.exp(-xf) + 1.0)
            k.copy_out(y, t, k.cast(xf * sig, "f16"))
