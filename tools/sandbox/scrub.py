"""Scrub the values of secret-looking environment variables from text written to the run folder.

A candidate never sees the product's environment (``tools.sandbox.launch`` passes an allowlist),
but messages, reports and checkpoints pass many hands; anything the product writes goes
through ``scrub`` so an API key that reached a message in any way never reaches a file.
"""

from __future__ import annotations

import os
import re

#: Names that look like secrets (case-insensitive substrings).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.I)
#: Shorter values are too likely to occur by chance in ordinary text to be replaced.
MIN_SECRET_LEN = 8
REDACTED = "[redacted]"


def secret_values(environ: dict | None = None) -> list[str]:
    """Values of secret-looking variables of ``environ`` (default ``os.environ``), longest first."""
    env = os.environ if environ is None else environ
    vals = {v for k, v in env.items() if SECRET_NAME.search(k) and isinstance(v, str) and len(v) >= MIN_SECRET_LEN}
    return sorted(vals, key=len, reverse=True)


def scrub(text, environ: dict | None = None):
    """``text`` with every secret value replaced by ``[redacted]``; non-strings are returned unchanged."""
    if not isinstance(text, str):
        return text
    for v in secret_values(environ):
        if v in text:
            text = text.replace(v, REDACTED)
    return text


def scrub_obj(obj, environ: dict | None = None):
    """Scrub every string inside nested dicts, lists and tuples (JSON-like data)."""
    if isinstance(obj, str):
        return scrub(obj, environ)
    if isinstance(obj, dict):
        return {scrub(k, environ): scrub_obj(v, environ) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(scrub_obj(v, environ) for v in obj)
    return obj


def scrub_file(path: str, environ: dict | None = None) -> bool:
    """Rewrite a file whose bytes hold a secret value (text or binary, e.g. SQLite); True when changed.

    Binary files get a same-length replacement (``*`` repeated) so their structure holds.
    """
    vals = secret_values(environ)
    if not vals:
        return False
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    new = data
    for v in vals:
        b = v.encode()
        new = new.replace(b, b"*" * len(b))
    if new == data:
        return False
    with open(path, "wb") as f:
        f.write(new)
    return True


def scrub_tree(root: str, environ: dict | None = None, skip: tuple[str, ...] = ()) -> list[str]:
    """Scrub every file under ``root`` but those named in ``skip`` (an open database); the paths changed."""
    changed = []
    for d, _, files in os.walk(root):
        for name in files:
            if name in skip:
                continue
            p = os.path.join(d, name)
            if not os.path.islink(p) and scrub_file(p, environ):
                changed.append(p)
    return changed
