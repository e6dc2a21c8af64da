"""Every backend package satisfies the one contract the registry relies on."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

import aruntime as ar
from aruntime._backend_package import BackendPackage, check_options
from aruntime._registry import BACKEND_NAMES

PACKAGES = ("mock", "cuda", "levelzero")


def _package(name: str) -> ModuleType:
    return importlib.import_module(f"aruntime.backends.{name}")


@pytest.mark.parametrize("name", PACKAGES)
def test_package_satisfies_the_protocol(name: str) -> None:
    module = _package(name)
    assert isinstance(module, BackendPackage)
    assert isinstance(module.OPTIONS, frozenset)
    assert all(isinstance(option, str) for option in module.OPTIONS)
    listing = inspect.signature(module.list_devices).parameters
    assert [(p.name, p.kind) for p in listing.values()] == [("sim", inspect.Parameter.KEYWORD_ONLY)]
    opening = inspect.signature(module.open_driver).parameters
    assert [(p.name, p.kind) for p in opening.values()] == [
        ("device", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("sim", inspect.Parameter.KEYWORD_ONLY),
        ("options", inspect.Parameter.VAR_KEYWORD),
    ]


def test_a_module_without_the_names_is_not_a_package() -> None:
    assert not isinstance(
        importlib.import_module("aruntime.backends.cuda._constants"), BackendPackage
    )


@pytest.mark.parametrize("name", BACKEND_NAMES)
def test_unknown_option_names_itself_and_the_accepted_ones(name: str) -> None:
    # Checked before any library is loaded, so this holds where the backend
    # is unavailable too.
    accepted = sorted(_package(name.removesuffix("-sim")).OPTIONS)
    with pytest.raises(TypeError, match=rf"the {name} backend has no option 'bogus'") as info:
        ar.open_backend(name, bogus=1)
    message = str(info.value)
    assert message.endswith(", ".join(accepted) if accepted else "none"), message


@pytest.mark.parametrize("name", PACKAGES)
def test_open_driver_checks_options_itself(name: str) -> None:
    with pytest.raises(TypeError, match=r"no options 'a', 'b'"):
        _package(name).open_driver(0, sim=True, b=2, a=1)


def test_mock_accepts_every_option_it_lists() -> None:
    from aruntime.backends.mock import H100

    options = {
        "device_name": "x",
        "total_memory": 1 << 20,
        "compute_units": 2,
        "profile": H100,
        "latency": 0.0,
    }
    assert set(options) == _package("mock").OPTIONS
    with ar.open_backend("mock", **options) as gpu:
        assert gpu.device.name == "x"
        assert gpu.driver.profile is H100  # type: ignore[attr-defined]


def test_check_options_accepts_known_options() -> None:
    check_options("x", {"a": 1}, frozenset({"a", "b"}))
    check_options("x", {}, frozenset())
