CATEGORY = "optimizer"
REFERENCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """One Adagrad step: s' = s + g * g; p' = p - lr * g / (sqrt(s') + eps)."""

    def __init__(self, lr: float = 0.01, eps: float = 1e-10):
        super().__init__()
        self.lr, self.eps = lr, eps

    def forward(self, param, grad, state_sum):
        s = state_sum + grad * grad
        return param - self.lr * grad / (torch.sqrt(s) + self.eps), s


n = 5000


def get_inputs():
    return [torch.randn(n), torch.randn(n), torch.rand(n)]


def get_init_inputs():
    return [0.01, 1e-10]
'''


def program(k):
    p = k.input("param", "f32")
    g = k.input("grad", "f32")
    s = k.input("state_sum", "f32")
    p_out = k.output("param_out", "f32", shape="like:param")
    s_out = k.output("state_out", "f32", shape="like:param")
    for blk in k.split(p.numel, blocks=4):
        for t in k.tiles(blk, 1024):
            gb = k.copy_in(g, t)
            sn = k.copy_in(s, t) + gb * gb
            step = (gb * 0.01) / (k.sqrt(sn) + 1e-10)
            k.copy_out(p_out, t, k.copy_in(p, t) - step)
            k.copy_out(s_out, t, sn)
