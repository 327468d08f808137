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
from graph.state import State
from tools.settings import Settings

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


def test_nodes_import_nothing_from_graph_at_run_time():
    """The nodes sit below ``graph`` (wiring, CLI): they import it only for type names (``if TYPE_CHECKING``)."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent / "agents"
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and getattr(node.test, "id", None) == "TYPE_CHECKING" for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n == "graph" or n.startswith("graph.")]
    assert not found
