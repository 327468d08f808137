import math

import torch

from tools.compare.outputs import compare_outputs, compare_tensor, tolerance


def test_tolerance_table_follows_kernelbench():
    assert tolerance(torch.float32) == (1e-4, 1e-4)
    assert tolerance(torch.float16) == (1e-2, 1e-2)
    assert tolerance(torch.bfloat16) == (1e-2, 1e-2)
    assert tolerance(torch.float32, (1.0, 0.0)) == (1.0, 0.0)


def test_within_and_outside_fp32_tolerance():
    ref = torch.ones(10)
    assert compare_tensor(ref + 5e-5, ref).ok
    err = compare_tensor(ref + torch.tensor([0.0] * 9 + [1e-3]), ref)
    assert not err.ok
    assert err.first_bad_index == [9]
    assert math.isclose(err.mismatch_frac, 0.1)
    assert math.isclose(err.max_abs_err, 1e-3, rel_tol=1e-3)


def test_fp16_uses_looser_tolerance():
    ref = torch.ones(4, dtype=torch.float16)
    assert compare_tensor(ref + 0.005, ref).ok
    assert not compare_tensor(ref + 0.05, ref).ok


def test_nan_positions_must_match():
    ref = torch.tensor([1.0, float("nan"), 3.0])
    assert compare_tensor(ref.clone(), ref).ok
    bad = compare_tensor(torch.tensor([1.0, 2.0, 3.0]), ref)
    assert not bad.ok and "NaN" in bad.message
    worse = compare_tensor(torch.tensor([float("nan"), float("nan"), 3.0]), ref)
    assert not worse.ok and worse.nan_count == 2


def test_inf_sign_matters():
    ref = torch.tensor([float("inf")])
    assert compare_tensor(torch.tensor([float("inf")]), ref).ok
    assert not compare_tensor(torch.tensor([-float("inf")]), ref).ok


def test_shape_type_and_tuple_outputs():
    ref = torch.zeros(2, 3)
    assert not compare_tensor(torch.zeros(3, 2), ref).ok
    assert not compare_tensor([0.0] * 6, ref).ok
    errs = compare_outputs((torch.zeros(2), torch.ones(2)), (torch.zeros(2), torch.zeros(2)))
    assert [e.ok for e in errs] == [True, False]
    assert not compare_outputs((torch.zeros(2),), (torch.zeros(2), torch.zeros(2)))[0].ok


def test_scalar_output_uses_absolute_error():
    ref = torch.tensor(23.0)
    err = compare_tensor(torch.tensor(23.02), ref)
    assert not err.ok
    assert math.isclose(err.max_abs_err, 0.02, rel_tol=1e-3)


def test_bad_rows_are_localised():
    ref = torch.zeros(4, 8)
    cand = ref.clone()
    cand[1:, 6:] = 1.0
    err = compare_tensor(cand, ref)
    rows, cols = err.bad_along_dims
    assert (rows["first"], rows["bad"]) == (1, 3)
    assert (cols["first"], cols["last"]) == (6, 7)


def test_slack_widens_tolerance_only_where_given():
    ref = torch.zeros(3)
    cand = torch.tensor([0.0, 0.01, 0.01])
    slack = torch.tensor([0.0, 0.02, 0.0], dtype=torch.float64)
    err = compare_tensor(cand, ref, slack=slack)
    assert not err.ok and err.first_bad_index == [2]
