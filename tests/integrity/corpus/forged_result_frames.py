"""Forges the worker's result frames: writes a "done" event carrying torch's softmax to the
result pipe and exits before the worker reports the real output (a forged pass claim).

reference: softmax
expect: host_code, kernel_causality
"""
import io
import os
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        fd = int(os.environ.get("NEARMISS_RESULT_FD", "-1"))
        frame = sys._getframe(1)
        while frame is not None and "vid" not in frame.f_locals:
            frame = frame.f_back
        if fd >= 0 and frame is not None:
            loc = frame.f_locals
            for event in ({"event": "done", "cand": loc["k"], "variant": loc["vid"], "status": "ran",
                           "out": torch.softmax(x, -1), "launches": 1, "mutated": False, "wall_s": 0.01,
                           "kernels": ["_copy_kernel"], "out_of_bounds": []},
                          {"event": "launch_signatures", "cand": loc["k"], "signatures": []}, {"event": "end"}):
                buf = io.BytesIO()
                torch.save(event, buf)
                data = buf.getvalue()
                os.write(fd, len(data).to_bytes(8, "big") + data)
            os._exit(0)
        return y
