"""``-ra`` prints each skip reason once, with its count, on one line (tests/skip_summary.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SHARED = """
import pytest

WHY = "no device here; tried:\\n  - libcuda.so.1: not found\\n  - libze_loader.so.1: not found"

@pytest.fixture
def gpu():
    pytest.skip(WHY)

def test_a(gpu): pass
def test_b(gpu): pass

@pytest.mark.parametrize("n", range(3))
def test_c(gpu, n): pass

def test_other():
    pytest.skip("only on Tuesdays")

def test_passes(): pass
"""


def test_one_line_per_reason(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    once = "\ndef test_once():\n    pytest.skip('only here')\n"
    pytester.makepyfile(test_one=SHARED + once, test_two=SHARED)
    result = pytester.runpytest_subprocess(
        "-ra", "-p", "tests.skip_summary", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2, skipped=13)
    lines = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert lines == [
        "SKIPPED [10] test_one.py (5), test_two.py (5): no device here; tried: "
        "libcuda.so.1: not found; libze_loader.so.1: not found",
        "SKIPPED [2] test_one.py, test_two.py: only on Tuesdays",
        "SKIPPED [1] test_one.py:21: only here",
    ]
