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

Fault injection: :func:`inject_fault` makes a mock backend's next ops fail
with the :class:`aruntime.DriverError` you choose (the ops are named as the
backend's calls, :data:`FAULT_OPS`), and :func:`clear_faults` undoes it.

Every backend these fixtures open checks for stream races
(``check_hazards=True``): an op that races with another stream's work
raises :class:`aruntime.HazardError` in the test, as it could fail on a GPU.

Under the backend fixtures a blocking call on the test's event loop warns
(``RuntimeWarning``), and at teardown an op error nobody observed fails the
test (:class:`UnobservedError`).  The first test that loses a device is
remembered, so later tests that cannot use one say which.  Mark a test that
faults a device on purpose ``@pytest.mark.aruntime_isolated``: it runs in a
pytest of its own, in a child process (docs: "Testing your code").
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from . import _blocking as blocking
from . import _sites as sites
from ._backend import Backend
from ._completion import Completion
from ._exceptions import (
    AruntimeError,
    BackendUnavailableError,
    DeviceLostError,
    DriverError,
    NotSupportedError,
)
from ._isolation import MARKER

# The plugin's hooks for @pytest.mark.aruntime_isolated (pytest finds them here).
from ._isolation import pytest_configure as pytest_configure
from ._isolation import pytest_runtest_logreport as pytest_runtest_logreport
from ._isolation import pytest_runtest_protocol as pytest_runtest_protocol
from ._registry import open_backend
from .backends.mock import FAULT_OPS as _FAULT_OPS
from .backends.mock import MockDriver

__all__ = [
    "CONFORMANCE_BACKENDS",
    "FAULT_OPS",
    "LeakError",
    "UnobservedError",
    "assert_no_leaks",
    "clear_faults",
    "inject_fault",
    "open_test_backend",
]

#: The ops :func:`inject_fault` can make fail, each by the name of the backend
#: call that enqueues it.  ``"alloc"`` covers ``alloc``, ``alloc_managed``,
#: ``alloc_arena`` and the pool behind ``alloc_async``; each copy and
#: ``memset`` covers its blocking form; ``"any"`` matches every op.
FAULT_OPS: tuple[str, ...] = _FAULT_OPS

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

    Stream-race checking is on unless ``check_hazards=False`` is passed or
    ``ARUNTIME_CHECK_HAZARDS=0`` is set: the race checker sees every op as an
    :class:`~aruntime._op.Op`, where a backend opened without it (the
    default of ``open_backend``) enqueues its copies, memsets and launches
    without building one, and a suite should run on both paths.
    """
    options.setdefault("check_hazards", os.environ.get("ARUNTIME_CHECK_HAZARDS") != "0")
    if variant == "mock-async":
        options.setdefault("latency", 0.0005)
        return open_backend("mock", **options)
    return open_backend(variant, **options)


def _mock_driver(fn: str, backend: Backend) -> MockDriver:
    if not isinstance(backend, Backend):
        raise TypeError(f"{fn}: expected an aruntime.Backend, got {type(backend).__name__}")
    driver = backend.driver
    if not isinstance(driver, MockDriver):
        raise NotSupportedError(
            f"{fn}: backend {backend.name!r} does not take injected faults; only the mock "
            "does (open_backend('mock'), or the mock_backend fixture)",
            backend=backend.name,
            function=fn,
        )
    return driver


def inject_fault(
    backend: Backend, op: str, error: type[DriverError] = DriverError, count: int = 1
) -> None:
    """Make ``backend``'s next ``count`` ops ``op`` fail with ``error`` (a mock backend).

    ``op`` is one of :data:`FAULT_OPS`: the name of the call that enqueues
    the op (``"copy_h2d_async"``, ``"launch"``...), or ``"any"``.  The
    blocking forms fail with their async op (``copy_h2d`` with
    ``"copy_h2d_async"``).  ``error`` is a :class:`aruntime.DriverError`
    subclass; the failed op raises it when awaited (or at the call, for
    ``alloc``), with ``name="MOCK_INJECTED_FAULT"``.  A
    :class:`aruntime.DeviceLostError` is sticky, as on a device: every later
    op fails too, until :func:`clear_faults`.  Other backends raise
    :class:`aruntime.NotSupportedError`.

    The mock's driver takes the same call, ``gpu.driver.inject_fault(op,
    error, count)``, and also its older short names (``"copy_h2d"``,
    ``"memset"``, ``"copy_2d"``, ``"graph_launch"``, ``"alloc_host"``).
    """
    _mock_driver("inject_fault", backend).inject_fault(op, error, count)


def clear_faults(backend: Backend) -> None:
    """Forget ``backend``'s injected faults not yet raised, and revive a device they lost."""
    _mock_driver("clear_faults", backend).clear_faults()


def _required() -> set[str]:
    return {n.strip() for n in os.environ.get("ARUNTIME_REQUIRE_BACKENDS", "").split(",") if n}


