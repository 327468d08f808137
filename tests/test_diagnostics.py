"""Diagnosis: symptoms from variant kinds and relations, and the fault class they point to."""

from tools.diagnosis.diagnostics import diagnose, fault_class
from tools.records import EvalResult, TensorError, VariantResult

SUITE = [
    {"id": "default/seed1", "numel": 100, "dtypes": ["float32"], "meta": {}},
    {"id": "size/n=61/seed1", "numel": 61, "dtypes": ["float32"], "meta": {"global": "n", "value": 61}},
    {"id": "dtype/float16/seed1", "numel": 100, "dtypes": ["float16"], "meta": {"dtype": "float16"}},
    {"id": "layout/sliced/seed1", "numel": 100, "dtypes": ["float32"], "meta": {"layout": "sliced"}},
    {"id": "independent/in0.dim0=7/seed1", "numel": 90, "dtypes": ["float32"],
     "meta": {"input": 0, "dim": 0, "value": 7, "independent": True}},
]


def _result(failing: dict[str, list[str]]) -> EvalResult:
    vs = []
    for v in SUITE:
        if v["id"] in failing:
            err = TensorError(output_index=0, shape=[10, 10], dtype="float32", ok=False, mismatch_frac=0.3,
                              relations=failing[v["id"]])
            vs.append(VariantResult(variant_id=v["id"], status="mismatch", errors=[err], launches=1))
        else:
            vs.append(VariantResult(variant_id=v["id"], status="pass", launches=1))
    return EvalResult(status="mismatch" if failing else "pass", variants=vs, backend="interpreter")


def test_only_unaligned_sizes_fail_is_a_mask_tail():
    d = diagnose(_result({"size/n=61/seed1": []}), SUITE)
    assert "unaligned_size" in d["symptoms"] and d["fault_class"]["name"] == "mask_tail"
    assert d["smallest_failing"] == "size/n=61/seed1"
    assert "reduced_precision_inputs" not in d["symptoms"]  # fp16 variants are not fp16 default inputs


def test_only_fp16_fails_is_precision():
    d = diagnose(_result({"dtype/float16/seed1": []}), SUITE)
    assert d["symptoms"][:1] == ["dtype_float16"] and d["fault_class"]["name"] == "precision"


def test_only_non_contiguous_fails_is_stride():
    assert diagnose(_result({"layout/sliced/seed1": []}), SUITE)["fault_class"]["name"] == "stride"


def test_independent_sizes_is_alignment():
    d = diagnose(_result({"independent/in0.dim0=7/seed1": []}), SUITE)
    assert d["fault_class"]["name"] == "alignment"


def test_relations_become_symptoms_localisation_and_findings():
    d = diagnose(_result({"default/seed1": ["shifted_by_one:dim=1,+1"], "size/n=61/seed1": []}), SUITE)
    assert "shifted_by_one" in d["symptoms"] and d["fault_class"]["name"] == "off_by_one"
    assert d["localisation"][0] == {"name": "shifted_by_one", "detail": "dim=1,+1", "variant": "default/seed1",
                                    "output": 0, "variants": 1}
    assert d["findings"][0].startswith("shifted_by_one (dim=1,+1) on default/seed1")


def test_fault_class_rules():
    assert fault_class(["fails_on_default", "row_scaled"])["name"] == "normaliser"
    assert fault_class(["fails_on_default", "row_offset"])["name"] == "fill_value"
    assert fault_class(["reduced_precision_inputs", "value_regime_large"])["name"] == "precision"
    assert fault_class(["value_regime_large"])["name"] == "fill_value"
    assert fault_class(["out_of_bounds", "unaligned_size"])["name"] == "mask_tail"
    assert fault_class(["fails_on_default"])["name"] == "unknown"


def test_passing_at_a_power_of_two_and_failing_elsewhere_is_padded_lanes():
    suite = SUITE + [{"id": "aligned/n=64/seed1", "numel": 64, "dtypes": ["float32"],
                      "meta": {"global": "n", "value": 64, "aligned": True}}]
    failing = {"default/seed1": [], "size/n=61/seed1": []}
    vs = [VariantResult(variant_id=v["id"], status="mismatch" if v["id"] in failing else "pass", launches=1,
                        errors=[TensorError(output_index=0, shape=[4], dtype="float32", ok=False)]
                        if v["id"] in failing else [])
          for v in suite]
    d = diagnose(EvalResult(status="mismatch", variants=vs, backend="interpreter"), suite)
    assert "aligned_passes" in d["symptoms"] and d["fault_class"]["name"] == "padded_lanes"


def test_first_row_right_and_others_scaled_is_a_scalar_read_of_a_per_row_value():
    assert fault_class(["fails_on_default", "row_scaled", "first_row_ok"])["name"] == "indexing"


def test_a_relation_on_one_variant_of_many_is_not_a_symptom():
    failing = {"default/seed1": ["scaled:0.5"], "size/n=61/seed1": ["scaled:0.5"],
               "layout/sliced/seed1": ["scaled:0.5"], "dtype/float16/seed1": ["shifted_by_one:dim=0,+1"]}
    d = diagnose(_result(failing), SUITE)
    assert "scaled" in d["symptoms"] and "shifted_by_one" not in d["symptoms"]
    assert d["fault_class"]["name"] != "off_by_one"
    assert any(x["name"] == "shifted_by_one" for x in d["localisation"])  # still reported, as a lead


def test_stale_tail_is_the_grid_and_a_right_first_row_alone_is_indexing():
    assert fault_class(["aligned_passes", "fails_on_default", "stale_tail"])["name"] == "grid_or_chunk"
    assert fault_class(["fails_on_default", "all_elements_wrong", "first_row_ok"])["name"] == "indexing"
    assert fault_class(["noncontiguous", "first_row_ok"])["name"] == "stride"
