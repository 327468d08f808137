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
