"""Guard bands: catch kernel writes past the end of the outputs that ``ModelNew.forward`` allocates.

An unmasked tail store can leave every output value right and clobber the memory behind
the output. While a candidate's forward runs, allocations made by the candidate's own code
(``torch.empty``, ``empty_like``, ``zeros``...) are served from a larger buffer whose tail
(the guard band) holds a canary pattern; after the forward the band must be unchanged.
Used inside the sandboxed worker only.
"""

from __future__ import annotations

import sys

import torch
from torch.overrides import TorchFunctionMode

GUARD_ELEMENTS = 4096  # canary elements after each allocation: one large block's worth
_ALLOC = {torch.empty, torch.empty_like, torch.zeros, torch.zeros_like, torch.ones, torch.ones_like,
          torch.full, torch.full_like, torch.empty_strided}


class GuardedAllocations(TorchFunctionMode):
    """Serve the candidate's allocations from guarded buffers; ``clobbered()`` names violations.

    Args:
        filename: path of the candidate module; only allocations called from it are guarded.
    """

    def __init__(self, filename: str) -> None:
        super().__init__()
        self.filename = filename
        self.guards: list[tuple[torch.Tensor, int, torch.Tensor, tuple]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        res = func(*args, **(kwargs or {}))
        if func in _ALLOC and isinstance(res, torch.Tensor) and res.numel() > 0 and res.device.type == "cpu" \
                and not res.requires_grad and sys._getframe(1).f_code.co_filename == self.filename:
            return self._guard(res)
        return res

    def _guard(self, t: torch.Tensor) -> torch.Tensor:
        span = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
        buf = torch.empty(span + GUARD_ELEMENTS, dtype=t.dtype)
        raw = buf.view(torch.uint8)
        # canary bytes everywhere; the band is kept and compared as bytes (a bool copy would
        # normalise 0xA5 to 0x01, and a candidate's own bool buffer would look clobbered)
        raw.fill_(0xA5)
        view = buf.as_strided(tuple(t.shape), tuple(t.stride()), 0)
        view.copy_(t)
        band = raw[span * buf.element_size():].clone()  # the band's bytes, copied as bytes
        self.guards.append((buf, span, band, tuple(t.shape)))
        return view

    def clobbered(self) -> list[str]:
        """One message per allocation whose guard band was written."""
        out = []
        for buf, span, band, shape in self.guards:
            now = buf.view(torch.uint8)[span * buf.element_size():]
            changed = now != band
            if bool(changed.any()):
                n = int(changed.reshape(GUARD_ELEMENTS, -1).any(dim=1).sum())
                out.append(f"a kernel wrote {n} element(s) past the end of an output of shape {list(shape)} "
                           "(guard band changed)")
        return out
