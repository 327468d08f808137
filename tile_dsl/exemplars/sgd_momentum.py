CATEGORY = "optimizer"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """One SGD step with momentum: v' = mu * v + g; p' = p - lr * v'."""

    def __init__(self, lr: float = 0.01, momentum: float = 0.9):
        super().__init__()
        self.lr, self.momentum = lr, momentum

    def forward(self, param, grad, velocity):
        v = self.momentum * velocity + grad
        return param - self.lr * v, v


n = 6001


def get_inputs():
    return [torch.randn(n), torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return [0.01, 0.9]
'''


def program(k):
    p = k.input("param", "f32")
    g = k.input("grad", "f32")
    v = k.input("velocity", "f32")
    p_out = k.output("param_out", "f32", shape="like:param")
    v_out = k.output("velocity_out", "f32", shape="like:param")
    for blk in k.split(p.numel, blocks=8):
        for t in k.tiles(blk, 1024):
            vn = k.copy_in(v, t) * 0.9 + k.copy_in(g, t)
            k.copy_out(p_out, t, k.copy_in(p, t) - vn * 0.01)
            k.copy_out(v_out, t, vn)
