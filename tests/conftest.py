import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
FIXTURES = os.path.join(ROOT, "tests", "fixtures")


def fixture_text(*parts: str) -> str:
    with open(os.path.join(FIXTURES, *parts)) as f:
        return f.read()


@pytest.fixture
def vadd_reference() -> str:
    return fixture_text("vadd", "reference.py")


@pytest.fixture
def vadd_fixed() -> str:
    return fixture_text("vadd", "fixed.py")


@pytest.fixture
def vadd_candidate() -> str:
    return fixture_text("vadd", "candidate.py")


def axpy_swapped() -> str:
    """The correct vadd kernel launched with ``x`` and ``z`` swapped: a near-miss no KB pattern's operator
    repairs (only the generic swap of launch arguments does)."""
    fixed = fixture_text("vadd", "fixed.py")
    assert "_axpy_kernel[grid](x, z, y" in fixed
    return fixed.replace("_axpy_kernel[grid](x, z, y", "_axpy_kernel[grid](z, x, y")


# Test tiers. The fast unit tier (`pytest -m unit`, under a minute) holds the modules that
# start no sandboxed process, no graph run and no server: each node or tool on synthetic
# data. Every other test is in the integration tier (`pytest -m integration`).
UNIT_MODULES = {
    "test_compare", "test_diagnostics", "test_localise", "test_operators", "test_operators_more",
    "test_static_checks", "test_task", "test_evaluation_count", "test_judge", "test_llm_answers",
    "test_phases", "test_embed_cache", "test_gpu_timing", "test_audit_overlap", "test_state_records",
    "test_node_contracts", "test_cli_options",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
        item.add_marker(pytest.mark.unit if module in UNIT_MODULES else pytest.mark.integration)
