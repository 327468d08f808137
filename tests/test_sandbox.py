"""The hardware runner contains candidates that hang, crash or raise, and still reports the others."""

import pytest

from tools.evaluate.backends import INTERPRETER
from tools.evaluate.runner import Runner


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    from conftest import fixture_text
    r = Runner(str(tmp_path_factory.mktemp("sandbox")), fixture_text("vadd", "reference.py"), INTERPRETER,
               timeout_s=20)
    r.build_suite()
    return r


def hostile(fixed: str, forward_prefix: str) -> str:
    return fixed.replace("        x, z = x.contiguous(), z.contiguous()\n",
                         forward_prefix + "        x, z = x.contiguous(), z.contiguous()\n")


def test_suite_has_default_seeds_sizes_and_regimes_split(runner):
    ids = runner.ids()
    assert {"default/seed1", "default/seed2", "default/seed3"} <= set(ids)
    assert any(i.startswith("size/n_elements=2999") for i in ids)
    assert any(i.startswith("regime/large") for i in ids)
    assert set(runner.ids("search")).isdisjoint(runner.ids("heldout"))
    assert runner.ids("heldout")


def test_fixed_passes_and_candidate_mismatches(runner, vadd_fixed, vadd_candidate):
    good, bad = runner.screen([vadd_fixed, vadd_candidate], runner.ids("search"))
    assert good.status == "pass" and all(v.launches >= 1 for v in good.variants)
    assert bad.status == "mismatch"
    v = bad.variants[0]
    assert v.errors[0].first_bad_index == [2048]  # the floor-divided grid leaves the tail block unwritten


def test_hanging_candidate_times_out_and_is_killed(tmp_path, vadd_reference, vadd_fixed):
    r = Runner(str(tmp_path), vadd_reference, INTERPRETER, timeout_s=8)
    r.build_suite()
    res = r.evaluate(hostile(vadd_fixed, "        while True:\n            pass\n"), ["default/seed1"])
    assert res.status == "timeout"
    assert "killed" in res.variants[0].message


def test_segfaulting_candidate_is_a_runtime_error_naming_the_signal(runner, vadd_fixed):
    seg = hostile(vadd_fixed, "        import ctypes\n        ctypes.string_at(0)\n")
    res_seg, res_good = runner.screen([seg, vadd_fixed], ["default/seed1"])
    assert res_seg.status == "runtime_error" and "SIGSEGV" in res_seg.variants[0].message
    assert res_good.status == "pass"  # the next candidate ran in a fresh process


def test_raising_kernel_maps_to_candidate_line(runner, vadd_fixed):
    src = vadd_fixed.replace("    tl.store(y_ptr + offsets, x + alpha * z, mask=mask)",
                             "    tl.store(y_ptr + offsets, x + alpha * undefined_name, mask=mask)")
    res = runner.evaluate(src, ["default/seed1"])
    assert res.status in ("compile_error", "runtime_error")
    line = [i + 1 for i, t in enumerate(src.splitlines()) if "undefined_name" in t][0]
    assert f"candidate.py:{line}" in res.variants[0].message


def test_candidate_that_fails_to_import_is_a_compile_error(runner):
    res = runner.evaluate("import torch\nraise ImportError('no such module')\n", ["default/seed1"])
    assert res.status == "compile_error"


