"""Hostile candidates are contained: the parent survives, each gets the right verdict, nothing leaks."""

import os

import pytest
from conftest import ROOT, fixture_text

from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner

HOSTILE = os.path.join(ROOT, "tests", "hostile")
MARKERS = ["/tmp/nearmiss_hostile_subprocess", "/tmp/nearmiss_hostile_system", "/tmp/nearmiss_hostile_write",
           "/tmp/nearmiss_hostile_ctypes", "/tmp/nearmiss_hostile_forkexec"]
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
    # contained by the OS (bubblewrap namespaces, seccomp): each then computes the right answer
    "ctypes_fork_system": ("pass", ""),  # native fork/system: EPERM from seccomp, no process, no marker
    "posix_fork_exec": ("runtime_error", "process creation"),
    "dirfd_write": ("pass", ""),  # read-only binds: no write lands, no reference.py changes
    "disk_fill": ("pass", ""),  # the scratch tmpfs fills at its size (ENOSPC); the host disk never sees it
    "proc_environ": ("runtime_error", "environ"),  # only the sandbox's processes are in its /proc
    "kill_product": ("pass", ""),  # kill of any other process: EPERM; the product is not in its PID namespace
}


def _user_files() -> dict:
    """Digests of the files a candidate could want to change: the project's tests, fixtures and code."""
    import hashlib
    out = {}
    for sub in ("tests", "tools"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, sub)):
            for f in files:
                if f.endswith(".py"):
                    p = os.path.join(dirpath, f)
                    with open(p, "rb") as fh:
                        out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    for m in MARKERS:
        if os.path.exists(m):
            os.remove(m)
    os.environ["OPENAI_API_KEY"] = SECRET
    before = _user_files()
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
    return results, work, before


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_candidate_gets_its_verdict(verdicts, name):
    results = verdicts[0]
    res = results[name]
    status, word = EXPECTED[name]
    assert res.status == status, res.message
    assert word in res.message or word in " ".join(v.message for v in res.variants)


def test_nothing_outside_the_run_folder_changed_and_no_secret_leaked(verdicts):
    _, work, before = verdicts
    assert not [m for m in MARKERS if os.path.exists(m)]
    assert _user_files() == before  # reference.py and the project's files unchanged
    hits = []
    for root in (ROOT, str(work), "/tmp"):
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".venv", ".git")]
            hits += [os.path.join(dirpath, f) for f in files if f == "nearmiss_hostile_dirfd"]
    assert not hits
    for dirpath, _, files in os.walk(work):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                assert SECRET.encode() not in fh.read()


def test_every_hostile_file_is_in_the_table():
    files = {f[:-3] for f in os.listdir(HOSTILE) if f.endswith(".py")}
    assert files == set(EXPECTED)


def test_no_process_survives_and_disk_use_is_bounded(verdicts):
    _, work, _ = verdicts
    import subprocess
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "sleep 300" not in ps and "nearmiss_hostile" not in ps
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(work) for f in fs)
    assert total < 64 << 20  # the 3 GiB disk_fill stayed in its scratch tmpfs


_AXPY = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _axpy_kernel(x_ptr, z_ptr, y_ptr, n_elements, alpha, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(axis=0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + alpha * tl.load(z_ptr + offsets, mask=mask),
             mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha: float = 2.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, z):
        y = torch.empty_like(x)
        _axpy_kernel[(triton.cdiv(x.numel(), 1024),)](x.contiguous(), z.contiguous(), y, x.numel(), self.alpha,
                                                       BLOCK_SIZE=1024)
        return y + EXTRA()
'''

#: plants modules up the scratch and in every sys.path folder through directory fds (finding 8's route)
_PLANT = '''
def EXTRA():
    import os
    import posix
    import sys
    folders = {os.getcwd(), *(p for p in sys.path if p)}
    d = os.getcwd()
    for _ in range(4):
        folders.add(d)
        d = os.path.dirname(d)
    for d in folders:
        for name in ("nearmiss_planted_mod.py", "pyseccomp.py"):
            try:
                fd = posix.open(d, os.O_RDONLY)
                out = posix.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd)
                posix.write(out, b"VALUE = 1000.0\\n")
                posix.close(out)
            except OSError:
                pass
    return 0.0
'''

#: right only if no planted module is importable
_VICTIM = '''
def EXTRA():
    try:
        import nearmiss_planted_mod
        return nearmiss_planted_mod.VALUE
    except ImportError:
        return 0.0
'''


def test_a_module_planted_by_one_evaluation_is_not_imported_by_the_next(tmp_path):
    """Finding 8: the warm worker's evaluations share the scratch tmpfs; nothing one writes is on a later one's path."""
    r = Runner(str(tmp_path / "plant"), fixture_text("vadd", "reference.py"), INTERPRETER, timeout_s=60)
    r.build_suite()
    first = r.screen([_AXPY + _PLANT], ["default/seed1"])[0]
    assert first.status == "pass", first.message
    later = r.screen([_AXPY + _VICTIM], ["default/seed1"])[0]
    assert later.status == "pass", later.message  # a planted import would add 1000 and mismatch
