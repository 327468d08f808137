"""Diagnosis: turn an evaluation over the suite into named symptoms and a localisation.

Symptom names are the vocabulary the knowledge base (``kb/patterns``) matches on.
"""

from __future__ import annotations

from tools.compare.localise import RELATIONS
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
    "past_block_boundary": "wrong once a size passes one of the candidate's block or chunk constants",
    "independent_sizes": "wrong when inputs that share a dimension differ in it (query vs key length)",
    "nan_or_inf": "NaN or Inf where the reference is finite",
    "scalar_output": "the output is a scalar (a loss)",
    "all_elements_wrong": "nearly every output element is wrong",
    "first_row_ok": "the first row is right, later rows are wrong",
    "tail_only": "only elements near the end of a dimension are wrong",
    "reduced_precision_inputs": "fp16/bf16 inputs",
    "inputs_mutated": "the candidate writes into its inputs",
    "out_of_bounds": "a kernel writes past the end of an output allocation (guard band)",
    "no_launch": "no Triton kernel launched",
    "dtype_float16": "wrong only with fp16 inputs",
    "stride_zero": "wrong only on an expanded (stride-0) input, as autograd hands a broadcast gradient",
    "other_rank": "wrong on inputs of another rank that the reference accepts (0-dim, a split dimension)",
    "small_sizes": "wrong only at sizes far below the block: one program's tile spans several rows",
    "value_regime_huge": "wrong only on values past exp's fp32 overflow",
    "value_regime_zero_rows": "wrong only when some rows are all zero (a division by their sum, norm or max)",
    "aligned_passes": "right when a size is a power of two, wrong otherwise: padded (masked-off) lanes enter the result",
}
# The localisation's relations (tools.compare.localise) are symptoms too, under the same names.
SYMPTOMS.update({k: v for k, v in RELATIONS.items()})
# Ascend compile findings (tools.repair.ascend_operators.ascend_diagnosis) are symptoms too.
from tools.repair.ascend_operators import ASCEND_SYMPTOMS  # noqa: E402

SYMPTOMS.update(ASCEND_SYMPTOMS)

#: Fault classes, tried in order: the first whose rule holds names the fault. A rule is a set
#: of symptoms of which one must be present (and, optionally, a set of which one must also be
#: present), with the class' one-line reading. The vocabulary follows the kinds of near-miss
#: the coverage issue lists: mask/tail, fill value, precision, stride, grid, normaliser,
#: off-by-one, alignment, indexing, pairing.
FAULT_CLASSES: list[tuple[str, set[str], set[str] | None, str]] = [
    ("compile", {"compile_error", "gpu_compile_error"}, None, "the kernel does not compile"),
    ("hang", {"timeout"}, None, "the kernel does not finish"),
    ("mask_tail", {"out_of_bounds"}, None, "a load or store without a (correct) mask runs past the end of a tensor"),
    ("input_mutation", {"inputs_mutated"}, None, "the kernel writes into its inputs"),
    ("off_by_one", {"shifted_by_one"}, None, "an index is off by one"),
    ("indexing", {"transposed"}, None, "row and column indices are swapped"),
    ("pairing", {"pairs_swapped", "halves_swapped"}, None,
     "elements are paired the wrong way (interleaved vs half-split)"),
    ("indexing", {"periodic"}, None, "the same lanes of every block are wrong: a per-block index or mask offset"),
    ("alignment", {"independent_sizes"}, None, "the kernel assumes two inputs share a size (query vs key length: "
                                               "a causal mask aligned to the wrong corner) that the reference lets differ"),
    ("grid_or_chunk", {"past_block_boundary", "stale_tail"}, None,
     "the grid, a chunk loop or a chunk mask breaks once a size passes one block or chunk (only the elements "
     "past the last full block or chunk are wrong)"),
    ("stride", {"noncontiguous", "stride_zero"}, None, "the kernel assumes contiguous inputs (strides): a stride "
                                                        "passed or computed as if the input were dense"),
    ("overflow", {"value_regime_huge"}, None, "an exact formula overflows (an exponential ratio reaching inf/inf): "
                                              "a stable form or a clamp is needed"),
    ("zero_divisor", {"value_regime_zero_rows"}, None, "a division by a value that is zero for an all-zero row"),
    ("rank", {"other_rank"}, None, "the kernel or its wrapper assumes the default rank of an input"),
    ("tile_rows", {"small_sizes"}, None, "a tile spans several rows at small sizes: a reduction or index over the "
                                         "whole tile instead of per row"),
    ("precision", {"dtype_float16"}, None, "intermediate precision: fp16 accumulation or arithmetic"),
    ("precision", {"reduced_precision_inputs"}, {"value_regime_large", "nan_or_inf"},
     "an fp16 intermediate overflows or loses precision: accumulate in fp32"),
    ("padded_lanes", {"aligned_passes"}, {"value_regime_negative", "value_regime_large", "value_regime_offset",
                                          "row_offset", "nan_or_inf"},
     "masked-off (padded) lanes enter the result through their fill value (0 where the reduction needs -inf), "
     "or re-enter after a transform"),
    ("padded_lanes", {"aligned_passes"}, None,
     "masked-off (padded) lanes enter the result: a reduction or store over the whole block without the mask "
     "(re-mask after centring, mask the store)"),
    ("fill_value", {"value_regime_negative", "value_regime_large", "value_regime_offset", "row_offset", "nan_or_inf"},
     None, "masked lanes are filled with a value that is not neutral for the reduction (0 instead of -inf), or "
           "re-enter after a transform"),
    ("mask_tail", {"stale_tail", "tail_only", "unaligned_size"}, None,
     "a mask or the lanes past the last full block are wrong (padded lanes enter a result)"),
    ("indexing", {"row_scaled"}, {"first_row_ok"}, "a per-row value (a weight, a grad_output) is read as a scalar: "
                                                   "row 0 is right, every other row is scaled"),
    ("normaliser", {"scaled", "constant_offset", "row_scaled"}, None,
     "a normaliser or factor is wrong: padded lanes in a mean or variance, N vs BLOCK_SIZE, eps, or a per-row "
     "value read as a scalar"),
    ("mask_tail", {"scalar_output"}, None, "a scalar result is written by several lanes or programs (a store without "
                                           "the lane mask, or without an atomic)"),
    ("nothing_stored", {"zeros"}, None, "the kernel stores nothing (a mask that is always false)"),
    ("indexing", {"first_row_ok"}, None, "row 0 is right and later rows are wrong: a per-row value or offset "
                                         "is read for row 0 only"),
    ("runtime", {"runtime_error"}, None, "the kernel raises while running"),
]


