"""Fixtures that open the Level Zero driver on the software driver (levelzero-sim)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import aruntime as ar
from aruntime._exceptions import BackendUnavailableError
from aruntime.backends import levelzero
from aruntime.backends.levelzero import _driver, _library

from ._subproc import NO_LOADER_REASON, loader_installed


def _open(how: str, monkeypatch: pytest.MonkeyPatch) -> _driver.LevelZeroDriver:
    if how.startswith("loader"):
        if not loader_installed():
            pytest.skip(NO_LOADER_REASON)
        monkeypatch.delenv("ARUNTIME_LEVELZERO_SIM_DIRECT", raising=False)
    else:
        monkeypatch.setenv("ARUNTIME_LEVELZERO_SIM_DIRECT", "1")
    try:
        drv = levelzero.open_driver(0, sim=True)
    except BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim cannot be opened: {exc}")
    assert isinstance(drv, _driver.LevelZeroDriver)
    return drv


@pytest.fixture(scope="module")
def gpu() -> Iterator[ar.Backend]:
    """levelzero-sim through the public API, one backend for a test module (a module
    that needs another kind of ``gpu`` defines its own)."""
    try:
        backend = ar.open_backend("levelzero-sim")
    except BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim cannot be opened: {exc}")
    yield backend
    backend.close()


@pytest.fixture(params=["loader", "direct", "loader-abi"])
def ze(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[_driver.LevelZeroDriver]:
    """The driver on device 0 of the sim, through the system loader and loaded directly.

    "loader-abi" makes every call through cffi's ABI mode, as where the
    compiled calls of the op path (``_ffi.compiled_calls``) were not built.
    """
    if request.param == "loader-abi":
        monkeypatch.setenv("ARUNTIME_LEVELZERO_ABI", "1")
    drv = _open(request.param, monkeypatch)
    if request.param == "loader-abi":
        assert drv._calls is None and "memset_d8" not in vars(drv)
    yield drv
    drv.close()


@contextlib.contextmanager
def replaced_call(
    drv: _driver.LevelZeroDriver, name: str, stand_in: Callable[..., int]
) -> Iterator[None]:
    """``drv``'s library function ``name`` replaced by ``stand_in``, on either path.

    The ABI calls go to a proxy of the library; the compiled ones through a
    table pointer to a C callback made of ``stand_in`` (given the same cffi
    arguments as the real function would be).
    """
    calls = drv._calls
    real_lib = drv._lib
    if calls is None or not any(f == name for f, _ in _compiled_fields(calls)):

        class Proxy:
            def __getattr__(self, attr: str) -> Any:
                return getattr(real_lib, attr)

        proxy = Proxy()
        setattr(proxy, name, stand_in)
        drv._lib = proxy
        try:
            yield
        finally:
            drv._lib = real_lib
        return
    from aruntime.backends.levelzero._ffi import ffi

    callback = ffi.callback(ffi.typeof(getattr(real_lib, name)), stand_in)
    compiled_ffi = _compiled_ffi()
    old = getattr(calls.table, name)
    setattr(calls.table, name, compiled_ffi.cast("void *", int(ffi.cast("uintptr_t", callback))))
    try:
        yield
    finally:
        setattr(calls.table, name, old)


def _compiled_ffi() -> Any:
    from aruntime.backends.levelzero import _ffi

    module = _ffi._compiled[0]
    assert module is not None
    return module.ffi


def _compiled_fields(calls: Any) -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = _compiled_ffi().typeof("ar_ze_table").fields
    return fields


def zl_for(drv: _driver.LevelZeroDriver) -> _library.ZeLibrary:
    return drv._zl
