"""Failing-input minimisation: shrink the smallest failing variant before screening edits.

Every screened edit runs on one failing variant; on the interpreter its cost grows with the
number of elements (one program after another), so a fault that shows at 2 rows should not
be screened at 64. ``minimise`` bisects the dimensions of the failing variant's inputs while
the failure persists, in rounds: each round derives, in the sandboxed reference process, the
inputs with every distinct dimension size ``s`` narrowed to ``s // 2`` and ``s // 8`` (one
size at a time, in every input that has it; views keep their strides, index tensors are
wrapped into range), their reference outputs (``tools.suite.variants.fill_expected``: the reference
decides which inputs it accepts), and runs the candidate on all of them in one evaluation.
The smallest one that still fails becomes the next round's start. It ends when no smaller
input fails, after ``MAX_ROUNDS`` rounds, at ``MIN_NUMEL`` elements, or when the evaluation
budget runs out; every evaluation counts (``Runner.evaluations``).

The shrunk variants join the runner's suite under the split ``minimised`` (never search or
held-out: the repair is still judged on the full suite); the suite folder that triage
fingerprinted is left unchanged.
"""

from __future__ import annotations

import os

#: At most this many bisection rounds (each: one reference process and one evaluation).
MAX_ROUNDS = 8
#: Stop shrinking below this many input elements: a process start costs more than such a run.
MIN_NUMEL = 256
#: Only variants with at least this many input elements are minimised.
MINIMISE_FROM = 4096
#: At most this many distinct dimension sizes are shrunk per round (largest first).
MAX_SIZES = 6


