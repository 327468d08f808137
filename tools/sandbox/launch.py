"""Run untrusted work (candidate kernels, the reference) in an operating-system sandbox.

Every evaluation runs ``python -m tools.worker.main COMMAND`` inside bubblewrap (``bwrap``):

- new user, PID, network, IPC, UTS (and, where available, cgroup) namespaces: the child
  sees no other process, cannot reach the network, and dies with the whole namespace when
  the parent kills it (``--die-with-parent``, PID 1 of the namespace is bwrap);
- a filesystem holding only the system folders (read-only), the Python installation and
  its virtual environment (read-only), the worker's packages (``WORKER_PACKAGES``, read-only;
  never the project root with its ``runs/`` and ``.env``) and a size-limited
  writable tmpfs scratch at ``/tmp``; no user files, no run folder, no suite files;
- an environment allowlist (no API keys); resource limits (address space, CPU time, file size);
- inside, ``tools.worker.confine.install_seccomp`` denies sockets other than ``AF_UNIX``, ptrace,
  mount/unshare/setns, process creation and ``exec`` once the worker has started.

The job (candidate sources, the inputs of the variants to run) goes to the child on its
stdin; results come back as frames on a pipe (``tools.worker.main.send``) that the parent
decodes with ``torch.load(weights_only=True)``. Nothing the child writes lands on the
host's disk; expected outputs never leave the parent.

Where the kernel refuses namespaces, or libseccomp's Python bindings (``pyseccomp``) cannot
be loaded, ``check_sandbox`` says so in one line and untrusted code is refused unless the
user passes ``--unsafe-no-sandbox`` (``allow_unsafe``); then the child runs as a plain
limited subprocess (own session, rlimits, env allowlist), seccomp filter only where it loads.

Public API for other backends (e.g. a native compiler): ``run_sandboxed(argv, ...)``.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from tools.phases import phase

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The project's packages the worker imports (``tools.worker`` imports only from ``tools``);
#: bound read-only one by one, never the project root (its ``runs/``, ``.env``, caches).
WORKER_PACKAGES = ("tools",)

#: Environment variables copied into the child; everything else (API keys, tokens) is dropped.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES",
                 "TRITON_PTXAS_PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")

OUTPUT_CAP = 64 * 1024  # bytes of the child's stdout/stderr kept for messages
#: Size of the writable tmpfs at /tmp inside the sandbox, bytes (the whole disk a child may fill).
SCRATCH_BYTES = 1 << 30
#: Largest total of result frames a child may send, bytes (bounds the parent's memory).
RESULT_CAP = 4 << 30
#: Where the child's scratch lives inside the sandbox.
SCRATCH = "/tmp"

_UNSAFE = os.environ.get("NEARMISS_UNSAFE_NO_SANDBOX", "") == "1"


class SandboxUnavailable(RuntimeError):
    """The OS sandbox cannot start here and ``--unsafe-no-sandbox`` was not given."""


@dataclass
class SandboxResult:
    """What a sandboxed process did: exit status, signal, timeout, output tails, wall seconds, result frames."""

    returncode: int | None
    signal_name: str | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str
    wall_s: float
    frames: list = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        """True when the child died by a signal other than our timeout kill."""
        return self.signal_name is not None and not self.timed_out


def allow_unsafe(flag: bool = True) -> None:
    """Let untrusted code run without the OS sandbox when namespaces are refused (``--unsafe-no-sandbox``)."""
    global _UNSAFE
    _UNSAFE = flag


_PROBE: dict = {}


#: Exit status of the sandbox probe when bubblewrap ran but ``import pyseccomp`` failed inside.
_NO_SECCOMP_RC = 97
_PROBE_CODE = ("import sys\ntry:\n    import pyseccomp  # noqa: F401\nexcept Exception as e:\n"
               "    sys.stdout.write(f'{type(e).__name__}: {e}')\n    sys.exit(%d)\n" % _NO_SECCOMP_RC)


def _seccomp_missing(detail: str) -> str:
    return (f"libseccomp's Python bindings cannot be loaded (`import pyseccomp`: {detail[:120]}), so the "
            "sandbox's seccomp filter cannot be installed (pyseccomp is a dependency of the project: pip install -e .; scripts/setup.sh installs libseccomp2)")


def sandbox_status() -> tuple[bool, str]:
    """Whether the OS sandbox can run here: ``(ok, one-line reason when not)``; probed once.

    Both parts are needed: bubblewrap's namespaces and the seccomp filter the worker installs
    inside (``tools.worker.confine.install_seccomp``, through ``pyseccomp``). The bindings are
    imported here (the children run this interpreter) and again inside the probe sandbox.
    """
    if "ok" not in _PROBE:
        from shutil import which
        try:
            import pyseccomp  # noqa: F401
            missing = ""
        except Exception as e:  # noqa: BLE001 - ImportError, or OSError when libseccomp.so is absent
            missing = f"{type(e).__name__}: {e}".splitlines()[0]
        if missing:
            _PROBE.update(ok=False, why=_seccomp_missing(missing))
        elif which("bwrap") is None:
            _PROBE.update(ok=False, why="bubblewrap (bwrap) is not installed (scripts/setup.sh installs it)")
        else:
            try:
                p = subprocess.run(bwrap_argv() + ["--", sys.executable, "-c", _PROBE_CODE], capture_output=True,
                                   timeout=60, env=_base_env())
                ok = p.returncode == 0
                why = "" if ok else (p.stderr.decode("utf-8", "replace").strip().splitlines() or ["failed"])[-1]
                if p.returncode == _NO_SECCOMP_RC:
                    why = _seccomp_missing(p.stdout.decode("utf-8", "replace").strip() or "failed")
                elif why:
                    why = f"the kernel refuses the sandbox's namespaces: {why[:200]}"
            except (OSError, subprocess.TimeoutExpired) as e:
                ok, why = False, f"the kernel refuses the sandbox's namespaces: {str(e)[:200]}"
            _PROBE.update(ok=ok, why=why)
    return _PROBE["ok"], _PROBE["why"]


def check_sandbox() -> bool:
    """True when evaluations run in the OS sandbox; False in explicit unsafe mode.

    Raises:
        SandboxUnavailable: namespaces are refused and ``allow_unsafe`` was not called; its
            message is one line naming the reason and the ``--unsafe-no-sandbox`` flag.
    """
    ok, why = sandbox_status()
    if ok:
        return True
    if _UNSAFE:
        return False
    raise SandboxUnavailable(f"{why}; refusing to run untrusted code (pass --unsafe-no-sandbox to run it anyway)")


def _ro_system() -> list[str]:
    args: list[str] = []
    for d in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for f in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
              "/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/ssl/certs"):
        args += ["--ro-bind-try", f, f]
    return args


def _interpreter_env(python: str) -> list[str]:
    """The environment (venv prefix) of another interpreter a worker runs with, e.g. ``.venv-ascend``.

    Args:
        python: path of the interpreter (``argv[0]`` of the sandboxed command).

    Returns:
        ``[prefix]`` (the folder above its ``bin/``) when it is not this process's interpreter
        and exists, else ``[]``. Its ``bin/python`` may be a link to a base Python elsewhere:
        that target's installation is bound too.
    """
    # a venv is known by its path, not by the binary its python links to (every venv of one base shares it)
    if not python or not os.path.isabs(python) or os.path.abspath(python) == os.path.abspath(sys.executable):
        return []
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    out = [prefix] if os.path.isdir(prefix) else []
    real = os.path.realpath(python)
    base = os.path.dirname(os.path.dirname(real))
    if not real.startswith(prefix + os.sep) and os.path.isdir(base) and base != "/":
        out.append(base)
    return out


def _code_paths() -> list[str]:
    """Read-only trees the worker needs: the interpreter, the virtual environment, the worker's packages.

    The project root itself is never bound (it holds ``runs/`` with earlier suites' expected
    outputs, the user's ``.env``, caches): only ``PROJECT_ROOT/<package>`` for each of
    ``WORKER_PACKAGES``, at the same path, so the editable install's finder (which maps a
    package name to its project folder) and ``PYTHONPATH=PROJECT_ROOT`` resolve inside.
    A venv that *is* the project root or contains it is refused the same way: the
    interpreter's prefix is bound only when it lies outside the project root or below it.
    """
    root = os.path.realpath(PROJECT_ROOT)
    paths = {os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)}
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(p + os.sep) for p in paths):
        paths.add(os.path.dirname(exe))
    # a prefix at or above the project root would expose the whole checkout: bind its bin/lib instead
    for p in [p for p in paths if root == p or root.startswith(p + os.sep)]:
        paths.discard(p)
        paths.update(os.path.join(p, d) for d in ("bin", "lib", "lib64", "include") if os.path.isdir(os.path.join(p, d)))
    paths.update(os.path.join(root, pkg) for pkg in WORKER_PACKAGES)
    # keep the outermost of nested paths
    return sorted(p for p in paths if not any(p != q and p.startswith(q + os.sep) for q in paths))


def bwrap_argv(scratch_bytes: int = SCRATCH_BYTES, rw_binds: tuple[str, ...] = (), gpu: bool = False,
               ro_extra: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command line (without ``--`` and the command) of one sandbox.

    Mount order matters: the scratch tmpfs at ``/tmp`` comes first, then the read-only
    binds, so a project or venv cloned under ``/tmp`` stays visible (read-only) above it.

    Args:
        scratch_bytes: size of the writable tmpfs at ``/tmp``.
        rw_binds: host folders bound writable (the compile cache only); created if missing.
        gpu: bind ``/dev`` and ``/sys`` of the host (CUDA needs its device nodes); untested here.
        ro_extra: more host trees bound read-only (the environment of another interpreter).
    """
    a = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
         "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
         "--hostname", "sandbox", "--size", str(int(scratch_bytes)), "--tmpfs", SCRATCH]
    a += _ro_system()
    # the project root's folder (on PYTHONPATH) is an empty tmpfs made read-only below: where the
    # project lies under the scratch (a clone in /tmp), the folder bwrap makes for the package
    # binds would otherwise be writable, and a module left there would reach the next child
    root = os.path.realpath(PROJECT_ROOT)
    a += ["--tmpfs", root]
    for p in sorted(set(_code_paths()) | {os.path.realpath(x) for x in ro_extra}):
        a += ["--ro-bind", p, p]
    a += ["--proc", "/proc"]
    if gpu:
        a += ["--dev-bind", "/dev", "/dev", "--ro-bind-try", "/sys", "/sys"]
    else:
        a += ["--dev", "/dev", "--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    for p in rw_binds:
        os.makedirs(p, exist_ok=True)
        a += ["--bind", p, p]
    # the root is bwrap's own tmpfs, where it made the mount points (the project root's folder
    # among them, which is on PYTHONPATH): read-only, so no child leaves a module there for the next
    a += ["--remount-ro", root, "--remount-ro", "/", "--chdir", SCRATCH]
    return a


def _limits(memory_bytes: int | None, cpu_s: int | None, file_bytes: int) -> None:
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _base_env(home: str = SCRATCH) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(HOME=home, TMPDIR=home, PYTHONPATH=PROJECT_ROOT, PYTHONSAFEPATH="1",
               PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", TRITON_CACHE_DIR=os.path.join(home, ".triton"))
    return env


# ------------------------------------------------------------------ frames (child -> parent results)
def send_frame(fd: int, obj) -> None:
    """Write one result frame (8-byte big-endian length, then ``torch.save`` bytes) to ``fd``."""
    import torch
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    view = memoryview(len(data).to_bytes(8, "big") + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Collector:
    """Threads that drain a child's result pipe (frames), stdout and stderr (tails) without blocking it."""

    def __init__(self, result_fd: int, out_fd: int, err_fd: int, cap: int) -> None:
        self.frames: list = []
        self.progress = 0
        self.tails = {out_fd: bytearray(), err_fd: bytearray()}
        self.threads = [threading.Thread(target=self._frames, args=(result_fd, cap), daemon=True)]
        self.threads += [threading.Thread(target=self._tail, args=(fd,), daemon=True) for fd in (out_fd, err_fd)]
        self.out_fd, self.err_fd = out_fd, err_fd
        for t in self.threads:
            t.start()

    def _frames(self, fd: int, cap: int) -> None:
        import torch
        buf, total = bytearray(), 0
        try:
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > cap:
                    break  # more results than any honest suite produces: the rest is dropped
                buf += chunk
                self.progress += 1
                while len(buf) >= 8:
                    n = int.from_bytes(buf[:8], "big")
                    if len(buf) < 8 + n:
                        break
                    data, buf = bytes(buf[8:8 + n]), buf[8 + n:]
                    try:
                        if data[:1] == b"{":  # a JSON frame (the Ascend compile worker has no torch)
                            self.frames.append(json.loads(data))
                        else:
                            self.frames.append(torch.load(io.BytesIO(data), weights_only=True))
                    except Exception:  # noqa: BLE001 - untrusted bytes: a frame that does not decode is dropped
                        self.frames.append({"event": "bad_frame"})
        finally:
            os.close(fd)

    def _tail(self, fd: int) -> None:
        keep = self.tails[fd]
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                keep += chunk
                if len(keep) > 2 * OUTPUT_CAP:
                    del keep[:-OUTPUT_CAP]
        finally:
            os.close(fd)

    def finish(self, timeout: float = 10.0) -> None:
        """Wait for the pipes to close (the child and all it started are gone)."""
        for t in self.threads:
            t.join(timeout)

    def tail(self, fd: int) -> str:
        return bytes(self.tails[fd][-OUTPUT_CAP:]).decode("utf-8", "replace")


def _feed(fd: int, data: bytes) -> None:
    """Write the job to the child's stdin in a thread (a child that never reads cannot block the parent)."""
    def run():
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass
        finally:
            os.close(fd)
    threading.Thread(target=run, daemon=True).start()


#: With progress reports, a process may run this many times its timeout in all, as long as it progresses.
PROGRESS_CAP = 8


def _progress_waiter(timeout_s: float, progress: Callable[[], int] | None):
    """A function ``slice() -> seconds to wait next, or 0 when the deadline has passed``.

    Without ``progress`` the deadline is ``timeout_s`` after the start. With it (a counter
    that grows with each result frame), the deadline moves to ``timeout_s`` after the last
    progress, up to ``PROGRESS_CAP * timeout_s`` in all: a slow suite of many variants
    finishes, a hang in any one of them is still killed ``timeout_s`` after its last progress.
    """
    t0 = time.monotonic()
    state = {"deadline": t0 + timeout_s, "seen": -1}
    hard = t0 + (PROGRESS_CAP * timeout_s if progress else timeout_s)

    def next_slice() -> float:
        now = time.monotonic()
        if progress:
            seen = progress()
            if seen != state["seen"]:
                state["seen"], state["deadline"] = seen, now + timeout_s
        left = min(state["deadline"], hard) - now
        return max(0.0, min(left, 1.0))

    return next_slice


def _decode(status: int) -> tuple[int, str | None]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return -sig, signal.Signals(sig).name
        except ValueError:
            return -sig, f"signal {sig}"
    return os.WEXITSTATUS(status), None


def _rc_signal(rc: int | None) -> str | None:
    if rc is not None and rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return None


def run_sandboxed(argv: list[str], stdin_bytes: bytes = b"", env_extra: dict[str, str] | None = None,
                  timeout_s: float = 60.0, memory_bytes: int | None = 16 << 30, cpu_s: int | None = None,
                  file_bytes: int = 1 << 30, scratch_bytes: int = SCRATCH_BYTES,
                  rw_binds: tuple[str, ...] = (), gpu: bool = False, progress: bool = False,
                  result_cap: int = RESULT_CAP) -> SandboxResult:
    """Run ``argv`` in a fresh OS sandbox; the public entry point for any backend.

    The child reads ``stdin_bytes`` on its stdin and may send result frames (``send_frame``)
    to the file descriptor named by its ``NEARMISS_RESULT_FD`` variable; its cwd, HOME and
    TMPDIR are the scratch tmpfs ``/tmp``. Paths in ``argv`` must lie in the read-only trees
    (the interpreter and its environment, the worker packages of ``WORKER_PACKAGES``) or in ``rw_binds``.

    Args:
        argv: command inside the sandbox, e.g. ``[sys.executable, "-m", "tools.worker.main", "eval"]``.
        stdin_bytes: the job, written to the child's stdin.
        env_extra: variables added to the environment allowlist (``TRITON_INTERPRET``...).
        timeout_s: wall-clock seconds (or, with ``progress``, seconds without a new frame).
        memory_bytes: RLIMIT_AS in bytes; None for none (CUDA reserves huge virtual ranges).
        cpu_s: RLIMIT_CPU seconds; default twice the longest wall time allowed plus 10.
        file_bytes: RLIMIT_FSIZE, bytes.
        scratch_bytes: size of the tmpfs at ``/tmp``, bytes.
        rw_binds: host folders bound writable.
        gpu: give the child the host's ``/dev`` and ``/sys`` (CUDA); untested on this machine.
        progress: each result frame moves the deadline (``_progress_waiter``).
        result_cap: bytes of frames accepted in all.

    Returns:
        A ``SandboxResult`` with the decoded frames; never raises for anything the child does.

    Raises:
        SandboxUnavailable: no OS sandbox here and unsafe mode is off (``check_sandbox``).
    """
    sandboxed = check_sandbox()
    env = _base_env()
    env.update(env_extra or {})
    if cpu_s is None:
        cpu_s = int(timeout_s * (PROGRESS_CAP if progress else 1) * 2) + 10
    scratch = None
    if not sandboxed:  # explicit unsafe mode: a private folder stands in for the tmpfs
        import tempfile
        scratch = tempfile.mkdtemp(prefix="nearmiss-unsafe-")
        env.update(HOME=scratch, TMPDIR=scratch, TRITON_CACHE_DIR=os.path.join(scratch, ".triton"))
        env["NEARMISS_UNSAFE_NO_SANDBOX"] = "1"  # the worker runs even where it cannot load seccomp
    res_r, res_w = os.pipe()
    env["NEARMISS_RESULT_FD"] = str(res_w)
    cmd = bwrap_argv(scratch_bytes, rw_binds, gpu, tuple(_interpreter_env(argv[0]))) + ["--", *argv] \
        if sandboxed else list(argv)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, cwd=scratch or "/", env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, pass_fds=(res_w,), start_new_session=True,
                                preexec_fn=lambda: _limits(memory_bytes, cpu_s, file_bytes))
    finally:
        os.close(res_w)
    col = _Collector(res_r, os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno()), result_cap)
    proc.stdout.close()
    proc.stderr.close()
    _feed(os.dup(proc.stdin.fileno()), stdin_bytes)
    proc.stdin.close()
    waiter = _progress_waiter(timeout_s, (lambda: col.progress) if progress else None)
    timed_out = False
    try:
        while True:
            left = waiter()
            if left <= 0:
                timed_out = True
                break
            try:
                proc.wait(timeout=left)
                break
            except subprocess.TimeoutExpired:
                continue
    finally:
        _kill_group(proc.pid)
        proc.wait()
        col.finish()
        if scratch:
            import shutil
            shutil.rmtree(scratch, ignore_errors=True)
    rc = proc.returncode
    return SandboxResult(returncode=rc, signal_name=_rc_signal(rc), timed_out=timed_out,
                         stdout_tail=col.tail(col.out_fd), stderr_tail=col.tail(col.err_fd),
                         wall_s=time.monotonic() - t0, frames=col.frames)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # bwrap dies; --die-with-parent takes the namespace's processes
    except (ProcessLookupError, PermissionError):
        pass


def run_worker(args: list[str], job: dict, env_extra: dict[str, str], timeout_s: float,
               memory_bytes: int | None = 16 << 30, file_bytes: int = 1 << 30, warm: bool = False,
               progress: bool = False, rw_binds: tuple[str, ...] = (), gpu: bool = False,
               python: str | None = None) -> SandboxResult:
    """Run ``python -m tools.worker.main ARGS`` in the sandbox with ``job`` on its stdin.

    Args:
        args: worker arguments (the command: ``suite``, ``eval``, ``probe``, ``compile``).
        job: the job; pickled with ``torch.save`` (tensors included) and sent on stdin.
        env_extra: backend variables (e.g. ``TRITON_INTERPRET=1``) added to the allowlist.
        timeout_s: wall-clock seconds before the sandbox is killed.
        memory_bytes: address-space limit (RLIMIT_AS) in bytes; None for none.
        file_bytes: largest file the child may write (in its scratch), bytes.
        warm: fork the child from a warm worker (``tools.worker.zygote``, itself in the same kind of
            sandbox) that has imported torch and triton already; falls back to a fresh
            sandbox if the warm worker is unavailable. Same limits and deadline either way.
        progress: each result frame moves the deadline (``_progress_waiter``).
        rw_binds: host folders bound writable (the compile cache).
        gpu: the backend needs the host's devices.
        python: another interpreter (the Ascend environment's, which has no torch): the job then
            travels as JSON and the child answers with JSON frames; never a warm worker.

    Returns:
        A ``SandboxResult``; never raises for anything the child does.

    Raises:
        SandboxUnavailable: see ``check_sandbox``.
    """
    if python is not None:
        return run_sandboxed([python, "-m", "tools.worker.main", *args], json.dumps(job).encode(), env_extra, timeout_s,
                             memory_bytes, int(timeout_s * 2) + 10, file_bytes, rw_binds=rw_binds, progress=progress)
    import torch
    buf = io.BytesIO()
    torch.save(job, buf)
    data = buf.getvalue()
    cpu_s = int(timeout_s * (PROGRESS_CAP if progress else 1) * 2) + 10
    if warm and WARM_ENABLED and not gpu:
        with phase("worker_start"):  # waits only while the warm worker is still starting
            pool = WarmPool.get(env_extra, rw_binds)
        if pool is not None:
            res = pool.run(args, data, env_extra, _progress_waiter, timeout_s, progress, memory_bytes, cpu_s,
                           file_bytes)
            if res is not None:
                return res
    return run_sandboxed([sys.executable, "-P", "-m", "tools.worker.main", *args], data, env_extra, timeout_s, memory_bytes,
                         cpu_s, file_bytes, rw_binds=rw_binds, gpu=gpu, progress=progress)


#: Set NEARMISS_WARM=0 to start a fresh sandbox for every evaluation.
WARM_ENABLED = os.environ.get("NEARMISS_WARM", "1") != "0"


class WarmPool:
    """One warm worker (``tools.worker.zygote``) per backend environment, run inside the OS sandbox.

    Control messages travel on an ``AF_UNIX`` socket pair; each evaluation's pipes (job,
    results, stdout, stderr) are handed to the zygote with ``SCM_RIGHTS``, so a child holds
    only its own pipes and never the control channel.
    """

    _pools: dict[str, "WarmPool | None"] = {}
    _key_locks: dict[str, threading.Lock] = {}
    _dict_lock = threading.Lock()

    def __init__(self, env_extra: dict[str, str], rw_binds: tuple[str, ...] = ()) -> None:
        sandboxed = check_sandbox()
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = _base_env()
        env.update(env_extra)
        env["NEARMISS_CONTROL_FD"] = str(child.fileno())
        self.home = None
        if not sandboxed:
            import tempfile
            self.home = tempfile.mkdtemp(prefix="nearmiss-warm-")
            env.update(HOME=self.home, TMPDIR=self.home, TRITON_CACHE_DIR=os.path.join(self.home, ".triton"),
                       NEARMISS_UNSAFE_NO_SANDBOX="1")
        argv = [sys.executable, "-P", "-m", "tools.worker.zygote"]  # -P: the scratch cwd is not on sys.path
        cmd = bwrap_argv(SCRATCH_BYTES, rw_binds) + ["--", *argv] if sandboxed else argv
        try:
            self.proc = subprocess.Popen(cmd, cwd=self.home or "/", env=env, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         pass_fds=(child.fileno(),), start_new_session=True)
        finally:
            child.close()
        self._buf = b""
        self._lock = threading.Lock()
        ready = self._read(120)
        if not ready or not ready.get("ready"):
            self.close()
            raise RuntimeError("the warm worker did not start")

    @classmethod
    def get(cls, env_extra: dict[str, str], rw_binds: tuple[str, ...] = ()) -> "WarmPool | None":
        """The pool for this environment, started on first use; None if it cannot start."""
        key = json.dumps([env_extra, list(rw_binds)], sort_keys=True)
        with cls._dict_lock:
            lock = cls._key_locks.setdefault(key, threading.Lock())
        with lock:  # one start per environment; other environments start concurrently
            pool = cls._pools.get(key, False)
            if pool is False or (pool is not None and pool.proc.poll() is not None):
                try:
                    pool = _on_starter_thread(lambda: cls(env_extra, rw_binds))
                except (OSError, RuntimeError):
                    pool = None
                cls._pools[key] = pool
            return pool

    @classmethod
    def prestart(cls, env_extra: dict[str, str], rw_binds: tuple[str, ...] = ()) -> None:
        """Start the pool for an environment in a background thread (its start overlaps other work)."""
        threading.Thread(target=cls.get, args=(env_extra, rw_binds), daemon=True).start()

    def _read(self, timeout: float) -> dict | None:
        """The next control line, or None after ``timeout`` seconds or at EOF."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, args, data: bytes, env_extra, make_waiter, timeout_s, progress, memory_bytes, cpu_s,
            file_bytes) -> SandboxResult | None:
        """Fork one evaluation; None when the warm worker failed before the child ran (the caller starts a fresh one)."""
        req = {"args": args, "env": env_extra, "memory_bytes": memory_bytes, "cpu_s": cpu_s, "file_bytes": file_bytes}
        t0 = time.monotonic()
        with self._lock:
            pipes = [os.pipe() for _ in range(4)]  # job, result, stdout, stderr
            job_r, job_w = pipes[0]
            child_ends = [job_r, pipes[1][1], pipes[2][1], pipes[3][1]]
            try:
                socket.send_fds(self.sock, [(json.dumps(req) + "\n").encode()], child_ends)
            except OSError:
                for r, w in pipes:
                    os.close(r)
                    os.close(w)
                self.close()
                return None
            for fd in child_ends:
                os.close(fd)
            col = _Collector(pipes[1][0], pipes[2][0], pipes[3][0], RESULT_CAP)
            _feed(job_w, data)
            try:
                started = self._read(60)
                if not started or "pid" not in started:
                    self.close()  # the child never ran: the caller starts a fresh sandbox
                    col.finish()
                    return None
                waiter = make_waiter(timeout_s, (lambda: col.progress) if progress else None)
                done = None
                while done is None:
                    left = waiter()
                    if left <= 0:
                        break
                    done = self._read(left)
                    if done is None and self.proc.poll() is not None:
                        raise OSError("the warm worker exited")
                timed_out = done is None
                if timed_out:
                    self.sock.sendall((json.dumps({"kill": started["pid"]}) + "\n").encode())
                    done = self._read(30)
                if done is None or "status" not in done:
                    raise OSError("no status")
            except (OSError, ValueError):
                self.close()  # the whole sandbox dies: the child with it
                col.finish()
                return SandboxResult(returncode=-signal.SIGKILL, signal_name="SIGKILL", timed_out=True,
                                     stdout_tail=col.tail(col.out_fd), stderr_tail=col.tail(col.err_fd),
                                     wall_s=time.monotonic() - t0, frames=col.frames)
            col.finish()
        rc, sig = _decode(done["status"])
        if timed_out:
            rc, sig = -signal.SIGKILL, "SIGKILL"
        return SandboxResult(returncode=rc, signal_name=sig, timed_out=timed_out,
                             stdout_tail=col.tail(col.out_fd), stderr_tail=col.tail(col.err_fd),
                             wall_s=time.monotonic() - t0, frames=col.frames)

    def close(self) -> None:
        """Stop the warm worker and everything in its sandbox."""
        try:
            self.sock.close()
        except OSError:
            pass
        _kill_group(self.proc.pid)
        self.proc.wait()
        if self.home:
            import shutil
            shutil.rmtree(self.home, ignore_errors=True)

    @classmethod
    def close_all(cls) -> None:
        """Stop every warm worker of this process (registered with atexit)."""
        for pool in list(cls._pools.values()):
            if pool is not None:
                pool.close()
        cls._pools.clear()


atexit.register(WarmPool.close_all)

_starter: dict = {}
_starter_lock = threading.Lock()


def _on_starter_thread(make):
    """Run ``make()`` (a warm worker's start) on one thread that lives as long as this process; its result.

    ``bwrap --die-with-parent`` is ``PR_SET_PDEATHSIG``, which fires when the *thread* that
    started the sandbox ends, not the process. A warm worker started by a short-lived thread
    (the CLI's prestart thread, a LangGraph executor thread, the audit's compile thread) was
    killed (SIGKILL) as soon as that thread ended: the prestart was wasted and a later
    evaluation started the worker again, or found it dead mid-run and reported a timeout
    (``graph.batch`` saw "the reference did not finish its inputs within 120 s" 25 s into a
    task). Every warm worker is therefore started here; it still dies with the process.

    Raises:
        Whatever ``make`` raises.
    """
    import queue

    with _starter_lock:
        if "q" not in _starter or not _starter["t"].is_alive():
            q: queue.Queue = queue.Queue()

            def serve() -> None:
                while True:
                    fn, box, done = q.get()
                    try:
                        box.append((True, fn()))
                    except BaseException as e:  # noqa: BLE001 - handed back to the caller
                        box.append((False, e))
                    done.set()

            t = threading.Thread(target=serve, name="nearmiss-warm-starter", daemon=True)
            t.start()
            _starter.update(q=q, t=t)
        q = _starter["q"]
    box: list = []
    done = threading.Event()
    q.put((make, box, done))
    done.wait()
    ok, val = box[0]
    if not ok:
        raise val
    return val
