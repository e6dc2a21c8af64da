"""Opening backends by name: auto, the environment, errors, probing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aruntime as ar


def test_open_mock_and_its_options() -> None:
    with ar.open_backend("mock", device_name="tiny", total_memory=1 << 20, compute_units=3) as gpu:
        assert gpu.name == "mock"
        assert gpu.device.name == "tiny"
        assert gpu.total_memory() == 1 << 20 == gpu.device.total_memory
        assert gpu.sm_count() == 3 == gpu.device.compute_units
        assert "tiny" in repr(gpu)
    assert "closed" in repr(gpu)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"total_memory": 0}, ar.InvalidArgumentError),
        ({"total_memory": -5}, ar.InvalidArgumentError),
        ({"total_memory": 1.5}, TypeError),
        ({"compute_units": 0}, ar.InvalidArgumentError),
        ({"compute_units": True}, TypeError),
        ({"device_name": 3}, TypeError),
        ({"latency": -1}, ar.InvalidArgumentError),
        ({"latency": 61}, ar.InvalidArgumentError),
        ({"latency": "1"}, TypeError),
        ({"bogus": 1}, TypeError),
    ],
)
def test_bad_mock_options(options: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        ar.open_backend("mock", **options)


def test_bad_names_and_devices() -> None:
    with pytest.raises(ar.InvalidArgumentError, match=r"unknown backend 'nope'.*mock"):
        ar.open_backend("nope")
    with pytest.raises(TypeError):
        ar.open_backend(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ar.open_backend("mock", device=True)
    with pytest.raises(TypeError):
        ar.open_backend("mock", device="0")  # type: ignore[arg-type]
    with pytest.raises(ar.InvalidArgumentError):
        ar.open_backend("mock", device=-1)
    with pytest.raises(ar.BackendUnavailableError, match="device 1"):
        ar.open_backend("mock", device=1)


def test_auto_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARUNTIME_BACKEND", "mock")
    with ar.open_backend("auto") as gpu:
        assert gpu.name == "mock"
    with ar.open_backend() as gpu:
        assert gpu.name == "mock"
    for bad in ("auto", "cuda9"):
        monkeypatch.setenv("ARUNTIME_BACKEND", bad)
        with pytest.raises(ar.InvalidArgumentError, match="ARUNTIME_BACKEND"):
            ar.open_backend("auto")


def test_auto_without_the_environment_opens_something(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_BACKEND", raising=False)
    with ar.open_backend("auto") as gpu:
        # A real device where there is one, else the mock: never a software driver.
        assert gpu.name in ("cuda", "levelzero", "mock")


def test_probe_backends_lists_every_backend_with_a_reason() -> None:
    statuses = ar.probe_backends()
    assert [s.name for s in statuses] == list(ar.BACKEND_NAMES)
    by_name = {s.name: s for s in statuses}
    mock = by_name["mock"]
    assert mock.available and len(mock.devices) == 1 and mock.reason == ""
    for s in statuses:
        if not s.available:
            assert s.reason and not s.devices
    available = ar.available_backends()
    assert "mock" in available
    assert set(available) == {s.name for s in statuses if s.available}
    assert available["mock"][0].total_memory > 0


def test_lazy_import_and_unavailable_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from aruntime import _registry

    real = importlib.import_module

    def fake(name: str, *args: object) -> object:
        if name == "aruntime.backends.cuda":
            raise ImportError("simulated: not built")
        return real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_registry.importlib, "import_module", fake)
    with pytest.raises(ar.BackendUnavailableError, match=r"cuda.*simulated"):
        ar.open_backend("cuda")
    status = {s.name: s for s in ar.probe_backends()}["cuda"]
    assert not status.available and "simulated" in status.reason


#: Imported by a process that only opens the mock, the first open would block its caller
#: for them: the other backends (probing, cffi, native-library builds) and the
#: threaded mock, which only ``latency=`` needs.
_NOT_FOR_THE_MOCK = (
    "aruntime.backends.cuda",
    "aruntime.backends.levelzero",
    "aruntime.backends.mock._threaded",
    "aruntime._native",
    "cffi",
)

_FIRST_OPEN = """
import json, sys
import aruntime as ar
before = set(sys.modules)
ar.open_backend(*sys.argv[1:2], **json.loads(sys.argv[2])).close()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _imported_by_first_open(name: str, env: dict[str, str], **options: object) -> list[str]:
    """The modules a fresh process imports in its first ``open_backend(name, **options)``."""
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_OPEN, name, json.dumps(options)],
        env={**os.environ, "PYTHONPATH": root, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    imported: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return imported


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(_NOT_FOR_THE_MOCK)]


@pytest.mark.parametrize(("name", "env"), [("mock", {}), ("auto", {"ARUNTIME_BACKEND": "mock"})])
def test_first_mock_open_loads_only_the_mock(name: str, env: dict[str, str]) -> None:
    imported = _imported_by_first_open(name, env)
    assert "aruntime.backends.mock._driver" in imported  # the walk sees the lazy import
    assert _heavy(imported) == []


def test_the_threaded_mock_is_loaded_when_asked_for() -> None:
    imported = _imported_by_first_open("mock", {}, latency=0.001)
    assert _heavy(imported) == ["aruntime.backends.mock._threaded"]
