"""Each localisation relation is found on a small synthetic mismatch, and only there."""

import pytest
import torch

from tools.compare.localise import relations, stale_tail

TOL = (1e-4, 1e-4)


def _ref(*shape):
    torch.manual_seed(0)
    return torch.randn(*shape)


def names(cand, ref, blocks=()):
    return [r.split(":")[0] for r in relations(cand, ref, *TOL, blocks=blocks)]


def test_right_output_has_no_relation():
    r = _ref(8, 16)
    assert relations(r.clone(), r, *TOL) == []


def test_unstructured_error_has_no_relation():
    r = _ref(8, 16)
    torch.manual_seed(1)
    assert names(r + torch.randn(8, 16), r) == []


def test_transposition():
    r = _ref(16, 16)
    assert "transposed" in names(r.T.contiguous(), r)


def test_shift_by_one_along_rows_names_dim_and_direction():
    r = _ref(12, 10)
    c = torch.zeros_like(r)
    c[1:] = r[:-1]
    found = relations(c, r, *TOL)
    assert "shifted_by_one:dim=0,+1" in found
    assert not any(f.startswith("transposed") for f in found)


def test_shift_by_one_the_other_way_along_columns():
    r = _ref(6, 20)
    c = r.clone()
    c[:, :-1] = r[:, 1:]
    assert "shifted_by_one:dim=1,-1" in relations(c, r, *TOL)


def test_scaled_reports_the_factor():
    r = _ref(4, 32)
    found = relations(r * (32 / 31), r, *TOL)
    assert any(f.startswith("scaled:") and abs(float(f.split(":")[1]) - 32 / 31) < 1e-3 for f in found)


def test_constant_offset():
    r = _ref(4, 32)
    found = relations(r + 0.25, r, *TOL)
    assert any(f.startswith("constant_offset:") and abs(float(f.split(":")[1]) - 0.25) < 1e-6 for f in found)
    assert not any(f.startswith("scaled") for f in found)


def test_pairs_swapped_rope_interleaving():
    r = _ref(3, 8)
    c = r.reshape(3, 4, 2).flip(-1).reshape(3, 8)
    assert "pairs_swapped" in names(c, r)
    assert "halves_swapped" not in names(c, r)


def test_halves_swapped():
    r = _ref(3, 8)
    c = torch.cat([r[:, 4:], r[:, :4]], dim=1)
    assert "halves_swapped" in names(c, r)


def test_zeros_and_sign():
    r = _ref(5, 7)
    assert "zeros" in names(torch.zeros_like(r), r)
    assert "sign_flipped" in names(-r, r)


def test_stale_tail_past_last_full_block():
    r = _ref(4, 100)
    c = r.clone()
    c[:, 64:] = 0.0
    assert "stale_tail:dim=1,block=64" in relations(c, r, *TOL, blocks=[64])
    # the same error is not a tail of a block size that does not explain it
    assert stale_tail(~torch.isclose(c, r), [32]) is None


def test_stale_tail_on_the_flattened_output():
    r = _ref(3, 5)
    c = r.clone().flatten()
    c[8:] = 7.0
    c = c.reshape(3, 5)
    assert any(f.startswith("stale_tail:dim=flat,block=8") for f in relations(c, r, *TOL, blocks=[8]))


@pytest.mark.parametrize("shape", [(1,), (2,), ()])
def test_tiny_outputs_do_not_crash(shape):
    r = torch.ones(shape)
    assert isinstance(relations(r * 2, r, *TOL), list)


def test_row_scaled_and_row_offset():
    r = _ref(6, 40)
    k = torch.linspace(0.5, 1.5, 6)[:, None]
    assert "row_scaled" in names(r * k, r)
    assert "row_offset" in names(r + k, r)
    assert "row_scaled" not in names(r + k, r)
    found = names(r * 1.1, r)  # one factor for all rows: scaled, not row_scaled
    assert "scaled" in found and "row_scaled" not in found


def test_periodic_last_lane_of_every_block():
    r = _ref(4, 256)
    c = r.clone()
    c[:, 63::64] += 1.0  # the last lane of each 64-wide block
    found = relations(c, r, *TOL, blocks=[64])
    assert any(f.startswith("periodic:dim=1,block=64,offsets=1") for f in found)
    assert not any(f.startswith("periodic") for f in relations(c, r, *TOL))  # no block sizes, no period


def test_scattered_bad_columns_are_not_periodic_and_small_noise_is_no_offset():
    torch.manual_seed(3)
    r = _ref(4, 512)
    c = r.clone()
    cols = torch.randperm(512)[:40]
    c[:, cols] += 1.0
    assert not any(f.startswith("periodic") for f in relations(c, r, *TOL, blocks=[128]))
    noisy = r + 2e-4 * torch.randn_like(r)  # just outside tolerance, no structure
    assert not any(f.startswith(("constant_offset", "scaled")) for f in relations(noisy, r, *TOL))
