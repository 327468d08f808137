"""The GPU compile cache key (tools.compile.gpu): what compiles, not the whole module."""


def test_compile_cache_key_ignores_edits_outside_the_kernel(tmp_path):
    """tools.compile.gpu keys compiles by Triton's dependency hash: a launcher edit reuses them, a kernel edit not."""
    import os
    import subprocess
    import sys

    from conftest import FIXTURES, ROOT

    with open(os.path.join(FIXTURES, "vadd", "candidate.py")) as f:
        src = f.read()
    variants = {"same": src, "host": src + "\n\nHOST_ONLY = 3  # a change outside the kernel\n",
                "kernel": src.replace("tl.program_id(axis=0)", "tl.program_id(0)")}
    assert variants["kernel"] != src
    for name, text in variants.items():
        (tmp_path / f"{name}.py").write_text(text)
    code = ("import importlib.util, sys\n"
            "from tools.compile.gpu import _kernel_key\n"
            "for n in ['same', 'host', 'kernel']:\n"
            f"    spec = importlib.util.spec_from_file_location('m_' + n, r'{tmp_path}/' + n + '.py')\n"
            "    m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m; spec.loader.exec_module(m)\n"
            "    print(_kernel_key(m._axpy_kernel))\n")
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    same, host, kernel = p.stdout.split()
    assert same.startswith("triton:") and same == host and kernel != same
