import os

import pytest

from tools.suite.task import TaskError, load_task, validate_sources

REF = "import torch\nclass Model(torch.nn.Module):\n    def __init__(self, a):\n        super().__init__()\n" \
      "    def forward(self, x):\n        return x\ndef get_inputs():\n    return [torch.ones(3)]\n"
CAND = "import triton\n@triton.jit\ndef k(x_ptr):\n    pass\nclass ModelNew:\n    def __init__(self, a):\n" \
       "        pass\n    def forward(self, x):\n        return x\n"


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_folder_and_two_path_forms_load(tmp_path):
    write(tmp_path, "reference.py", REF)
    write(tmp_path, "candidate.py", CAND)
    a = load_task(str(tmp_path))
    b = load_task(str(tmp_path / "candidate.py"), str(tmp_path / "reference.py"))
    assert a.candidate_source == b.candidate_source == CAND
    assert a.reference_source == REF


@pytest.mark.parametrize("ref,cand,needle", [
    (REF, "def f(:\n", "syntax error"),
    (REF.replace("class Model", "class Other"), CAND, "no class Model"),
    (REF.replace("def get_inputs", "def inputs"), CAND, "no get_inputs"),
    (REF, CAND.replace("ModelNew", "Candidate"), "no class ModelNew"),
    (REF, CAND.replace("def __init__(self, a)", "def __init__(self, a, b)"), "does not match"),
    (REF, CAND.replace("@triton.jit\n", ""), "no @triton.jit"),
    (REF, CAND.replace("def forward(self, x)", "def forward(self, x, y, z)"), "forward takes"),
    (REF, "", "is empty"),
])
def test_invalid_sources_give_one_line_errors(ref, cand, needle):
    with pytest.raises(TaskError) as e:
        validate_sources(ref, cand)
    assert needle in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_files_and_folder_without_reference(tmp_path):
    with pytest.raises(TaskError, match="not found"):
        load_task(str(tmp_path / "nope.py"), str(tmp_path / "ref.py"))
    write(tmp_path, "candidate.py", CAND)
    with pytest.raises(TaskError, match="no reference.py"):
        load_task(str(tmp_path))
    with pytest.raises(TaskError, match="needs --reference"):
        load_task(str(tmp_path / "candidate.py"))


def test_binary_file_is_rejected(tmp_path):
    write(tmp_path, "reference.py", REF)
    (tmp_path / "candidate.py").write_bytes(b"\x00\x01\x02")
    with pytest.raises(TaskError, match="binary"):
        load_task(str(tmp_path))


def test_loading_does_not_modify_the_files(tmp_path):
    r = write(tmp_path, "reference.py", REF)
    c = write(tmp_path, "candidate.py", CAND)
    before = (os.path.getmtime(r), os.path.getmtime(c))
    load_task(str(tmp_path))
    assert (os.path.getmtime(r), os.path.getmtime(c)) == before
