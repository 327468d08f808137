"""The repair's GPU compile overlaps the audit run (agents.integrity_auditor): same report as one compile."""

import json
import threading

from agents.integrity_auditor import _finish_compile, _start_compile
from tools.records import CompileReport, EvalResult, KernelCompile


class _Runner:
    """Records compile_check calls; each launch 'compiles' to one KernelCompile named by its kernel."""

    def __init__(self):
        self.calls = []
        self.threads = []

    def compile_check(self, source, signatures, targets):
        self.calls.append([s["kernel"] for s in signatures])
        self.threads.append(threading.current_thread().name)
        return CompileReport(targets=targets, results=[KernelCompile(kernel=s["kernel"], target=t, ok=True)
                                                       for s in signatures for t in targets])


def _eval(*sigs):
    """The last evaluation (an ``EvalResult``) that recorded these launch signatures."""
    return EvalResult(status="pass", backend="interpreter", launch_signatures=list(sigs))


def _sig(k):
    return {"kernel": k, "signature": {"x": "*fp32"}, "constexprs": {}, "divisible": []}


def test_early_compile_plus_heldout_launches_equals_one_compile():
    last = _eval(_sig("a"), _sig("b"))
    held = [_sig("b"), _sig("c")]
    sigs = {json.dumps(x, sort_keys=True): x for x in last.launch_signatures + held}
    one = _Runner().compile_check("src", list(sigs.values()), ["sm_90"])
    r = _Runner()
    early = _start_compile(r, "src", last, ["sm_90"])
    merged = _finish_compile(r, "src", sigs, early, ["sm_90"])
    assert merged == one
    assert r.calls == [["a", "b"], ["c"]] and r.threads[0].startswith("nearmiss-compile")


def test_nothing_to_compile_early_falls_back_to_one_call():
    r = _Runner()
    assert _start_compile(r, "src", _eval(), ["sm_90"]) is None
    assert _start_compile(r, "src", _eval(_sig("a")), []) is None
    sigs = {json.dumps(_sig("c"), sort_keys=True): _sig("c")}
    assert _finish_compile(r, "src", sigs, None, ["sm_90"]).results[0].kernel == "c" and r.calls == [["c"]]
