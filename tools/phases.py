"""Per-phase wall-clock seconds of a run: ``with phase("triage_eval"): ...``.

A process records into one active ``Recorder`` (``start`` makes a fresh one; a CLI run and
a batch worker run one repair at a time per process). Phases nest: a phase's *self* time
excludes the phases opened inside it on the same thread, so the self times of a run add up
to at most its wall time and a table of them has no double counting (``worker_start``
inside ``triage_eval`` is counted once, under ``worker_start``). Each thread has its own
nesting (LangGraph runs nodes in worker threads); one run's phases do not overlap.

``report()`` gives the additive ``phases`` field of report.json::

    {"total_s": {"triage_eval": 1.23, ...},      # self seconds summed per name
     "count": {"attempt": 2, ...},
     "timeline": [{"name", "start_s", "s", "self_s"}, ...]}   # start_s from Recorder start

Names used by the product (one ``with`` line each): ``cli_import``, ``worker_start``,
``suite_build``, ``triage_eval``, ``diagnosis``, ``retrieval``, ``planning``, ``screening``, ``attempt``,
``audit``, ``gpu_compile``, ``learn`` (storing a learned repair), ``report``.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

#: The phases in pipeline order (tables list them in this order, then any others).
ORDER = ("cli_import", "worker_start", "suite_build", "triage_eval", "diagnosis", "retrieval", "planning", "screening",
         "attempt", "audit", "gpu_compile", "learn", "report")


class Recorder:
    """Phase timings of one run.

    Args:
        t0: ``time.monotonic()`` origin of ``start_s`` (default: now).
    """

    def __init__(self, t0: float | None = None) -> None:
        self.t0 = time.monotonic() if t0 is None else t0
        self.timeline: list[dict] = []
        self._lock = threading.Lock()
        self._local = threading.local()

    def _stack(self) -> list[list[float]]:
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    @contextmanager
    def phase(self, name: str):
        """Time the ``with`` body as phase ``name`` (self time excludes nested phases)."""
        stack = self._stack()
        frame = [0.0]  # seconds spent in phases nested inside this one
        stack.append(frame)
        start = time.monotonic()
        try:
            yield
        finally:
            secs = time.monotonic() - start
            stack.pop()
            if stack:
                stack[-1][0] += secs
            self.add(name, secs, max(0.0, secs - frame[0]), start - self.t0)

    def add(self, name: str, secs: float, self_s: float | None = None, start_s: float | None = None) -> None:
        """Record a phase measured elsewhere (e.g. the interpreter start before this module was imported)."""
        rec = {"name": name, "start_s": round(start_s if start_s is not None else time.monotonic() - self.t0 - secs, 3),
               "s": round(secs, 3), "self_s": round(secs if self_s is None else self_s, 3)}
        with self._lock:
            self.timeline.append(rec)

    def report(self) -> dict:
        """The ``phases`` field of report.json (see the module docstring)."""
        total: dict[str, float] = {}
        count: dict[str, int] = {}
        with self._lock:
            timeline = sorted(self.timeline, key=lambda r: r["start_s"])
        for r in timeline:
            total[r["name"]] = round(total.get(r["name"], 0.0) + r["self_s"], 3)
            count[r["name"]] = count.get(r["name"], 0) + 1
        return {"total_s": total, "count": count, "timeline": timeline}


_active = Recorder()


def start(t0: float | None = None) -> Recorder:
    """Make a fresh recorder the active one for this process and return it."""
    global _active
    _active = Recorder(t0)
    return _active


def active() -> Recorder:
    """The recorder ``phase`` writes to."""
    return _active


def phase(name: str):
    """``with phase("audit"): ...`` times the body into the active recorder."""
    return _active.phase(name)


def ordered(names) -> list[str]:
    """Phase names in pipeline order (``ORDER``), unknown ones after, alphabetically."""
    names = set(names)
    return [n for n in ORDER if n in names] + sorted(names - set(ORDER))
