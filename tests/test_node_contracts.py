"""Every node is typed on ``graph.state.State`` and its docstring names the state keys it reads and writes."""

import inspect
import re
import typing

import pytest

from agents.convergence_judge import convergence_judge
from agents.hardware_runner import hardware_runner
from agents.instrumentation_planner import instrumentation_planner
from agents.integrity_auditor import integrity_auditor
from agents.llm_patcher import llm_patcher
from agents.patcher import offline_patcher, patcher
from agents.triage import triage
from graph.context import Settings
from graph.state import State

NODES = [triage, instrumentation_planner, patcher, offline_patcher, llm_patcher, hardware_runner, integrity_auditor,
         convergence_judge]
KEYS = set(typing.get_type_hints(State))


@pytest.mark.parametrize("node", NODES, ids=lambda f: f.__name__)
def test_node_is_typed_on_state(node):
    first = next(iter(inspect.signature(node).parameters.values()))
    assert first.annotation in ("State", State)


@pytest.mark.parametrize("node", NODES, ids=lambda f: f.__name__)
def test_docstring_names_real_keys(node):
    doc = inspect.getdoc(node)
    reads = re.search(r"Reads\s(.*?)\.\s+Writes\s(.*)", doc, re.S)
    assert reads, f"{node.__name__}: no 'Reads ... Writes ...' in the docstring"
    named = set(re.findall(r"``([a-z_]+)``", reads.group(0)))
    options = {f for f in Settings.__dataclass_fields__}  # option names (``options``'s keys) may be named too
    unknown = named - KEYS - options - {"llm", "source"}  # an engine value; the diagnosis' source key
    assert not unknown, f"{node.__name__} names keys the state does not have: {sorted(unknown)}"
    assert named & KEYS, node.__name__
