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
