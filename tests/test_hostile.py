"""Hostile candidates are contained: the parent survives, each gets the right verdict, nothing leaks."""

import os

import pytest

from conftest import ROOT, fixture_text
from tools.backends import INTERPRETER
from tools.runner import Runner

HOSTILE = os.path.join(ROOT, "tests", "hostile")
MARKERS = ["/tmp/nearmiss_hostile_subprocess", "/tmp/nearmiss_hostile_system", "/tmp/nearmiss_hostile_write"]
SECRET = "sk-nearmiss-test-secret-0123456789"

#: hostile file -> (status, a word the message must hold)
EXPECTED = {
    "infinite_python_loop": ("timeout", "killed"),
    "infinite_kernel_loop": ("timeout", "killed"),
    "segfault": ("runtime_error", "SIGSEGV"),
    "exit_before_return": ("runtime_error", "exited"),
    "memory_hog": ("runtime_error", "MemoryError"),
    "fork_bomb": ("runtime_error", "process creation"),
    "subprocess_shell": ("runtime_error", "process creation"),
    "open_socket": ("runtime_error", "network"),
    "write_outside": ("runtime_error", "not allowed"),
    "read_expected": ("mismatch", "outside"),  # no expected.pt exists inside the sandbox: it returns its copy
    "read_api_key": ("pass", ""),  # it computes y + len(key): right only if it saw no key
    "print_100mb": ("pass", ""),
    "equals_anything": ("mismatch", "not a torch.Tensor"),
    "patch_allclose": ("mismatch", "outside"),
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    for m in MARKERS:
        if os.path.exists(m):
            os.remove(m)
    os.environ["OPENAI_API_KEY"] = SECRET
    try:
        work = tmp_path_factory.mktemp("hostile")
        results = {}
        # hangs get a short deadline; the others a long one (filling 8 GiB takes a while on 2 cores)
        for sub, timeout, names in (("hang", 10, [n for n in EXPECTED if EXPECTED[n][0] == "timeout"]),
                                    ("rest", 90, [n for n in EXPECTED if EXPECTED[n][0] != "timeout"])):
            r = Runner(str(work / sub), fixture_text("vadd", "reference.py"), INTERPRETER, timeout_s=timeout)
            r.build_suite()
            sources = [open(os.path.join(HOSTILE, n + ".py")).read() for n in names]
            results.update(zip(names, r.screen(sources, ["default/seed1"])))
    finally:
        del os.environ["OPENAI_API_KEY"]
    return results, work


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_candidate_gets_its_verdict(verdicts, name):
    results, _ = verdicts
    res = results[name]
    status, word = EXPECTED[name]
    assert res.status == status, res.message
    assert word in res.message or word in " ".join(v.message for v in res.variants)


def test_nothing_outside_the_run_folder_changed_and_no_secret_leaked(verdicts):
    _, work = verdicts
    assert not [m for m in MARKERS if os.path.exists(m)]
    for dirpath, _, files in os.walk(work):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                assert SECRET.encode() not in fh.read()


def test_every_hostile_file_is_in_the_table():
    files = {f[:-3] for f in os.listdir(HOSTILE) if f.endswith(".py")}
    assert files == set(EXPECTED)
