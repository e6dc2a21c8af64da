"""Library lookup: the order tried, and errors that list every path and why."""

from __future__ import annotations

import pytest

from aruntime._exceptions import BackendUnavailableError
from aruntime.backends.levelzero import _library

from ._subproc import NO_LOADER_REASON, loader_installed, run_python

needs_loader = pytest.mark.skipif(not loader_installed(), reason=NO_LOADER_REASON)


def _never(zl: _library.ZeLibrary) -> str | None:
    raise AssertionError("no library should have loaded")


def test_missing_override_path_is_listed(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "libze_missing.so"
    monkeypatch.setenv("ARUNTIME_LEVELZERO_LIBRARY", str(missing))
    monkeypatch.setattr(_library, "LOADER_NAME", "libze_loader_absent.so.1")
    with pytest.raises(BackendUnavailableError) as info:
        _library.load_library(sim=False, probe=_never)
    message = str(info.value)
    assert message.startswith("levelzero: no usable Level Zero library; tried:")
    assert str(missing) in message
    assert "libze_loader_absent.so.1" in message


def test_a_library_that_is_not_level_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    from aruntime.backends.levelzero import _driver

    monkeypatch.setenv("ARUNTIME_LEVELZERO_LIBRARY", "libm.so.6")
    monkeypatch.setattr(_library, "LOADER_NAME", "libze_loader_absent.so.1")
    with pytest.raises(BackendUnavailableError) as info:
        _library.load_library(sim=False, probe=_driver.probe)
    assert "libm.so.6: it does not export zeInit (not a Level Zero library)" in str(info.value)


def test_the_probe_reason_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARUNTIME_LEVELZERO_LIBRARY", "libc.so.6")
    monkeypatch.setattr(_library, "LOADER_NAME", "libze_loader_absent.so.1")
    with pytest.raises(BackendUnavailableError, match=r"libc\.so\.6: no devices here"):
        _library.load_library(sim=False, probe=lambda zl: "no devices here")


@needs_loader
def test_system_loader_without_drivers_is_left_uninitialised() -> None:
    """No driver installed: levelzero says so without a zeInit, so the sim still works."""
    result = run_python(
        """
        from aruntime._exceptions import BackendUnavailableError
        from aruntime.backends import levelzero
        from aruntime.backends.levelzero import _library
        try:
            levelzero.list_devices(sim=False)
        except BackendUnavailableError as exc:
            print(exc)
        print("mode", _library._loader_mode)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "no Level Zero driver is installed for it to load" in result.stdout
    assert "libze_intel_gpu.so.1" in result.stdout
    assert "mode None" in result.stdout


@needs_loader
def test_failed_zeinit_is_reported_and_blocks_the_sim_in_that_process() -> None:
    result = run_python(
        """
        from aruntime._exceptions import BackendUnavailableError
        from aruntime.backends import levelzero
        for sim in (False, True):
            try:
                levelzero.list_devices(sim=sim)
            except BackendUnavailableError as exc:
                print("ERR", exc)
        """,
        ZE_ENABLE_NULL_DRIVER="1",  # the loader looks for libze_null.so.1, absent here
    )
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.split("ERR ")[1:]
    assert "zeInit(0) returned" in first
    assert "the loader keeps this result for the whole process" in first
    assert "already initialised the Level Zero loader for the system's drivers" in second
    assert "ARUNTIME_LEVELZERO_SIM_DIRECT=1" in second
