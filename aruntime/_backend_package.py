"""The contract between the registry and a backend package (``aruntime.backends.<name>``).

A backend package is a module, not a class: the registry imports it lazily
by name, so importing aruntime never loads a C library.  Every package
(``mock``, ``cuda``, ``levelzero``) offers the same three names, checked
statically in :mod:`aruntime.backends` and at run time by the tests:

``OPTIONS``
    The keyword options :func:`open_driver` accepts (empty for the real
    drivers, whose settings come from the environment).
``list_devices(*, sim)``
    Every device the package can open; raises
    :class:`~aruntime.BackendUnavailableError` when there is none.
``open_driver(device, *, sim, **options)``
    One device's :class:`~aruntime._driver.Driver`.  An option not in
    ``OPTIONS`` raises :class:`TypeError` naming it and the accepted ones
    (:func:`check_options`), before any library is loaded.

``sim`` selects the software driver of a package that has one
(``cuda-sim``, ``levelzero-sim``); the mock ignores it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ._driver import DeviceInfo, Driver

__all__ = ["BackendPackage", "check_options"]


@runtime_checkable
class BackendPackage(Protocol):
    """What ``aruntime.backends.<name>`` offers the registry (see the module docstring)."""

    OPTIONS: frozenset[str]

    def list_devices(self, *, sim: bool) -> list[DeviceInfo]: ...

    def open_driver(self, device: int, *, sim: bool, **options: Any) -> Driver: ...


def check_options(backend: str, options: Mapping[str, object], accepted: frozenset[str]) -> None:
    """Raise TypeError for the first option (in sorted order) that ``accepted`` lacks."""
    unknown = sorted(set(options) - accepted)
    if not unknown:
        return
    takes = ", ".join(sorted(accepted)) if accepted else "none"
    plural = "s" if len(unknown) > 1 else ""
    raise TypeError(
        f"open_backend: the {backend} backend has no option{plural} "
        f"{', '.join(repr(name) for name in unknown)}; its options: {takes}"
    )
