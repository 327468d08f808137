"""tools.report.gpu_timing on CPU: statistics of synthetic samples, speedups, the slowdown bound, report fields.

The timed path itself (CUDA events, L2 flush) needs a GPU and is untested here.
"""

import json
import math

import pytest

from tools.integrity.audit import TIME_GROWTH
from tools.report import gpu_timing as gt


def test_summarize_known_samples():
    s = gt.summarize([4.0, 1.0, 3.0, 2.0, 100.0])
    assert s.n == 5 and s.median_ms == 3.0 and s.min_ms == 1.0 and s.max_ms == 100.0
    assert s.p25_ms == 2.0 and s.p75_ms == 4.0 and s.spread == pytest.approx(2.0 / 3.0)
    assert s.mean_ms == 22.0 and s.std_ms == pytest.approx(43.6176, rel=1e-4)
    one = gt.summarize([0.5])
    assert one.median_ms == 0.5 and one.std_ms == 0.0 and one.spread == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, 0.0], [1.0, math.nan], [-2.0], [math.inf]])
def test_summarize_rejects_bad_samples(bad):
    with pytest.raises(ValueError):
        gt.summarize(bad)


def test_compare_speedups_and_the_bound_of_the_audit():
    factor, floor_s = TIME_GROWTH["default"]
    assert gt.slowdown_bound() == (factor, floor_s * 1000)
    eager, cand = gt.summarize([2.0, 2.0, 2.0]), gt.summarize([1.0, 1.1, 0.9])
    fast = gt.compare(cand, gt.summarize([0.5, 0.5]), eager, {"name": "synthetic"})
    assert fast["speedup_vs_eager"] == 4.0 and fast["speedup_vs_candidate"] == 2.0
    assert fast["candidate_speedup_vs_eager"] == 2.0
    assert fast["repair_slower_than_bound"] is False and fast["device"] == {"name": "synthetic"}
    limit = factor * 1.0 + floor_s * 1000  # candidate median 1 ms
    just_under = gt.compare(cand, gt.summarize([limit * 0.999]))
    over = gt.compare(cand, gt.summarize([limit * 1.001]))
    assert just_under["repair_slower_than_bound"] is False and over["repair_slower_than_bound"] is True
    missing = gt.compare(cand, None, None)
    assert missing["speedup_vs_candidate"] is None and missing["repair_slower_than_bound"] is None
    assert missing["method"]["trials"] == gt.TRIALS and missing["method"]["l2_flush_bytes"] == 256 * 2**20
    json.dumps(fast)  # the report is JSON


def test_without_cuda_device_info_says_so_and_the_cli_exits_2(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this test covers the CPU-only path")
    info = gt.device_info()
    assert info["available"] is False and info["torch"] == torch.__version__ and "name" not in info
    with pytest.raises(RuntimeError):
        gt.time_cuda(lambda: None, [])
    assert gt.main([str(tmp_path)]) == 2 and "not a run folder" in capsys.readouterr().err
    (tmp_path / "original.py").write_text("")
    assert gt.main([str(tmp_path)]) == 2 and "needs a CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "gpu_timing.json").exists()

