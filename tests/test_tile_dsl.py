"""The tile DSL and its executor: exemplars == reference on the suite; Ascend's rules as precise errors."""

import numpy as np
import pytest
import torch

from tile_dsl import DSLError, execute, exemplars, load_program_source, trace
from tile_dsl.check import check_program, load_reference
from tile_dsl.rules import UB_BYTES


def test_two_exemplars_per_category():
    cats = [exemplars.load(n).CATEGORY for n in exemplars.names()]
    assert sorted(cats) == sorted(exemplars.CATEGORIES * 2)


@pytest.mark.parametrize("name", exemplars.names())
def test_exemplar_matches_reference_on_the_suite(name):
    m = exemplars.load(name)
    res = check_program(trace(m.program, name), load_reference(m.REFERENCE))
    assert res.status == "correct", res.error
    # the suite includes sizes that are not tile- or block-aligned (tails), and several seeds
    assert len(res.variants) >= 9 and any(v.startswith(("size/", "boundary/")) for v in res.variants)


def src(body: str) -> str:
    return "def program(k):\n" + body


RELU = src("""    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="like:x")
    for blk in k.split(x.numel, blocks={blocks}):
        for t in k.tiles(blk, {tile}):
            k.copy_out(y, t, k.relu(k.copy_in(x, t)))
""")


def err(source: str, *inputs) -> str:
    with pytest.raises(DSLError) as e:
        prog = load_program_source(source, "prog.py")
        execute(prog, list(inputs))
    return str(e.value)


def test_tail_tiles_and_empty_blocks_cover_every_element():
    prog = load_program_source(RELU.format(blocks=7, tile=64), "prog.py")
    for n in (1, 63, 64, 65, 1000, 4099):
        x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        [y] = execute(prog, [x])
        assert np.array_equal(y, np.maximum(x, 0)), n  # NaN-poisoned output: a dropped tail would show


def test_misaligned_tile_names_the_line():
    msg = err(RELU.format(blocks=4, tile=100))
    assert msg.startswith("prog.py:6:") and "400 B, not a multiple of 32 B" in msg


def test_block_limit():
    assert err(RELU.format(blocks=70000, tile=64)).startswith("prog.py:4: blocks=70000")


def test_ub_overflow_static_and_at_run_time():
    msg = err(RELU.format(blocks=1, tile=32768), np.zeros(8, np.float32))  # 128 KB x2 (double buffer) x2
    assert "UB overflow" in msg and msg.startswith("prog.py:6:") and str(UB_BYTES) in msg
    rows = src("""    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="rows:x")
    for blk in k.split(x.rows, blocks=2):
        for r in k.rows(blk):
            k.store(y, k.reduce_sum(k.copy_in(x, r)), row=r)
""")
    execute(load_program_source(rows, "prog.py"), [np.ones((2, 1000), np.float32)])  # fits
    msg = err(rows, np.ones((2, 40000), np.float32))  # a 160 KB row, double-buffered: it does not
    assert "UB overflow" in msg and msg.startswith("prog.py:6:")


def test_race_between_blocks_is_an_error():
    racy = src("""    x = k.input("x", "f32")
    y = k.output("y", "f32", shape="scalar")
    for blk in k.split(x.numel, blocks=4):
        acc = k.var(0.0)
        for t in k.tiles(blk, 64):
            acc.add_(k.reduce_sum(k.copy_in(x, t)))
        k.store(y, acc)
""")
    msg = err(racy, np.ones(1000, np.float32))
    assert msg.startswith("prog.py:8:") and "written by blocks 0 and 1" in msg


@pytest.mark.parametrize("body,line,needle", [
    ('    x = k.input("x", "f16")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        for t in k.tiles(blk, 64):\n'
     '            k.copy_out(y, t, k.copy_in(x, t))\n', 6, "k.cast it first"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        for t in k.tiles(blk, 64):\n'
     '            k.copy_out(y, t, k.copy_in(x, t) / 3.0)\n', 6, "no vector-scalar divide"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:z")\n', 3, "shape 'like:z'"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        for r in k.rows(blk):\n            pass\n', 5,
     "k.rows walks rows"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        for t in k.tiles(blk, 64):\n'
     '            b = k.copy_in(x, t)\n        k.copy_out(y, t, b)\n', 7, "innermost"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        for t in k.tiles(blk, 64):\n'
     '            b = k.copy_in(x, t) + undefined_name\n', 6, "NameError"),
    ('    x = k.input("x", "f32")\n    y = k.output("y", "f32", shape="like:x")\n'
     '    for blk in k.split(x.numel, blocks=2):\n        pass\n', 3, "never written"),
])
def test_rule_errors_name_the_line(body, line, needle):
    msg = err(src(body), np.ones(100, np.float32))
    assert msg.startswith(f"prog.py:{line}:") and needle in msg, msg


def test_syntax_error_names_the_line():
    assert err("def program(k):\n    x = = 1\n").startswith("prog.py:2: SyntaxError")


def test_fp16_cast_rounds_to_nearest_even():
    prog = load_program_source(src("""    x = k.input("x", "f32")
    y = k.output("y", "f16", shape="like:x")
    for blk in k.split(x.numel, blocks=1):
        for t in k.tiles(blk, 64):
            k.copy_out(y, t, k.cast(k.copy_in(x, t), "f16"))
"""), "prog.py")
    x = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65520.0], np.float32)  # ties, and a tie to inf
    [y] = execute(prog, [x])
    assert y.tolist() == [1.0, 1 + 2 ** -9, float("inf")]
    assert torch.equal(torch.from_numpy(y), torch.from_numpy(x).half())


def test_check_child_confines_the_program(tmp_path):
    import json
    import subprocess
    import sys

    from conftest import ROOT

    from tile_dsl import exemplars as ex

    (tmp_path / "reference.py").write_text(ex.load("relu").REFERENCE)
    (tmp_path / "out").mkdir()
    (tmp_path / "program.py").write_text("import os\nos.system('true')\n\ndef program(k):\n    pass\n")
    p = subprocess.run([sys.executable, "-m", "tile_dsl.check", str(tmp_path / "program.py"),
                        str(tmp_path / "reference.py"), "relu", str(tmp_path / "out")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300, check=False)
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["status"] == "dsl_error" and res["error"].startswith("program.py:2: PermissionError"), res
    assert list((tmp_path / "out").iterdir()) == []