def shrink_candidates(inputs: list, prefix: str) -> list[tuple[str, str, list]]:
    """Inputs with one distinct dimension size narrowed (to half and to an eighth).

    Args:
        inputs: a variant's inputs (tensors and other values).
        prefix: id prefix of the new variants.

    Returns:
        ``[(id, description, inputs)]``, largest size first. Views keep their strides (a
        stride-0 or strided input stays one); integer tensors whose values index the shrunk
        size are wrapped into range.
    """
    import torch

    sizes = sorted({s for x in inputs if isinstance(x, torch.Tensor) for s in x.shape if s > 1}, reverse=True)
    out = []
    for s in sizes[:MAX_SIZES]:
        for new in sorted({max(1, s // 2), max(1, s // 8)}, reverse=True):
            if new >= s:
                continue
            shrunk = []
            for x in inputs:
                if not isinstance(x, torch.Tensor):
                    shrunk.append(x)
                    continue
                y = x
                for d, n in enumerate(x.shape):
                    if n == s:
                        y = y.narrow(d, 0, new)
                if not y.is_floating_point() and y.dtype != torch.bool and y.numel() and int(y.min()) >= 0 \
                        and int(y.max()) < s:
                    y = y % new
                shrunk.append(y)
            out.append((f"{prefix}/{s}->{new}", f"dimensions of size {s} narrowed to {new}", shrunk))
    return out


def derive_shrunk(ref, variant: dict, init_inputs: list, prefix: str) -> tuple[list[dict], dict, list[dict]]:
    """The shrunk variants of one variant that the reference accepts, with its outputs on them.

    Args:
        ref: the reference module (``Model``...), already loaded.
        variant: ``{"id", "inputs", "init"}`` of the variant to shrink.
        init_inputs: the suite's constructor inputs (used when the variant has none of its own).
        prefix: id prefix of the new variants.

    Returns:
        ``(inputs, expected, meta)``: ``[{"id", "inputs", "init"}]``, variant id ->
        ``{"out", "slack"}`` and the variants' metadata (split ``minimised``).
    """
    import torch

    from tools.suite.variants import Variant, fill_expected

    init: list = variant["init"] if variant.get("init") is not None else init_inputs
    variants = [Variant(i, "minimised", 1, f"{variant['id']}: {d}", xs, init=variant.get("init"))
                for i, d, xs in shrink_candidates(variant["inputs"], prefix)]
    kept = []
    for v in variants:
        try:
            kept += fill_expected(ref, [v], init)
        except Exception:  # noqa: BLE001 - the reference refuses these inputs: not a variant
            continue
    meta = [{"id": v.id, "split": "minimised", "seed": 1, "description": v.description,
             "numel": sum(x.numel() for x in v.inputs if isinstance(x, torch.Tensor)),
             "init": repr(v.init) if v.init is not None else None, "meta": {"minimised_from": variant["id"]},
             "shapes": [list(x.shape) if isinstance(x, torch.Tensor) else repr(x) for x in v.inputs],
             "dtypes": [str(x.dtype).replace("torch.", "") if isinstance(x, torch.Tensor) else type(x).__name__
                        for x in v.inputs]} for v in kept]
    return ([{"id": v.id, "inputs": v.inputs, "init": v.init} for v in kept],
            {v.id: {"out": v.expected, "slack": v.slack} for v in kept}, meta)


def _derive(runner, variant_id: str, round_no: int) -> list[dict]:
    """Run ``cmd_shrink`` in the sandbox and adopt its variants into ``runner``; their metadata."""
    from tools.sandbox.launch import run_worker

    d = os.path.join(runner.work_dir, f"minimise{round_no}")
    os.makedirs(d, exist_ok=True)
    data = runner._job_inputs([variant_id])
    if not data["variants"]:
        return []
    job = {"reference_source": runner.reference_source, "init_inputs": data["init_inputs"],
           "variant": data["variants"][0], "prefix": f"minimised{round_no}"}
    res = run_worker(["shrink"], job, {"TRITON_INTERPRET": "1"}, timeout_s=max(runner.timeout_s, 120),
                     memory_bytes=16 << 30, warm=True)
    got = next((f for f in res.frames if isinstance(f, dict) and f.get("event") == "shrink"), None)
    if res.returncode != 0 or got is None:
        return []
    return runner.extend_suite(got["inputs"], got["expected"], got["meta"])


def minimise(runner, source: str, variant_id: str, budget: int, status: str | None = None) -> tuple[str, dict, object]:
    """The smallest input, derived from ``variant_id`` by bisection, on which ``source`` still fails.

    Args:
        runner: the run's ``tools.evaluate.runner.Runner`` (suite built).
        source: the candidate whose failure is kept.
        variant_id: a variant it fails on.
        budget: evaluations this may spend (each round: one).
        status: the failure kept (``mismatch``...); None keeps any failure.

    Returns:
        ``(variant id, record, result)``: the smallest failing variant found (``variant_id`` itself
        when none smaller fails, or when it is small already), ``{"from", "to", "numel_from",
        "numel_to", "rounds", "evaluations"}``, and the candidate's ``VariantResult`` on it (None
        when it is ``variant_id``).
    """
    size = {v["id"]: v.get("numel", 0) for v in runner.variants}
    best, result = variant_id, None
    before = runner.evaluations
    rounds = 0
    record = {"from": variant_id, "numel_from": size.get(variant_id, 0)}
    while rounds < MAX_ROUNDS and size.get(best, 0) > MIN_NUMEL and runner.evaluations - before < budget:
        rounds += 1
        new = _derive(runner, best, len([v for v in runner.variants if v.get("split") == "minimised"]))
        if not new:
            break
        for v in new:
            size[v["id"]] = v.get("numel", 0)
        ev = runner.evaluate(source, [v["id"] for v in new])
        failing = [v.variant_id for v in ev.variants if v.status != "pass" and (status is None or v.status == status)]
        if not failing:
            break
        best = min(failing, key=lambda i: (size[i], i))
        result = next(v for v in ev.variants if v.variant_id == best)
    record.update({"to": best, "numel_to": size.get(best, 0), "rounds": rounds,
                   "evaluations": runner.evaluations - before})
    return best, record, result
