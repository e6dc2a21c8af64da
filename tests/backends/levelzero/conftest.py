"""Fixtures that open the Level Zero driver on the software driver (levelzero-sim)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aruntime._exceptions import BackendUnavailableError
from aruntime.backends import levelzero
from aruntime.backends.levelzero import _driver, _library

from ._subproc import NO_LOADER_REASON, loader_installed


def _open(how: str, monkeypatch: pytest.MonkeyPatch) -> _driver.LevelZeroDriver:
    if how == "loader":
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


@pytest.fixture(params=["loader", "direct"])
def ze(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[_driver.LevelZeroDriver]:
    """The driver on device 0 of the sim, through the system loader and loaded directly."""
    drv = _open(request.param, monkeypatch)
    yield drv
    drv.close()


def zl_for(drv: _driver.LevelZeroDriver) -> _library.ZeLibrary:
    return drv._zl
