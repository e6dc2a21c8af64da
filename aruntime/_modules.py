"""Loaded code: a module image, and the kernels in it that ``launch`` runs.

A module is unloaded only when its backend closes (no op names a module, so
none can race its release); a kernel is a function in one, which only its
module's backend may launch.
"""

from __future__ import annotations

from ._driver import Driver, DriverFunction, DriverModule
from ._handles import HandleOwner, _Handle
from ._resources import Resources

__all__ = ["Kernel", "Module"]


class Module(_Handle):
    """A loaded module image.  Unloaded when its backend closes."""

    _kind = "module"

    def __init__(
        self,
        backend: HandleOwner,
        resources: Resources,
        driver: Driver,
        name: str,
        handle: DriverModule,
    ) -> None:
        self.name = name
        self.handle = handle
        self._driver = driver
        super().__init__(backend, resources, None)  # the backend's name index holds it

    def __repr__(self) -> str:
        return f"<module {getattr(self, 'name', '?')!r}>"

    def release(self) -> None:
        """The backend is closing: unload the module."""
        if self._claim():
            self._driver.module_unload(self.handle)


class Kernel:
    """A function in a loaded module, ready to ``launch``."""

    __slots__ = ("handle", "module", "name", "owner", "signatures")

    def __init__(self, module: Module, name: str, handle: DriverFunction) -> None:
        self.module = module
        self.name = name
        self.handle = handle
        #: The backend that may launch it (its module's), kept for the check on every launch.
        self.owner = module.backend
        #: Argument types already checked once -> where the pointers are (see _ops).
        self.signatures: dict[tuple[type, ...], tuple[int, ...]] = {}

    @property
    def backend(self) -> HandleOwner:
        """The backend whose module holds this kernel (only it may ``launch`` the kernel)."""
        return self.module.backend

    def __repr__(self) -> str:
        return f"<kernel {self.module.name}.{self.name}>"
