"""The mock backend: numpy device memory, ops complete at enqueue.

Options for ``open_backend("mock", ...)``: ``device_name``, ``total_memory``
(bytes), ``compute_units`` and ``profile`` (a :class:`DeviceProfile`, the real
part's limits it enforces: :data:`H100` by default); ``latency=<seconds>``
makes it asynchronous, each stream running its ops on a worker thread (see
``_threaded``).  The driver
(``backend.driver``) offers ``call_log``, ``calls(op)``,
``inject_fault(op, error, count)`` and ``clear_faults()`` (made public as
:func:`aruntime.testing.inject_fault` and :func:`aruntime.testing.clear_faults`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._backend_package import check_options
from ..._driver import DeviceInfo, Driver
from ..._exceptions import BackendUnavailableError
from ._driver import FAULT_KINDS, FAULT_OPS, MockCall, MockDriver
from ._profile import H100, DeviceProfile

if TYPE_CHECKING:
    from ._threaded import ThreadedMockDriver

__all__ = [
    "FAULT_KINDS",
    "FAULT_OPS",
    "H100",
    "OPTIONS",
    "DeviceProfile",
    "MockCall",
    "MockDriver",
    "ThreadedMockDriver",
    "list_devices",
    "open_driver",
]

#: ``open_backend("mock", ...)`` options (see the module docstring).
OPTIONS: frozenset[str] = frozenset(
    {"device_name", "total_memory", "compute_units", "profile", "latency"}
)


def open_driver(device: int, *, sim: bool, **options: Any) -> Driver:
    check_options("mock", options, OPTIONS)
    if device != 0:
        raise BackendUnavailableError(f"mock: device {device} does not exist (the mock has one)")
    # open_backend's own first parameter is called ``name``, so the device's
    # name travels as ``device_name`` (MockDriver itself takes ``name``).
    if "device_name" in options:
        options["name"] = options.pop("device_name")
    if "latency" in options:
        # Imported here: the plain mock, the one most processes open, need not
        # pay for the threaded variant's module on its first open.
        from ._threaded import ThreadedMockDriver

        return ThreadedMockDriver(**options)
    return MockDriver(**options)


def __getattr__(name: str) -> Any:
    """``ThreadedMockDriver`` on first access (see open_driver)."""
    if name == "ThreadedMockDriver":
        from ._threaded import ThreadedMockDriver

        return ThreadedMockDriver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def list_devices(*, sim: bool) -> list[DeviceInfo]:
    return [MockDriver().device_info()]
