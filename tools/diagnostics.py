"""Diagnosis: turn an evaluation over the suite into named symptoms and a localisation.

Symptom names are the vocabulary the knowledge base (``kb/patterns``) matches on.
"""

from __future__ import annotations

from tools.records import EvalResult, VariantResult

SYMPTOMS = {
    "compile_error": "the candidate does not compile or import",
    "gpu_compile_error": "the interpreter runs it, Triton's compiler for a GPU target refuses it",
    "runtime_error": "the candidate raises or crashes while running",
    "timeout": "the candidate does not finish in time",
    "fails_on_default": "wrong on the reference's own inputs",
    "unaligned_size": "wrong when a size is not a multiple of the block (prime sizes)",
    "value_regime_negative": "wrong only on all-negative values",
    "value_regime_large": "wrong only on large-magnitude values",
    "value_regime_offset": "wrong only on values with a large negative offset",
    "noncontiguous": "wrong only on non-contiguous inputs",
    "nan_or_inf": "NaN or Inf where the reference is finite",
    "scalar_output": "the output is a scalar (a loss)",
    "all_elements_wrong": "nearly every output element is wrong",
    "first_row_ok": "the first row is right, later rows are wrong",
    "tail_only": "only elements near the end of a dimension are wrong",
    "reduced_precision_inputs": "fp16/bf16 inputs",
    "inputs_mutated": "the candidate writes into its inputs",
    "out_of_bounds": "a kernel writes past the end of an output allocation (guard band)",
    "no_launch": "no Triton kernel launched",
}


def _variant_kind(meta: dict) -> str:
    m = meta.get("meta", {})
    if "regime" in m:
        return "value_regime_" + m["regime"]
    if "layout" in m:
        return "noncontiguous"
    if "global" in m or "dim" in m:
        return "unaligned_size"
    return "default"


def diagnose(result: EvalResult, variants: list[dict]) -> dict:
    """Name the symptoms of a failing evaluation and localise the first fault.

    Args:
        result: an evaluation of the candidate on (part of) the suite.
        variants: suite metadata (``suite.json`` ``variants``), for each variant's kind, shapes, dtypes.

    Returns:
        ``{"symptoms": [...], "failing": [variant ids], "smallest_failing": id | None,
        "findings": [one-line strings], "summary": str}``.
    """
    meta = {v["id"]: v for v in variants}
    failing = result.failing()
    symptoms: list[str] = []

    def add(s: str) -> None:
        if s not in symptoms:
            symptoms.append(s)

    for st in ("compile_error", "runtime_error", "timeout"):
        if any(v.status == st for v in failing):
            add(st)
    kinds = {_variant_kind(meta[v.variant_id]) for v in failing if v.variant_id in meta}
    if "default" in kinds:
        add("fails_on_default")
    if "default" not in kinds:  # when the default inputs fail, the other kinds' failures say nothing more
        for k in sorted(kinds - {"default"}):
            add(k)
    if any(d in ("float16", "bfloat16") for v in variants for d in v.get("dtypes", [])):
        add("reduced_precision_inputs")
    findings: list[str] = []
    for v in failing:
        _tensor_symptoms(v, add)
        if v.inputs_mutated:
            add("inputs_mutated")
        if v.out_of_bounds:
            add("out_of_bounds")
        if v.status != "timeout" and v.launches == 0 and v.status == "mismatch":
            add("no_launch")
    size = {v["id"]: v.get("numel", 0) for v in variants}
    smallest = min((v.variant_id for v in failing), key=lambda i: (size.get(i, 0), i), default=None)
    for v in failing[:6]:
        m = meta.get(v.variant_id, {})
        findings.append(f"{v.variant_id} ({m.get('description', '')}; shapes {m.get('shapes')}): "
                        f"{v.status}: {v.message[:240]}")
    passed = [v.variant_id for v in result.variants if v.status == "pass"]
    summary = (f"{len(failing)} of {len(result.variants)} evaluated variants fail"
               + (f" ({', '.join(symptoms)})" if symptoms else "")
               + (f"; passes {', '.join(passed[:4])}{'...' if len(passed) > 4 else ''}" if passed else ""))
    return {"symptoms": symptoms, "failing": [v.variant_id for v in failing], "smallest_failing": smallest,
            "findings": findings, "summary": summary}


def _tensor_symptoms(v: VariantResult, add) -> None:
    for e in v.errors:
        if e.ok:
            continue
        if (e.nan_count > e.ref_nan_count) or (e.inf_count > e.ref_inf_count):
            add("nan_or_inf")
        if len(e.shape) == 0 or (len(e.shape) == 1 and e.shape[0] == 1):
            add("scalar_output")
        if e.mismatch_frac > 0.9:
            add("all_elements_wrong")
        dims = e.bad_along_dims
        if dims and len(dims) >= 1 and dims[0]["size"] > 1 and dims[0]["first"] not in (None, 0):
            add("first_row_ok")
        if dims:
            last = dims[-1]
            if last["size"] > 8 and last["first"] is not None and last["first"] >= last["size"] // 2:
                add("tail_only")
