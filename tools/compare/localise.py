"""Error localisation: how a wrong output relates to the reference output.

A near-miss is usually wrong in a structured way, and the structure names the fault: an
output that is the reference shifted by one along a dimension is an off-by-one index; the
transpose is swapped row/column indices; a constant factor is a wrong normaliser or
constant; swapped element pairs are RoPE's interleaved-vs-half-split confusion; all zeros
is a kernel that stored nothing (a mask that is always false); bad elements only past the
last full block of a dimension are a missing tail mask. Each test here compares the whole
candidate output with a transformed reference under the comparison tolerance and returns a
relation name the diagnosis and the knowledge base key on.

Everything runs in the parent process on output tensors read back from the sandbox.
"""

from __future__ import annotations

import torch

#: Relation names and what each says about the fault (the diagnosis' vocabulary).
RELATIONS = {
    "zeros": "the output is all zeros where the reference is not (nothing stored, or a mask always false)",
    "sign_flipped": "the output is the reference negated",
    "scaled": "the output is the reference times a constant (a wrong normaliser or constant)",
    "constant_offset": "the output is the reference plus a constant",
    "transposed": "the output is the reference transposed (row and column indices swapped)",
    "shifted_by_one": "the output is the reference shifted by one position along a dimension (off-by-one index)",
    "pairs_swapped": "adjacent element pairs of the last dimension are swapped (interleaved vs half-split pairing)",
    "halves_swapped": "the two halves of the last dimension are swapped (half-split rotation)",
    "stale_tail": "only elements past the last full block of a dimension are wrong (tail mask or grid)",
    "row_scaled": "each row is the reference times its own factor (a per-row normaliser: variance, a norm, "
                  "or a per-row value read as a scalar)",
    "row_offset": "each row is the reference plus its own constant (a per-row log-sum-exp or max is wrong)",
    "periodic": "wrong elements recur at the same positions within every block of a dimension (a per-block "
                "index or mask offset)",
}

#: A relation is named when the transformed reference matches at least this share of the
#: elements the plain comparison found wrong (and the transform is not the identity there).
MATCH_SHARE = 0.95