def _variant_kind(meta: dict) -> str:
    m = meta.get("meta", {})
    if "regime" in m:
        return "value_regime_" + m["regime"]
    if m.get("layout") == "expanded":
        return "stride_zero"
    if "layout" in m:
        return "noncontiguous"
    if "rank" in m:
        return "other_rank"
    if m.get("small"):
        return "small_sizes"
    if m.get("aligned"):
        return "aligned_size"
    if "boundary" in m:
        return "past_block_boundary"
    if m.get("independent"):
        return "independent_sizes"
    if "dtype" in m:
        return "dtype_" + m["dtype"]
    if "global" in m or "dim" in m:
        return "unaligned_size"
    return "default"


def fault_class(symptoms: list[str]) -> dict:
    """The most likely fault class of a set of symptoms (``FAULT_CLASSES``, first rule that holds).

    Returns:
        ``{"name", "because", "reading"}``; name ``"unknown"`` when no rule holds.
    """
    present = set(symptoms)
    for name, needs, also, reading in FAULT_CLASSES:
        hit = sorted(needs & present)
        if hit and (also is None or also & present):
            return {"name": name, "because": hit + sorted((also or set()) & present), "reading": reading}
    return {"name": "unknown", "because": [], "reading": "no rule of the diagnosis matches these symptoms"}


