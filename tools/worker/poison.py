"""Poisoned allocations: an output element the kernel never writes is never right by chance.

``torch.empty`` hands back whatever the allocator held; after an earlier forward of the
same shapes that is often the right answer, so a kernel that skips rows passes. PyTorch's
own switch, ``torch.utils.deterministic.fill_uninitialized_memory`` (effective while
``torch.use_deterministic_algorithms`` is on), fills every fresh allocation with NaN
(floating point) or the largest integer (PyTorch docs, "Reproducibility";
``torch.utils.deterministic``). The sandboxed worker turns it on for every evaluation,
search suite and audit alike.
"""

from __future__ import annotations


def enable_poison() -> bool:
    """Fill fresh allocations with NaN / max-int for the rest of this process.

    ``warn_only=True``: an operation without a deterministic implementation still runs (a
    warning on stderr), so a candidate is never refused for calling one.

    Returns:
        True when the running PyTorch has the switch (2.1 and later), else False.
    """
    import torch

    det = getattr(getattr(torch, "utils", None), "deterministic", None)
    if det is None or not hasattr(det, "fill_uninitialized_memory"):
        return False
    torch.use_deterministic_algorithms(True, warn_only=True)
    det.fill_uninitialized_memory = True
    return True
