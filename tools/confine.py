"""In-process confinement of candidate code through Python audit hooks (PEP 578).

Installed by the sandboxed worker after torch and triton are imported and before any
candidate module is loaded. It refuses, with ``PermissionError``:

- process creation (``subprocess``, ``os.system``, ``os.fork``, ``os.exec*``, ``os.posix_spawn``);
- sockets (creation, connect, bind, name lookups): no network;
- writes, renames and deletions outside the allowed folders (the private working folder
  and the evaluation's output folder);
- reads of the files named in ``deny_read`` (the reference outputs).

This stops Python-level escapes; native code (ctypes, a C extension) is contained by the
process-level limits of ``tools.sandbox`` instead (its own session, rlimits, a deadline
after which the whole process group is killed, no secrets in its environment).
"""

from __future__ import annotations

import os
import sys

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


def confine(write_dirs: list[str], deny_read: list[str]) -> None:
    """Install the audit hook (irreversible for the life of the process).

    Args:
        write_dirs: folders (and everything under them) that may be written.
        deny_read: files that may not be opened at all.
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
        elif event in _PROCESS:
            raise PermissionError(f"nearmiss sandbox: {event} (process creation) is not allowed")
        elif event in _NETWORK:
            raise PermissionError(f"nearmiss sandbox: {event} (network) is not allowed")
        elif event in _PATH_WRITE:
            for a in args[:2]:
                p = _norm(a) if isinstance(a, (str, bytes, os.PathLike)) else None
                if p is not None and not may_write(p):
                    raise PermissionError(f"nearmiss sandbox: {event} on {p} is not allowed")

    sys.addaudithook(hook)
