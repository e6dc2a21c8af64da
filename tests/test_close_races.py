"""Closing against enqueues from other threads, many rounds, beside a busy process (slow).

The conformance suite runs a few rounds of the same race
(``tests/conformance/test_stream_order.py``); this runs hundreds per backend
with another process taking a core, as issue 29's adversarial trial did:
every op either completes or raises ClosedResourceError, with no crash and
no hang, and a backend closed after its failure was seen raises nothing.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.conformance.test_stream_order import _close_race_round

pytestmark = pytest.mark.slow


@pytest.fixture
def busy_neighbour() -> Iterator[None]:
    spinner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.time() + 600\nwhile time.time() < end: pass",
        ]
    )
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize("target", ["stream", "backend"])
@pytest.mark.parametrize("kind", ["mock", "mock-async", "cuda-sim", "levelzero-sim"])
@pytest.mark.usefixtures("busy_neighbour")
def test_close_against_enqueues_many_rounds(kind: str, target: str) -> None:
    for _ in range(150):
        _close_race_round(kind, target)
