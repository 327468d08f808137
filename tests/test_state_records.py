"""The state's typed records (tools.records) survive LangGraph's checkpointer and Studio's JSON.

A two-node graph over ``graph.state.State`` writes one record of each kind, stops at an
interrupt, and a second graph compiled on the same SQLite database (as ``--resume`` does in a
new process) reads them back: models of the same class and the same fields, with no
"unregistered type" warning from the serializer.
"""

import json
import logging
import sqlite3

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from graph.state import State, checkpoint_serde
from tools.records import (
    Attempt,
    Audit,
    Decision,
    Diagnosis,
    EvalResult,
    Finding,
    TensorError,
    VariantResult,
    plain,
)

SOURCE = "class ModelNew: pass  # patched\n"


def _records() -> dict:
    diag = {"symptoms": ["tail_only"], "failing": ["v1"], "smallest_failing": "v1",
            "fault_class": {"name": "mask_bound", "because": ["tail_only"], "reading": "the mask stops early"},
            "localisation": [{"name": "shifted_by_one", "detail": "", "variant": "v1", "variants": 1}],
            "findings": ["v1: mismatch"], "summary": "1 of 2 variants fail", "source": "abc123",
            "target_family": "ascend"}  # an extra key (tools.repair.ascend_operators) is kept
    ev = EvalResult(status="mismatch", backend="interpreter", launch_signatures=[{"kernel": "k"}], variants=[
        VariantResult(variant_id="v1", status="mismatch", errors=[
            TensorError(output_index=0, shape=[8], dtype="float32", ok=False, max_abs_err=0.5)])])
    audit = Audit(passed=False, findings=[Finding(check="heldout", severity="error", message="v9: mismatch")],
                  heldout_status="mismatch", variants_checked=3, compile={"targets": []}, wall_s=1.5)
    return {"diagnosis": Diagnosis.model_validate(diag), "last_eval": ev, "last_source": SOURCE, "audit": audit,
            # the judge writes plain dicts: the state's reducers make them records
            "attempts": [{"n": 1, "operator": "mask_fix", "description": "widen the mask", "line": 3,
                          "status": "mismatch", "failing_variants": 1, "audit": "", "source_hash": "h1",
                          "diff": "-a\n+b\n", "learned": None}],
            "decisions": [{"n": 1, "route": "retry_patch", "reason": "attempt 1 does not improve"}]}


def _graph(seen: dict):
    def write(state: State) -> dict:
        return _records()

    def read(state: State) -> dict:
        seen.update({k: state.get(k) for k in _records()})
        return {}

    g = StateGraph(State)
    g.add_node("write", write)
    g.add_node("read", read)
    g.add_edge(START, "write")
    g.add_edge("write", "read")
    g.add_edge("read", END)
    return g


def test_each_record_round_trips_a_checkpoint_and_a_resume(tmp_path, caplog):
    db = str(tmp_path / "checkpoints.sqlite")
    config = {"configurable": {"thread_id": "t"}}
    want = _records()
    with caplog.at_level(logging.WARNING):
        conn = sqlite3.connect(db, check_same_thread=False)
        first = _graph({}).compile(checkpointer=SqliteSaver(conn, serde=checkpoint_serde()), interrupt_before=["read"])
        first.invoke({"name": "t"}, config)
        conn.close()
        seen: dict = {}
        conn = sqlite3.connect(db, check_same_thread=False)  # a new process would open it like this
        second = _graph(seen).compile(checkpointer=SqliteSaver(conn, serde=checkpoint_serde()))
        values = second.get_state(config).values
        second.invoke(None, config)  # resume: the read node gets the records from the checkpoint
        conn.close()
    assert not [r for r in caplog.records if "unregistered type" in r.getMessage()]
    for got in (values, seen):
        assert type(got["diagnosis"]) is Diagnosis and got["diagnosis"] == want["diagnosis"]
        assert got["diagnosis"]["target_family"] == "ascend" and got["diagnosis"].fault_class.name == "mask_bound"
        assert type(got["last_eval"]) is EvalResult and got["last_eval"] == want["last_eval"]
        assert got["last_source"] == SOURCE
        assert type(got["audit"]) is Audit and got["audit"] == want["audit"]
        assert type(got["audit"].findings[0]) is Finding
        assert [type(a) for a in got["attempts"]] == [Attempt] and got["attempts"][0].model_dump() == \
            want["attempts"][0]
        assert [type(d) for d in got["decisions"]] == [Decision] and got["decisions"][0].model_dump() == \
            want["decisions"][0]


def test_the_allowlist_is_what_rebuilds_the_records():
    """A strict serializer (LangGraph's future default) gives back plain dicts; the run's keeps the classes."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    strict, ours = JsonPlusSerializer(allowed_msgpack_modules=None), checkpoint_serde()
    rec = _records()
    for value in (rec["diagnosis"], rec["last_eval"], rec["audit"], Attempt.model_validate(rec["attempts"][0]),
                  Decision.model_validate(rec["decisions"][0])):
        assert type(ours.loads_typed(ours.dumps_typed(value))) is type(value)
        assert isinstance(strict.loads_typed(strict.dumps_typed(value)), dict)


def test_studio_json_of_the_records_validates_back():
    """LangGraph Studio shows the state as JSON and may send it back: each record validates from it."""
    want = _records()
    data = json.loads(json.dumps(plain(want)))
    assert Diagnosis.model_validate(data["diagnosis"]) == want["diagnosis"]
    assert EvalResult.model_validate(data["last_eval"]) == want["last_eval"]
    assert Audit.model_validate(data["audit"]) == want["audit"]
    assert Attempt.model_validate(data["attempts"][0]).model_dump() == want["attempts"][0]
    assert Decision.model_validate(data["decisions"][0]).model_dump() == want["decisions"][0]


def test_records_read_by_key_like_the_dicts_they_replace():
    d = Diagnosis.model_validate(_records()["diagnosis"])
    assert d["symptoms"] == d.symptoms == ["tail_only"] and d.get("smallest_failing") == "v1"
    assert d.get("probes") is None and "probes" not in d and "target_family" in d
    d["probes"] = {"variant": "v1"}  # the planner adds its probe results this way
    assert d.get("probes") == {"variant": "v1"} and {**d}["probes"] == {"variant": "v1"}
    with pytest.raises(KeyError):
        d["no_such_key"]
    assert Audit(passed=True).findings == [] and Audit(passed=True).get("passed") is True
