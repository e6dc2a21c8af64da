"""Concrete backends, one package each; every one is a ``BackendPackage``.

``aruntime.open_backend(name)`` imports ``aruntime.backends.<package>`` lazily,
so importing aruntime never loads a C library, and a new backend is one folder.
``_staging`` is the pageable-copy staging shared by the real drivers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The contract, checked by mypy: each package must satisfy the protocol.
    from .._backend_package import BackendPackage
    from . import cuda, levelzero, mock

    _PACKAGES: tuple[BackendPackage, ...] = (cuda, levelzero, mock)