class UnobservedError(AssertionError):
    """Ops of a test failed and nobody saw the error (no await, ``wait()`` or ``exception()``).

    On a GPU the same test would fail, or return garbage; the fixtures make it
    fail here too.  The message names each op and the line that enqueued it.
    """


#: Backend variant -> the test that lost its device, and how (for later tests' messages).
_lost_by: dict[str, tuple[str, str]] = {}
_SHOWN = 5


def _drain(backend: Backend) -> list[BaseException]:
    """Wait for every queued op without taking anyone's errors; what the waits raised.

    Each stream gets a marker; on a lost device the marker fails with the
    sticky error, so this also asks the device whether it is still usable.
    """
    errors: list[BaseException] = []
    for marker in backend._shutdown.pending_completions():
        # Not wait(): taking a marker's outcome would mark as seen the
        # failure it inherits in stream order, which is what is checked next.
        finished = threading.Event()
        if marker.subscribe(finished.set):
            finished.wait(timeout=30)
        if marker.error is not None:
            errors.append(marker.error)
    return errors


def _unobserved(backend: Backend, drained: list[BaseException]) -> list[Completion]:
    """Take the failed ops nobody looked at (less the drain's own markers)."""
    state = backend._state
    failures = [c for st in state.open_streams() for c in st.state.take_failures()]
    failures.extend(state.orphans.take())
    return [c for c in failures if c.error not in drained]


def _describe(completion: Completion) -> str:
    site = sites.site_of(completion)
    at = f" enqueued at {site}" if site else ""
    error = completion.error
    return f"{completion.op}{at}: {type(error).__name__}: {error}"


def _check_unobserved(backend: Backend, variant: str | None, nodeid: str | None) -> None:
    drained = _drain(backend)
    failures = _unobserved(backend, drained)
    lost = [e for e in (*drained, *(c.error for c in failures)) if isinstance(e, DeviceLostError)]
    if lost and variant is not None and nodeid is not None:
        # The first: on a driver whose device stays lost for the process, every
        # later test finds it lost too, and the first is the one to fix.
        _lost_by.setdefault(variant, (nodeid, f"{type(lost[0]).__name__}: {lost[0]}"))
    if not failures:
        return
    listed = "\n  ".join(_describe(c) for c in failures[:_SHOWN])
    more = f"\n  and {len(failures) - _SHOWN} more" if len(failures) > _SHOWN else ""
    raise UnobservedError(
        f"{len(failures)} op(s) of this test failed and nobody awaited them "
        f"(await the op, or its stream's synchronize(), to see the error):\n  {listed}{more}"
    )


def _checked(
    backend: Backend, variant: str | None = None, nodeid: str | None = None
) -> Iterator[Backend]:
    reported = True  # until the test and the checks have passed
    try:
        # A blocking call on the test's loop warns (an error, under pytest), and
        # every op's line is taken, for the report of errors nobody saw.
        with blocking.force(), sites.record():
            yield backend
        if not backend.closed:
            _check_unobserved(backend, variant, nodeid)
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
                pass  # reported above, or the test's own failure says enough


@pytest.fixture
def mock_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _checked(_open_or_skip("mock"), "mock", request.node.nodeid)


@pytest.fixture
def async_mock_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    yield from _checked(_open_or_skip("mock-async"), "mock-async", request.node.nodeid)


@pytest.fixture
def leak_check() -> Any:
    return assert_no_leaks


def _open_or_skip(variant: str) -> Backend:
    try:
        return open_test_backend(variant)
    except AruntimeError as exc:
        lost = _lost_by.get(variant)
        if lost is not None:
            nodeid, how = lost
            pytest.fail(
                f"{variant} cannot be opened ({type(exc).__name__}: {exc}); its device was "
                f"lost earlier, by {nodeid} ({how}). Run tests that fault a device on "
                f"purpose in a process of their own: @pytest.mark.{MARKER}",
                pytrace=False,
            )
        if not isinstance(exc, BackendUnavailableError):
            raise
        if variant in _required():
            pytest.fail(f"{variant} is required here (ARUNTIME_REQUIRE_BACKENDS) but: {exc}")
        pytest.skip(f"{variant} unavailable: {exc}")


@pytest.fixture(params=CONFORMANCE_BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    variant = request.param
    yield from _checked(_open_or_skip(variant), variant, request.node.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """A test that failed with a lost device says which test lost a device first, if another.

    It may have faulted the device itself (then the section is beside the
    point); on a driver whose device stays lost for the process, the first
    test that lost it is the one to look at.
    """
    outcome = yield
    report = outcome.get_result()
    if not report.failed or call.excinfo is None or not _lost_by:
        return
    if not isinstance(call.excinfo.value, DeviceLostError):
        return
    earlier = [(v, n, how) for v, (n, how) in _lost_by.items() if n != item.nodeid]
    if earlier:
        text = "\n".join(f"{v}: lost by {n} ({how})" for v, n, how in earlier)
        title = "aruntime: a device was lost earlier in this session (unless by this test)"
        report.sections.append((title, text))