def _close(c: torch.Tensor, r: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    return (c - r).abs() <= atol + rtol * r.abs()


def _share(match: torch.Tensor, bad: torch.Tensor) -> float:
    n = int(bad.sum())
    return float((match & bad).sum()) / n if n else 0.0


def relations(cand: torch.Tensor, ref: torch.Tensor, atol: float, rtol: float,
              blocks: list[int] | tuple = ()) -> list[str]:
    """Name the structured relations between a wrong output and the reference.

    Args:
        cand: candidate output, any shape, same shape as ``ref``; any floating dtype.
        ref: reference output.
        atol: absolute tolerance of the comparison (``tools.compare.outputs.tolerance``).
        rtol: relative tolerance.
        blocks: block sizes the candidate launched with (constexpr values), for ``stale_tail``.

    Returns:
        Relation names from ``RELATIONS``, each with its parameter after a colon
        (``"shifted_by_one:dim=1,+1"``, ``"scaled:0.5"``); empty when none holds or the
        output is right. Non-finite elements are ignored.
    """
    if cand.shape != ref.shape or ref.numel() == 0:
        return []
    c = cand.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    finite = torch.isfinite(c) & torch.isfinite(r)
    c = torch.where(finite, c, torch.zeros_like(c))
    r = torch.where(finite, r, torch.zeros_like(r))
    bad = ~_close(c, r, atol, rtol) & finite
    if not bad.any():
        return []
    out: list[str] = []
    big = r.abs() > atol + rtol * r.abs().max()

    if float((c.abs() <= atol).float()[bad].mean()) >= MATCH_SHARE and bool(big[bad].any()):
        out.append("zeros")
    if _share(_close(c, -r, atol, rtol), bad & big) >= MATCH_SHARE and bool((bad & big).any()):
        out.append("sign_flipped")
    denom = float((r * r).sum())
    if denom > 0 and "zeros" not in out and "sign_flipped" not in out:
        k = float((c * r).sum()) / denom
        if abs(k - 1.0) > 10 * rtol and abs(k) > 1e-6 and _share(_close(c, k * r, atol, rtol), bad) >= MATCH_SHARE:
            out.append(f"scaled:{k:.4g}")
    off = float((c - r)[bad].median())
    if "zeros" not in out and abs(off) > 10 * atol and _share(_close(c - off, r, atol, rtol), bad) >= MATCH_SHARE:
        out.append(f"constant_offset:{off:+.4g}")
    if r.dim() >= 2 and r.shape[-1] == r.shape[-2] and r.shape[-1] > 1:
        if float(_close(c, r.transpose(-1, -2), atol, rtol).float().mean()) >= MATCH_SHARE:
            out.append("transposed")
    for d in range(r.dim()):
        n = r.shape[d]
        if n < 3:
            continue
        for step in (1, -1):
            # candidate[i] == reference[i - step] on the overlap
            cs = c.narrow(d, max(step, 0), n - 1)
            rs = r.narrow(d, max(-step, 0), n - 1)
            bs = bad.narrow(d, max(step, 0), n - 1)
            if bs.any() and _share(_close(cs, rs, atol, rtol), bs) >= MATCH_SHARE:
                out.append(f"shifted_by_one:dim={d},{step:+d}")
                break
        else:
            continue
        break
    last = r.shape[-1] if r.dim() else 0
    if last >= 2 and last % 2 == 0:
        pairs = r.reshape(*r.shape[:-1], last // 2, 2).flip(-1).reshape(r.shape)
        if _share(_close(c, pairs, atol, rtol), bad) >= MATCH_SHARE:
            out.append("pairs_swapped")
        halves = torch.cat([r[..., last // 2:], r[..., : last // 2]], dim=-1)
        if _share(_close(c, halves, atol, rtol), bad) >= MATCH_SHARE:
            out.append("halves_swapped")
    if r.dim() >= 2 and r.shape[-1] >= 2 and not any(x.split(":")[0] in ("scaled", "constant_offset", "zeros",
                                                                         "sign_flipped") for x in out):
        rows_c, rows_r = c.reshape(-1, r.shape[-1]), r.reshape(-1, r.shape[-1])
        den = (rows_r * rows_r).sum(-1)
        k = torch.where(den > 0, (rows_c * rows_r).sum(-1) / den.clamp_min(1e-300), torch.ones_like(den))
        if float(_close(rows_c, k[:, None] * rows_r, atol, rtol * 4).float().mean()) >= MATCH_SHARE \
                and float((k - 1.0).abs().max()) > 10 * rtol:
            out.append("row_scaled")
        else:
            off = (rows_c - rows_r).median(dim=-1).values
            if float(_close(rows_c - off[:, None], rows_r, atol * 4, rtol * 4).float().mean()) >= MATCH_SHARE \
                    and float(off.abs().max()) > atol:
                out.append("row_offset")
    tail = stale_tail(bad, blocks)
    if tail:
        out.append(tail)
    else:
        per = periodic(bad, blocks)
        if per:
            out.append(per)
    return out


def periodic(bad: torch.Tensor, blocks: list[int] | tuple) -> str | None:
    """``"periodic:dim=D,block=B,offsets=K"`` when bad elements span several blocks at few offsets within each.

    Along each dimension (and the flattened tensor), the bad indices of the whole blocks taken
    modulo a block size ``B`` fall on at most ``B // 8`` distinct offsets, and every one of them
    is wrong in every whole block (at least two): the same lanes of every block are wrong (the
    first or last lane of each block, say), not scattered columns.

    Returns:
        The relation for the first dimension and largest block size that fit, or None.
    """
    if not bad.any():
        return None
    views = [(d, bad.movedim(d, -1).reshape(-1, bad.shape[d])) for d in range(bad.dim())]
    views.append(("flat", bad.reshape(1, -1)))
    for d, m in views:
        cols = m.any(dim=0).nonzero().flatten()
        n = m.shape[-1]
        for b in sorted({int(x) for x in blocks if 4 <= int(x) < n}, reverse=True):
            full = cols[cols < (n // b) * b]  # whole blocks only: a tail block may hold fewer lanes
            if full.numel() == 0:
                continue
            offs, per_off = torch.unique(full % b, return_counts=True)
            blocks_hit = torch.unique(full // b).numel()
            # the same few lanes in every whole block: each offset recurs in (nearly) every block
            if blocks_hit >= 2 and offs.numel() <= max(1, b // 8) and bool((per_off >= blocks_hit).all()) \
                    and blocks_hit == n // b:
                return f"periodic:dim={d},block={b},offsets={offs.numel()}"
    return None


def stale_tail(bad: torch.Tensor, blocks: list[int] | tuple) -> str | None:
    """``"stale_tail:dim=D,block=B"`` when every bad element lies past the last full block along a dimension.

    Args:
        bad: boolean mask of wrong elements (reference output shape).
        blocks: candidate block sizes (constexpr values), powers of two usually.

    Returns:
        The relation with the first dimension and block size that explain all bad elements, or None.
        The flattened tensor counts as one more dimension (a 1-D launch over ``numel``).
    """
    if not bad.any():
        return None
    views = [(d, bad.movedim(d, -1).reshape(-1, bad.shape[d])) for d in range(bad.dim())]
    views.append(("flat", bad.reshape(1, -1)))
    for d, m in views:
        n = m.shape[-1]
        cols = m.any(dim=0).nonzero().flatten()
        for b in sorted({int(x) for x in blocks if 1 < int(x) < n}, reverse=True):
            full = (n // b) * b
            if full < n and int(cols.min()) >= full:
                return f"stale_tail:dim={d},block={b}"
    return None
