"""Tolerance profiles per target family (``--tolerance-profile kernelbench|ascend``).

``kernelbench``: the default dtype table of ``tools.compare.outputs`` (KernelBench ``src/eval.py``:
atol = rtol = 1e-4 for fp32, 1e-2 for fp16/bf16).

``ascend``: the triton-ascend precision guide's table as quoted in issue 17: fp32 1e-5,
fp16 1e-3, bf16 5e-3 (atol = rtol). Not checked against the guide itself here (it was not
reachable); Ascend operator tests in fbgemm's NPU port use the same fp16/bf16 figures
(1e-3, 5e-3) with 1e-4 for fp32. Note the guide's remark that fp32 ``tl.dot`` runs on the
cube unit with about 1e-3 error: an fp32 matmul judged by this profile needs an explicit
``--atol/--rtol``.
"""

from __future__ import annotations

#: profile -> ((torch dtype name, atol, rtol), ...); None is the compare module's default table.
PROFILES: dict[str, tuple | None] = {
    "kernelbench": None,
    "ascend": (("float32", 1e-5, 1e-5), ("float16", 1e-3, 1e-3), ("bfloat16", 5e-3, 5e-3), ("float64", 1e-5, 1e-5)),
}


class ProfileError(Exception):
    """An unknown ``--tolerance-profile`` (usage error, exit code 2)."""


def profile(name: str | None) -> tuple | None:
    """The per-dtype table of a profile (None: the default table).

    Raises:
        ProfileError: an unknown name.
    """
    if name is None:
        return None
    if name not in PROFILES:
        raise ProfileError(f"--tolerance-profile: unknown profile {name!r} ({', '.join(PROFILES)})")
    return PROFILES[name]


def lookup(table: tuple, dtype_name: str) -> tuple[float, float] | None:
    """``(atol, rtol)`` of a dtype in a profile table, or None when the profile does not list it."""
    return next(((a, r) for d, a, r in table if d == dtype_name), None)