def diagnose(result: EvalResult, variants: list[dict]) -> dict:
    """Name the symptoms of a failing evaluation and localise the first fault.

    Args:
        result: an evaluation of the candidate on (part of) the suite.
        variants: suite metadata (``suite.json`` ``variants``), for each variant's kind, shapes, dtypes.

    Returns:
        ``{"symptoms": [...], "failing": [variant ids], "smallest_failing": id | None,
        "fault_class": {...}, "localisation": [{"name", "detail", "variant"}], "findings": [one-line
        strings], "summary": str}``. Symptom and localisation names are stable (``SYMPTOMS``):
        the knowledge base keys on them.
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
    aligned_ok = any(v.status == "pass" and _variant_kind(meta.get(v.variant_id, {})) == "aligned_size"
                     for v in result.variants)
    if aligned_ok and kinds - {"aligned_size", "past_block_boundary", "independent_sizes"}:
        add("aligned_passes")
    if "default" in kinds:
        add("fails_on_default")
    if "default" not in kinds:  # when the default inputs fail, the other kinds' failures say nothing more
        for k in sorted(kinds - {"default"}):
            add(k)
    if any(d in ("float16", "bfloat16") for v in variants if v["id"].startswith("default/")
           for d in v.get("dtypes", [])):
        add("reduced_precision_inputs")
    findings: list[str] = []
    localisation: list[dict] = []
    seen_in: dict[str, set[str]] = {}
    with_errors = [v for v in failing if any(not e.ok for e in v.errors)]
    for v in with_errors:
        for e in v.errors:
            for rel in e.relations:
                name, _, detail = rel.partition(":")
                seen_in.setdefault(name, set()).add(v.variant_id)
                if not any(x["name"] == name for x in localisation):
                    localisation.append({"name": name, "detail": detail, "variant": v.variant_id,
                                         "output": e.output_index})
    # A relation is a symptom when it holds on at least half the failing variants: a structural
    # fault (a shift, a transposition) shows on all of them, a coincidence on one regime does not.
    quorum = max(1, (len(with_errors) + 1) // 2)
    for loc in localisation:
        loc["variants"] = len(seen_in[loc["name"]])
        if loc["variants"] >= quorum:
            add(loc["name"])
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
    fault = fault_class(symptoms)
    for loc in localisation:
        findings.insert(0, f"{loc['name']}{' (' + loc['detail'] + ')' if loc['detail'] else ''} on {loc['variant']}"
                           f"{' and ' + str(loc['variants'] - 1) + ' more' if loc['variants'] > 1 else ''}: "
                           f"{RELATIONS.get(loc['name'], '')}")
    summary = (f"{len(failing)} of {len(result.variants)} variants of the search suite fail"
               + (f" ({', '.join(symptoms)})" if symptoms else "")
               + (f"; likely fault: {fault['name']} ({fault['reading']})" if failing else "")
               + (f"; passes {', '.join(passed[:4])}{'...' if len(passed) > 4 else ''}" if passed else ""))
    return {"symptoms": symptoms, "failing": [v.variant_id for v in failing], "smallest_failing": smallest,
            "fault_class": fault, "localisation": localisation, "findings": findings, "summary": summary}


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


def diagnosis_of(result: EvalResult, variants: list[dict], search_ids: list[str] | None = None,
                 compile_report=None, source_key: str | None = None, source: str | None = None) -> dict:
    """The one diagnosis function: triage and the instrumentation planner both call it.

    Diagnoses the search part of ``result`` when it fails there, else the whole evaluation
    (a fault that only the held-out part shows is still a fault); adds the GPU compile
    failures of ``compile_report`` (a ``tools.records.CompileReport``) as the symptom
    ``gpu_compile_error``; records ``source_key`` so a later caller can tell whether the
    diagnosis is of the source it holds (then it reuses it: the fault class shown at triage
    is the one the patcher uses until an edit changes the candidate).

    Args:
        result: an evaluation of one candidate source.
        variants: suite metadata.
        search_ids: ids of the search split (None: all of ``result``).
        compile_report: a compile check of the same source, or None.
        source_key: a key of the diagnosed source (``agents.common.source_hash``).
        source: the diagnosed source; with an Ascend compile failure, its kernel lines and figures
            join the findings (``tools.repair.ascend_operators.ascend_diagnosis``).

    Returns:
        ``diagnose``'s dictionary plus ``source`` (the key).
    """
    search = result.subset(search_ids) if search_ids is not None else result
    diag = diagnose(search if not search.passed else result, variants)
    if compile_report is not None and not compile_report.ok and result.status in ("pass", "mismatch", "timeout"):
        bad = compile_report.failures()
        targets = sorted({b.target for b in bad})
        msg = compile_report.error or f"{bad[0].kernel} ({bad[0].target}, line {bad[0].line}): {bad[0].error}"
        diag["symptoms"] = ["gpu_compile_error"] + [s for s in diag["symptoms"] if s != "gpu_compile_error"]
        diag["findings"] = [f"GPU compile: {msg[:400]}"] + diag["findings"]
        diag["summary"] = f"does not compile for {', '.join(targets)}; " + diag["summary"]
        diag["fault_class"] = fault_class(diag["symptoms"])
        if source is not None:
            from tools.repair.ascend_operators import ascend_diagnosis
            diag = ascend_diagnosis(diag, compile_report, source)  # Ascend limits: symptoms, figures, lines
    diag["source"] = source_key
    return diag
