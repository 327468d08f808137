"""Run untrusted work (candidate kernels, the reference) in a limited subprocess.

Each call starts ``python -m tools.worker`` in its own session (process group) and in a
private temporary working directory, with an environment allowlist (no API keys reach the
child), resource limits (address space, CPU time, file size) and a wall-clock timeout after
which the whole process group is killed. Results come back only as files the parent reads
and validates.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from tools.phases import phase

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Environment variables copied into the child; everything else (API keys, tokens) is dropped.
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES",
                 "TRITON_PTXAS_PATH", "LD_LIBRARY_PATH", "VIRTUAL_ENV")

OUTPUT_CAP = 64 * 1024  # bytes of the child's stdout/stderr kept for messages


@dataclass
class SandboxResult:
    """What a sandboxed process did: exit status, signal, timeout, output tails, wall seconds."""

    returncode: int | None
    signal_name: str | None
    timed_out: bool
    stdout_tail: str
    stderr_tail: str
    wall_s: float

    @property
    def crashed(self) -> bool:
        """True when the child died by a signal other than our timeout kill."""
        return self.signal_name is not None and not self.timed_out


def _limits(memory_bytes: int | None, cpu_s: int | None, file_bytes: int) -> None:
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - OUTPUT_CAP))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


#: With a progress file, a process may run this many times its timeout in all, as long as it progresses.
PROGRESS_CAP = 8


def _progress_waiter(timeout_s: float, progress_path: str | None):
    """A function ``slice() -> seconds to wait next, or 0 when the deadline has passed``.

    Without a progress file the deadline is ``timeout_s`` after the start. With one, the
    deadline moves to ``timeout_s`` after the file last grew (each finished variant writes an
    event), up to ``PROGRESS_CAP * timeout_s`` in all: a slow suite of many variants finishes,
    a hang in any one of them is still killed ``timeout_s`` after its last progress.
    """
    t0 = time.monotonic()
    state = {"deadline": t0 + timeout_s, "size": -1}
    hard = t0 + (PROGRESS_CAP * timeout_s if progress_path else timeout_s)

    def next_slice() -> float:
        now = time.monotonic()
        if progress_path:
            try:
                size = os.path.getsize(progress_path)
            except OSError:
                size = -1
            if size != state["size"]:
                state["size"], state["deadline"] = size, now + timeout_s
        left = min(state["deadline"], hard) - now
        return max(0.0, min(left, 1.0))

    return next_slice


def run_worker(args: list[str], workdir: str, env_extra: dict[str, str], timeout_s: float,
               memory_bytes: int | None = 16 << 30, file_bytes: int = 2 << 30, warm: bool = False,
               progress_path: str | None = None) -> SandboxResult:
    """Run ``python -m tools.worker ARGS`` sandboxed in ``workdir``.

    Args:
        args: worker arguments (a command and a job file).
        workdir: private directory, created if missing; the child's cwd, HOME and TMPDIR.
        env_extra: backend variables (e.g. ``TRITON_INTERPRET=1``) added to the allowlist.
        timeout_s: wall-clock seconds before the process group gets SIGKILL.
        memory_bytes: address-space limit (RLIMIT_AS) in bytes; None for none (CUDA
            reserves huge virtual ranges, so the CUDA backend passes None).
        file_bytes: largest file the child may write, bytes.
        warm: fork the child from a warm worker (``tools.zygote``) that has imported torch and
            triton already, instead of starting a fresh interpreter; falls back to a fresh one
            if the warm worker is unavailable. Same limits, session and deadline either way.
        progress_path: a file the child appends to as it progresses (``events.jsonl``); then
            ``timeout_s`` is the longest time without progress (``_progress_waiter``).

    Returns:
        A ``SandboxResult``; never raises for anything the child does.
    """
    os.makedirs(workdir, exist_ok=True)
    env = _base_env(workdir)
    env.update(env_extra)
    out_path, err_path = os.path.join(workdir, "stdout.txt"), os.path.join(workdir, "stderr.txt")
    cpu_s = int(timeout_s * (PROGRESS_CAP if progress_path else 1) * 2) + 10
    if warm and WARM_ENABLED:
        with phase("worker_start"):  # waits only while the warm worker is still starting
            pool = WarmPool.get(env_extra)
        if pool is not None:
            res = pool.run(args, workdir, env_extra, _progress_waiter(timeout_s, progress_path), memory_bytes, cpu_s,
                           file_bytes)
            if res is not None:
                return res
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tools.worker", *args], cwd=workdir, env=env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
            preexec_fn=lambda: _limits(memory_bytes, cpu_s, file_bytes),
        )
        timed_out = False
        waiter = _progress_waiter(timeout_s, progress_path)
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
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    rc = proc.returncode
    sig = None
    if rc is not None and rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
    return SandboxResult(returncode=rc, signal_name=sig, timed_out=timed_out,
                         stdout_tail=_tail(out_path), stderr_tail=_tail(err_path),
                         wall_s=time.monotonic() - t0)


#: Set NEARMISS_WARM=0 to start a fresh interpreter for every evaluation.
WARM_ENABLED = os.environ.get("NEARMISS_WARM", "1") != "0"


def _base_env(workdir: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.update(HOME=workdir, TMPDIR=workdir, PYTHONPATH=PROJECT_ROOT, PYTHONDONTWRITEBYTECODE="1",
               PYTHONHASHSEED="0", TRITON_CACHE_DIR=os.path.join(workdir, ".triton"))
    return env


def _decode(status: int) -> tuple[int, str | None]:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return -sig, signal.Signals(sig).name
        except ValueError:
            return -sig, f"signal {sig}"
    return os.WEXITSTATUS(status), None


class WarmPool:
    """One warm worker (``tools.zygote``) per backend environment, shared by a process's runners."""

    _pools: dict[str, "WarmPool | None"] = {}
    _key_locks: dict[str, threading.Lock] = {}
    _dict_lock = threading.Lock()

    def __init__(self, env_extra: dict[str, str]) -> None:
        import tempfile

        self.home = tempfile.mkdtemp(prefix="nearmiss-warm-")
        env = _base_env(self.home)
        env.update(env_extra)
        self.proc = subprocess.Popen([sys.executable, "-m", "tools.zygote"], cwd=self.home, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(self.home, "zygote.err"), "wb"),
                                     start_new_session=True, text=True, bufsize=1)
        self._fd = self.proc.stdout.fileno()
        self._buf = b""
        self._lock = threading.Lock()
        ready = self._read(120)
        if not ready or not ready.get("ready"):
            self.close()
            raise RuntimeError("the warm worker did not start")

    @classmethod
    def get(cls, env_extra: dict[str, str]) -> "WarmPool | None":
        """The pool for this environment, started on first use; None if it cannot start."""
        key = json.dumps(env_extra, sort_keys=True)
        with cls._dict_lock:
            lock = cls._key_locks.setdefault(key, threading.Lock())
        with lock:  # one start per environment; other environments start concurrently
            pool = cls._pools.get(key, False)
            if pool is False or (pool is not None and pool.proc.poll() is not None):
                try:
                    pool = cls(env_extra)
                except (OSError, RuntimeError):
                    pool = None
                cls._pools[key] = pool
            return pool

    @classmethod
    def prestart(cls, env_extra: dict[str, str]) -> None:
        """Start the pool for an environment in a background thread (its start overlaps other work)."""
        threading.Thread(target=cls.get, args=(env_extra,), daemon=True).start()

    def _read(self, timeout: float) -> dict | None:
        """The next protocol line, or None after ``timeout`` seconds or at EOF (raw fd, no hidden buffer)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(self._fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, args, workdir, env_extra, waiter, memory_bytes, cpu_s, file_bytes) -> SandboxResult | None:
        """Fork one evaluation; None when the warm worker failed (the caller starts a fresh one).

        ``waiter`` is a ``_progress_waiter``: it says how long to wait next, 0 past the deadline.
        """
        req = {"args": args, "workdir": workdir, "env": env_extra, "memory_bytes": memory_bytes, "cpu_s": cpu_s,
               "file_bytes": file_bytes}
        t0 = time.monotonic()
        with self._lock:
            try:
                self.proc.stdin.write(json.dumps(req) + "\n")
                self.proc.stdin.flush()
                started = self._read(60)
                if not started or "pid" not in started:
                    raise OSError("no pid")
                pid = started["pid"]
                done = None
                while done is None:
                    left = waiter()
                    if left <= 0:
                        break
                    done = self._read(left)
                    if done is None and self.proc.poll() is not None:
                        raise OSError("the warm worker exited")
                timed_out = done is None
                try:
                    os.killpg(pid, signal.SIGKILL)  # the whole session: grandchildren too
                except (ProcessLookupError, PermissionError):
                    pass
                if done is None:
                    done = self._read(30)
                if done is None or "status" not in done:
                    raise OSError("no status")
            except (OSError, ValueError, BrokenPipeError):
                self.close()
                return None
        rc, sig = _decode(done["status"])
        if timed_out:
            rc, sig = -signal.SIGKILL, "SIGKILL"
        return SandboxResult(returncode=rc, signal_name=sig, timed_out=timed_out,
                             stdout_tail=_tail(os.path.join(workdir, "stdout.txt")),
                             stderr_tail=_tail(os.path.join(workdir, "stderr.txt")),
                             wall_s=time.monotonic() - t0)

    def close(self) -> None:
        """Stop the warm worker."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    @classmethod
    def close_all(cls) -> None:
        """Stop every warm worker of this process (registered with atexit)."""
        for pool in list(cls._pools.values()):
            if pool is not None:
                pool.close()
        cls._pools.clear()


atexit.register(WarmPool.close_all)