def test_secrets_do_not_reach_the_candidate(runner, vadd_fixed, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    leak = hostile(vadd_fixed, "        import os\n        assert 'OPENAI_API_KEY' not in os.environ\n")
    assert runner.evaluate(leak, ["default/seed1"]).status == "pass"


def test_ill_conditioned_variants_are_dropped(tmp_path):
    """A one-pass variance of inputs offset by -100: even the fp32 reference misses fp64 by far."""
    ref = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return (x * x).mean(-1) - x.mean(-1) ** 2


rows = 8
cols = 512


def get_inputs():
    return [torch.rand(rows, cols)]


def get_init_inputs():
    return []
'''
    r = Runner(str(tmp_path), ref, INTERPRETER)
    ids = [v["id"] for v in r.build_suite()]
    assert "regime/negative/seed1" in ids
    assert not any(i.startswith("regime/offset") for i in ids)


# ------------------------------------------------------------------ the OS sandbox itself (tools.sandbox.launch)
def _inside(code: str, **kw):
    import sys

    from tools.sandbox.launch import run_sandboxed
    return run_sandboxed([sys.executable, "-c", code], timeout_s=60, **kw)


def test_sandbox_hides_processes_network_and_user_files(tmp_path):
    import os
    secret = tmp_path / "user_file.txt"
    secret.write_text("user data")
    code = f"""
import os, socket
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("user file visible", os.path.exists({str(secret)!r}))
print("home visible", os.path.exists("/root/.bashrc") or os.path.exists("/home"))
try:
    socket.create_connection(("127.0.0.1", 22), timeout=2)
    print("network yes")
except OSError as e:
    print("network no")
try:
    open({os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")!r}, "a")
    print("project writable")
except OSError:
    print("project read-only")
"""
    res = _inside(code)
    out = res.stdout_tail
    assert res.returncode == 0, res.stderr_tail
    pids = eval(out.split("pids ", 1)[1].splitlines()[0])
    assert max(pids) < 10  # a fresh PID namespace: bwrap's init and this process only
    assert "user file visible False" in out and "network no" in out and "project read-only" in out


def test_scratch_is_bounded_and_gone_after_the_run():
    code = """
import os
written = 0
try:
    with open("/tmp/fill", "wb") as f:
        for _ in range(64):
            f.write(b"\\0" * (1 << 20)); written += 1
except OSError as e:
    print("stopped", written, e.errno)
"""
    res = _inside(code, scratch_bytes=16 << 20)
    assert "stopped" in res.stdout_tail and int(res.stdout_tail.split()[1]) <= 16


def test_project_cloned_under_tmp_stays_visible_above_the_scratch(tmp_path, monkeypatch):
    import os
    import tempfile

    import tools.sandbox.launch as sb
    clone = tempfile.mkdtemp(prefix="nearmiss-clone-", dir="/tmp")
    try:
        os.makedirs(f"{clone}/tools")
        with open(f"{clone}/tools/marker.txt", "w") as f:
            f.write("clone-marker")
        monkeypatch.setattr(sb, "PROJECT_ROOT", clone)
        res = _inside(f"print(open({clone + '/tools/marker.txt'!r}).read())")
        assert "clone-marker" in res.stdout_tail, res.stderr_tail
    finally:
        import shutil
        shutil.rmtree(clone)


def test_project_root_under_the_scratch_is_read_only_inside(monkeypatch):
    """A clone under /tmp: the root's folder (on PYTHONPATH) must not be writable, or a module left there reaches the next child."""
    import os
    import shutil
    import tempfile

    import tools.sandbox.launch as sb
    clone = tempfile.mkdtemp(prefix="nearmiss-clone-", dir="/tmp")
    try:
        os.makedirs(f"{clone}/tools")
        monkeypatch.setattr(sb, "PROJECT_ROOT", clone)
        res = _inside(f"""
try:
    open({clone + '/planted_mod.py'!r}, "w").write("X = 1"); print("root writable")
except OSError as e:
    print("root read-only", type(e).__name__)
""")
        assert "root read-only" in res.stdout_tail and "root writable" not in res.stdout_tail, res.stderr_tail
    finally:
        shutil.rmtree(clone)


def test_another_interpreters_environment_is_bound_read_only(tmp_path):
    """The Ascend worker's python (another venv) must exist inside: its prefix is bound; this process's is not repeated."""
    import os
    import sys

    import tools.sandbox.launch as sb
    venv = tmp_path / "venv-other"
    (venv / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), venv / "bin" / "python")
    assert str(venv) in sb._interpreter_env(str(venv / "bin" / "python"))
    assert sb._interpreter_env(sys.executable) == []
    argv = sb.bwrap_argv(ro_extra=tuple(sb._interpreter_env(str(venv / "bin" / "python"))))
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"].count(str(venv)) == 1


def test_bind_list_holds_the_worker_packages_never_the_project_root():
    """Findings 4/5: the project root (runs/ with earlier suites' expected.pt, the user's .env) is never bound."""
    import os

    import tools.sandbox.launch as sb
    argv = sb.bwrap_argv()
    binds = [argv[i + 2] for i, a in enumerate(argv) if a in ("--ro-bind", "--ro-bind-try", "--bind", "--dev-bind")]
    root = os.path.realpath(sb.PROJECT_ROOT)
    # no bind is the root or above it (a bind of / or of a parent would expose it too)
    assert not [b for b in binds if root == os.path.realpath(b) or root.startswith(os.path.realpath(b) + os.sep)]
    assert os.path.join(root, "tools") in binds


def test_project_root_files_are_absent_inside_and_the_worker_still_imports(tmp_path):
    """A file planted at the project root and a run folder's expected.pt are not there inside; ``tools`` imports."""
    import os
    import uuid

    import tools.sandbox.launch as sb
    root = sb.PROJECT_ROOT
    tag = uuid.uuid4().hex[:8]
    env_file = os.path.join(root, f".env-nearmiss-test-{tag}")
    run_dir = os.path.join(root, "runs", f"nearmiss-test-{tag}", "work", "suite")
    try:
        with open(env_file, "w") as f:
            f.write("OPENAI_API_KEY=sk-should-not-be-seen\n")
        os.makedirs(run_dir)
        with open(os.path.join(run_dir, "expected.pt"), "wb") as f:
            f.write(b"expected")
        code = f"""
import os, sys
for p in ({env_file!r}, {run_dir + '/expected.pt'!r}, {root + '/pyproject.toml'!r}, {root + '/README.md'!r}):
    try:
        open(p, "rb").read(); print("READ", p)
    except OSError as e:
        print("absent", type(e).__name__)
print("root lists", sorted(os.listdir({root!r})))
import tools.worker.main, tools.suite.task
print("imports", tools.worker.main.__file__.startswith({root!r}))
"""
        res = _inside(code)
        assert "READ" not in res.stdout_tail, res.stdout_tail
        assert res.stdout_tail.count("absent") == 4, (res.stdout_tail, res.stderr_tail)
        assert "imports True" in res.stdout_tail, res.stderr_tail
        listed = res.stdout_tail.split("root lists", 1)[1].splitlines()[0]
        assert "runs" not in listed and ".env" not in listed and "README.md" not in listed, listed
    finally:
        import shutil
        os.remove(env_file)
        shutil.rmtree(os.path.dirname(os.path.dirname(run_dir)))
        if not os.listdir(os.path.join(root, "runs")):
            os.rmdir(os.path.join(root, "runs"))


def test_worker_starts_with_a_safe_sys_path():
    """Finding 8: neither the scratch cwd nor a script folder is on the worker's sys.path (``python -P``)."""
    import sys

    from tools.sandbox.launch import run_sandboxed
    res = run_sandboxed([sys.executable, "-c", "import sys, os; print('path', [p for p in sys.path if p in ('', os.getcwd(), '/tmp')])"],
                        timeout_s=60)
    assert "path []" in res.stdout_tail, (res.stdout_tail, res.stderr_tail)


def test_seccomp_refuses_native_process_creation_and_inet_sockets():
    code = """
import ctypes, socket
from tools.worker.confine import install_seccomp
assert install_seccomp()
libc = ctypes.CDLL(None)
print("fork", libc.fork())
try:
    socket.socket(socket.AF_INET); print("inet yes")
except OSError:
    print("inet no")
import threading; t = threading.Thread(target=print, args=("thread ok",)); t.start(); t.join()
"""
    res = _inside(code)
    assert "fork -1" in res.stdout_tail and "inet no" in res.stdout_tail and "thread ok" in res.stdout_tail


def test_refused_namespaces_stop_untrusted_code_in_one_line(monkeypatch):
    import tools.sandbox.launch as sb
    monkeypatch.setattr(sb, "_PROBE", {"ok": False, "why": "the kernel refuses the sandbox's namespaces: EPERM"})
    monkeypatch.setattr(sb, "_UNSAFE", False)
    with pytest.raises(sb.SandboxUnavailable) as e:
        sb.check_sandbox()
    assert "\n" not in str(e.value) and "--unsafe-no-sandbox" in str(e.value)
    sb.allow_unsafe(True)
    assert sb.check_sandbox() is False
    res = _inside("print('ran unsandboxed')")
    assert "ran unsandboxed" in res.stdout_tail


def test_cli_refuses_without_namespaces(monkeypatch, tmp_path, capsys):
    import tools.sandbox.launch as sb
    from graph.run import main
    monkeypatch.setattr(sb, "_PROBE", {"ok": False, "why": "bubblewrap (bwrap) is not installed"})
    monkeypatch.setattr(sb, "_UNSAFE", False)
    import os

    from conftest import ROOT
    rc = main([os.path.join(ROOT, "tests", "fixtures", "vadd"), "--check", "--out", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "refusing to run untrusted code" in err[0]


def test_scrub_replaces_secret_values_in_text_and_files(tmp_path):
    from tools.sandbox.scrub import scrub, scrub_tree
    env = {"OPENAI_API_KEY": "sk-abcdef0123456789", "HOME": "/root/abcdefgh"}
    assert scrub("key sk-abcdef0123456789 at /root/abcdefgh", env) == "key [redacted] at /root/abcdefgh"
    (tmp_path / "a.json").write_text('{"m": "sk-abcdef0123456789"}')
    (tmp_path / "b.sqlite").write_bytes(b"\x00\x01sk-abcdef0123456789\x00")
    assert len(scrub_tree(str(tmp_path), env)) == 2
    assert b"sk-abcdef" not in (tmp_path / "b.sqlite").read_bytes()
    assert len((tmp_path / "b.sqlite").read_bytes()) == 22  # same length: binary structure holds
