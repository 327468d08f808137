"""In-process confinement of candidate code through Python audit hooks (PEP 578).

Installed by the sandboxed worker after torch and triton are imported and before any
candidate module is loaded. It refuses, with ``PermissionError``:

- process creation (``subprocess``, ``os.system``, ``os.fork``, ``os.exec*``, ``os.posix_spawn``);
- sockets (creation, connect, bind, name lookups): no network;
- writes, renames and deletions outside the allowed folders (the private working folder
  and the evaluation's output folder);
- reads of the files named in ``deny_read`` (the reference outputs).

The audit hook is defence in depth only: candidate code can reach native calls (ctypes)
that it never sees. The enforcement is the operating system's: the bubblewrap namespaces
of ``tools.sandbox.launch`` and the seccomp filter of ``install_seccomp`` (libseccomp through
``pyseccomp``), which the kernel applies to every syscall, native or not.
"""

from __future__ import annotations

import errno
import os
import socket as _socket
import sys

# Imported here, not when the filter is installed: the warm worker imports this module before
# it forks evaluations, so a module a candidate plants on a later child's import path (its
# scratch folder) cannot stand in for the bindings that confine that child.
try:
    import pyseccomp as _seccomp
except Exception:  # noqa: BLE001 - ImportError, or OSError when libseccomp.so is absent
    _seccomp = None

_PROCESS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                      "os.forkpty", "pty.spawn", "os.startfile"})
_NETWORK = frozenset({"socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
                      "socket.gethostbyname", "socket.sendto", "socket.sendmsg"})
_PATH_WRITE = frozenset({"os.remove", "os.unlink", "os.rmdir", "os.rename", "os.replace", "os.truncate",
                         "os.chmod", "os.chown", "os.mkdir", "os.symlink", "os.link", "shutil.rmtree",
                         "shutil.move", "shutil.copyfile", "shutil.copytree"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _norm(path) -> str | None:
    if isinstance(path, int):
        return None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        path = os.fspath(path) if hasattr(path, "__fspath__") else None
    return os.path.realpath(path) if path else None


def confine(write_dirs: list[str], deny_read: list[str], allow_process: bool = False) -> None:
    """Install the audit hook (irreversible for the life of the process).

    Args:
        write_dirs: folders (and everything under them) that may be written.
        deny_read: files that may not be opened at all.
        allow_process: let process creation through (the GPU compile worker runs ``ptxas``).
    """
    allowed = tuple(os.path.realpath(d) + os.sep for d in write_dirs)
    denied = frozenset(os.path.realpath(p) for p in deny_read)

    def may_write(p: str | None) -> bool:
        return p is None or p == "/dev/null" or p.startswith(allowed) or p + os.sep in allowed

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            p = _norm(path)
            if p in denied:
                raise PermissionError(f"nearmiss sandbox: reading {p} is not allowed")
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & _WRITE_FLAGS)
            if writing and not may_write(p):
                raise PermissionError(f"nearmiss sandbox: writing {p} is not allowed")
        elif event in _PROCESS and not allow_process:
            raise PermissionError(f"nearmiss sandbox: {event} (process creation) is not allowed")
        elif event in _NETWORK:
            raise PermissionError(f"nearmiss sandbox: {event} (network) is not allowed")
        elif event in _PATH_WRITE:
            for a in args[:2]:
                p = _norm(a) if isinstance(a, (str, bytes, os.PathLike)) else None
                if p is not None and not may_write(p):
                    raise PermissionError(f"nearmiss sandbox: {event} on {p} is not allowed")

    sys.addaudithook(hook)


#: Syscalls refused (EPERM) once the worker has started, whatever the caller (Python or native code).
SECCOMP_DENY = ("ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot",
                "unshare", "setns", "open_by_handle_at", "name_to_handle_at", "kexec_load", "init_module",
                "finit_module", "delete_module", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key",
                "request_key", "io_uring_setup", "io_uring_enter", "io_uring_register", "personality",
                "fanotify_init",
                # signals through process file descriptors reach other processes as kill() would
                "pidfd_open", "pidfd_send_signal", "pidfd_getfd")
#: Also refused for candidate code: a new process or program (threads stay allowed).
SECCOMP_DENY_PROCESS = ("execve", "execveat", "fork", "vfork")


def install_seccomp(allow_exec: bool = False) -> bool:
    """Install the worker's seccomp filter (irreversible; inherited by threads).

    Refuses with EPERM: sockets of any family but ``AF_UNIX``; ptrace and cross-process
    memory access; ``pidfd_*`` (signals and descriptors of other processes); mount, unshare, setns and similar namespace or kernel-state calls;
    ``kill``/``tgkill`` aimed at any process but this one; and, unless ``allow_exec``
    (the GPU compile worker runs ``ptxas``), ``execve``, ``fork``, ``vfork``, ``clone``
    without ``CLONE_THREAD`` and ``clone3`` (ENOSYS, so the C library falls back to
    ``clone`` for threads). Sets ``no_new_privs``.

    Returns:
        True when the filter is loaded; False when libseccomp is missing (the caller decides).
    """
    sc = _seccomp
    if sc is None:
        return False
    _s = _socket
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in SECCOMP_DENY + (() if allow_exec else SECCOMP_DENY_PROCESS):
        try:
            f.add_rule(deny, name)
        except (OSError, RuntimeError, ValueError):
            continue  # not a syscall of this architecture
    f.add_rule(deny, "socket", sc.Arg(0, sc.NE, _s.AF_UNIX))
    me = os.getpid()
    f.add_rule(deny, "kill", sc.Arg(0, sc.NE, me))
    f.add_rule(deny, "tgkill", sc.Arg(0, sc.NE, me))
    f.add_rule(deny, "tkill", sc.Arg(0, sc.NE, 0))  # tkill takes a thread id: this process uses tgkill
    if not allow_exec:
        clone_thread = 0x00010000
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, clone_thread, 0))
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    f.load()
    return True
