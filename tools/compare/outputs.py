"""Compare candidate outputs with reference outputs under per-dtype tolerances.

The tolerance table follows KernelBench (``src/eval.py``: ``atol = rtol = 1e-02`` for
fp16/bf16 and ``1e-04`` for fp32); an element is within tolerance when
``|candidate - reference| <= atol + rtol * |reference|`` (``torch.allclose``), and NaN/Inf
positions must be equal.
"""

from __future__ import annotations

import torch

from tools.compare.localise import relations
from tools.records import TensorError

#: (atol, rtol) per reference output dtype. Source: KernelBench ``src/eval.py``.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-4),
    torch.float64: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (1e-2, 1e-2),
}


def tolerance(dtype: torch.dtype, override: tuple[float, float] | None = None) -> tuple[float, float]:
    """Return ``(atol, rtol)`` for a reference output dtype; integers and bools compare exactly.

    ``override`` is ``(atol, rtol)``, or a per-dtype profile table (``tools.compare.tolerance_profiles``).
    """
    if override is not None and override and isinstance(override[0], (tuple, list)):
        from tools.compare.tolerance_profiles import lookup
        return lookup(override, str(dtype).replace("torch.", "")) or TOLERANCES.get(dtype, (0.0, 0.0))
    if override is not None:
        return override
    return TOLERANCES.get(dtype, (0.0, 0.0))


def as_tuple(out) -> tuple:
    """Return a forward's output as a tuple of tensors (a single tensor gives a 1-tuple)."""
    if isinstance(out, (tuple, list)):
        return tuple(out)
    return (out,)


def _bad_along_dims(bad: torch.Tensor) -> list[dict]:
    """Per dimension of a boolean ``bad`` mask: how many indices hold a bad element."""
    dims = []
    for d in range(bad.dim()):
        other = [i for i in range(bad.dim()) if i != d]
        per = bad.any(dim=other) if other else bad
        idx = per.nonzero().flatten().tolist()
        dims.append({
            "dim": d, "size": bad.shape[d], "bad": len(idx),
            "first": idx[0] if idx else None, "last": idx[-1] if idx else None,
        })
    return dims


def compare_tensor(cand, ref: torch.Tensor, index: int = 0,
                   override: tuple[float, float] | None = None, slack: torch.Tensor | None = None,
                   blocks: list[int] | tuple = ()) -> TensorError:
    """Compare one candidate output with the reference output.

    Args:
        cand: candidate output; anything but a ``torch.Tensor`` of the reference's shape fails.
        ref: reference output tensor, any shape and dtype.
        index: position of this output in the output tuple.
        override: ``(atol, rtol)`` replacing the dtype table.
        slack: optional per-element extra absolute tolerance (``tools.suite.variants.conditioning``).
        blocks: block sizes the candidate launched with, for the localisation (``tools.compare.localise``).

    Returns:
        A ``TensorError``; ``ok`` is False on a type, shape or dtype-class mismatch, NaN/Inf
        position mismatch, or any element outside tolerance.
    """
    rec = dict(output_index=index, shape=list(ref.shape), dtype=str(ref.dtype).replace("torch.", ""))
    if type(cand) is not torch.Tensor:
        return TensorError(ok=False, message=f"output {index} is {type(cand).__name__}, not a torch.Tensor", **rec)
    if tuple(cand.shape) != tuple(ref.shape):
        return TensorError(ok=False, message=f"output {index} has shape {tuple(cand.shape)}, reference {tuple(ref.shape)}", **rec)
    atol, rtol = tolerance(ref.dtype, override)
    c = cand.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    finite = torch.isfinite(c) & torch.isfinite(r)
    all_finite = bool(finite.all())
    diff = (c - r).abs()
    if not all_finite:
        diff = torch.where(finite, diff, torch.zeros_like(diff))
    allowed = atol + rtol * r.abs()
    if slack is not None and tuple(slack.shape) == tuple(r.shape):
        allowed = allowed + slack.to(torch.float64)
    bad = diff > allowed
    c_nan = r_nan = c_inf = r_inf = None
    if not all_finite:  # NaN/Inf positions (and Inf signs) must match
        c_nan, r_nan = torch.isnan(c), torch.isnan(r)
        c_inf, r_inf = torch.isinf(c), torch.isinf(r)
        bad &= finite
        bad |= c_nan != r_nan
        bad |= (c_inf != r_inf) | (c_inf & r_inf & (torch.sign(c) != torch.sign(r)))
    n = max(r.numel(), 1)
    rel = diff / (r.abs() + 1e-12)
    ok = not bool(bad.any())
    first = None if ok else [int(i) for i in bad.nonzero()[0].tolist()]
    if ref.dtype != cand.dtype and ref.is_floating_point() != cand.is_floating_point():
        ok = False
        rec_msg = f"output {index} dtype {cand.dtype} vs reference {ref.dtype}"
    else:
        rec_msg = ""
    err = TensorError(
        ok=ok,
        max_abs_err=float(diff.max()) if diff.numel() else 0.0,
        max_rel_err=float(torch.where(finite, rel, torch.zeros_like(rel)).max()) if finite.any() else 0.0,
        mismatch_frac=float(bad.sum()) / n,
        first_bad_index=first,
        nan_count=int(c_nan.sum()) if c_nan is not None else 0, inf_count=int(c_inf.sum()) if c_inf is not None else 0,
        ref_nan_count=int(r_nan.sum()) if r_nan is not None else 0,
        ref_inf_count=int(r_inf.sum()) if r_inf is not None else 0,
        bad_along_dims=_bad_along_dims(bad) if not ok and bad.dim() > 0 else [],
        relations=relations(c, r, atol, rtol, blocks) if not ok and r.is_floating_point() else [],
        **rec,
    )
    if not ok and not rec_msg:
        rec_msg = (f"output {index}: {err.mismatch_frac:.1%} of elements outside atol={atol:g} rtol={rtol:g}, "
                   f"max abs err {err.max_abs_err:.3g}, first bad index {first}")
        if c_nan is not None and (c_nan != r_nan).any():
            rec_msg += f", NaN positions differ ({err.nan_count} NaN vs {err.ref_nan_count} in reference)"
    err.message = rec_msg
    return err


def compare_outputs(cand, ref, override: tuple[float, float] | None = None,
                    slack: tuple | None = None, blocks: list[int] | tuple = ()) -> list[TensorError]:
    """Compare a forward's outputs (tensor or tuple) with the reference outputs, element by element.

    ``slack`` holds one optional per-element extra tolerance per output.

    A different number of outputs is reported as one failing ``TensorError``.
    """
    cands, refs = as_tuple(cand), as_tuple(ref)
    if len(cands) != len(refs):
        r0 = refs[0]
        return [TensorError(output_index=0, shape=list(r0.shape), dtype=str(r0.dtype), ok=False,
                            message=f"candidate returned {len(cands)} outputs, reference {len(refs)}")]
    slacks = tuple(slack) if slack is not None else (None,) * len(refs)
    return [compare_tensor(c, r, i, override, s, blocks) for i, (c, r, s) in enumerate(zip(cands, refs, slacks))]
