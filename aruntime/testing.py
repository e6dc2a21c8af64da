"""Pytest fixtures for testing code that uses aruntime.

Enable them in a ``conftest.py``::

    pytest_plugins = ["aruntime.testing"]

Fixtures:

``mock_backend``
    A fresh mock backend (ops complete at enqueue).  At teardown it checks
    that the test released everything (see :func:`assert_no_leaks`).
``async_mock_backend``
    A mock whose ops run on per-stream threads with a small latency, so awaits
    really wait and cancellation can land mid-op.
``backend``
    Parametrised over every backend that can be opened here (``mock``,
    ``mock-async``, and ``cuda-sim``, ``levelzero-sim``, ``cuda``,
    ``levelzero`` where available); unavailable ones are skipped with the reason.
    Set ``ARUNTIME_REQUIRE_BACKENDS=cuda-sim,levelzero-sim`` to turn those
    skips into failures (CI does).
``leak_check``
    The function used at teardown, for tests that want to call it themselves.

Every backend these fixtures open checks for stream races
(``check_hazards=True``): an op that races with another stream's work
raises :class:`aruntime.HazardError` in the test, as it could fail on a GPU.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from ._backend import Backend
from ._exceptions import AruntimeError, BackendUnavailableError
from ._registry import open_backend

__all__ = [
    "CONFORMANCE_BACKENDS",
    "LeakError",
    "assert_no_leaks",
    "open_test_backend",
]

#: Backend variants the ``backend`` fixture tries, in order.
CONFORMANCE_BACKENDS = ("mock", "mock-async", "cuda-sim", "levelzero-sim", "cuda", "levelzero")


class LeakError(AssertionError):
    """A test left allocations, streams, events, graphs or pending ops behind."""


def assert_no_leaks(backend: Backend) -> None:
    """Fail if ``backend`` still holds anything a test should have released."""
    stats = backend.statistics()
    problems = []
    if stats.live_allocations:
        problems.append(
            f"{stats.live_allocations} live allocations ({stats.live_bytes} bytes):\n"
            + backend.alloc_report(top_n=10)
        )
    if stats.open_streams:
        problems.append(f"{stats.open_streams} open streams")
    if stats.open_events:
        problems.append(f"{stats.open_events} open events")
    if stats.open_graphs:
        problems.append(f"{stats.open_graphs} open graphs")
    if stats.pending_ops:
        problems.append(f"{stats.pending_ops} ops still pending")
    if problems:
        raise LeakError(f"{backend.name} leaked: " + "; ".join(problems))


def open_test_backend(variant: str, **options: Any) -> Backend:
    """Open one of :data:`CONFORMANCE_BACKENDS` (``mock-async`` is a threaded mock).

    Stream-race checking is on unless ``check_hazards=False`` is passed.
    """
    options.setdefault("check_hazards", True)
    if variant == "mock-async":
        options.setdefault("latency", 0.0005)
        return open_backend("mock", **options)
    return open_backend(variant, **options)


def _required() -> set[str]:
    return {n.strip() for n in os.environ.get("ARUNTIME_REQUIRE_BACKENDS", "").split(",") if n}


def _checked(backend: Backend) -> Iterator[Backend]:
    reported = True  # until the test and the leak check have passed
    try:
        yield backend
        if not backend.closed:
            backend.synchronize().wait(timeout=30)
            assert_no_leaks(backend)
        reported = False
    finally:
        with warnings.catch_warnings():
            if reported:
                # The test's own failure, or the LeakError, already says what
                # was left behind; close()'s ResourceWarning would hide it.
                warnings.simplefilter("ignore", ResourceWarning)
            try:
                backend.close()
            except AruntimeError:
                pass  # an unawaited failure the test provoked on purpose


@pytest.fixture
def mock_backend() -> Iterator[Backend]:
    yield from _checked(open_test_backend("mock"))


@pytest.fixture
def async_mock_backend() -> Iterator[Backend]:
    yield from _checked(open_test_backend("mock-async"))


@pytest.fixture
def leak_check() -> Any:
    return assert_no_leaks


def _open_or_skip(variant: str) -> Backend:
    try:
        return open_test_backend(variant)
    except BackendUnavailableError as exc:
        if variant in _required():
            pytest.fail(f"{variant} is required here (ARUNTIME_REQUIRE_BACKENDS) but: {exc}")
        pytest.skip(f"{variant} unavailable: {exc}")


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _checked(_open_or_skip(request.param))
