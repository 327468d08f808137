"""The team's exemplar programs, two per category; each module holds ``CATEGORY``, ``REFERENCE`` and ``program``.

``REFERENCE`` is a KernelBench-style reference (``Model``, ``get_inputs``, ``get_init_inputs``)
and ``program(k)`` the DSL program that computes it. The agent's prompt shows one exemplar
per category; the tests check every program against its reference.
"""

import importlib
import pkgutil

CATEGORIES = ("activation", "loss", "math", "normalization", "optimizer", "pooling", "reduce")


def names() -> list[str]:
    """Exemplar module names, sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__))


def load(name: str):
    """The exemplar module ``name``."""
    return importlib.import_module(f"{__name__}.{name}")
