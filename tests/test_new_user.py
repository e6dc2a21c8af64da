"""What a new user hit (issue 32, item 5): public names, clear messages, honest reports."""

from __future__ import annotations

import pickle
import traceback

import numpy as np
import pytest

import aruntime as ar

_ERRORS = [
    getattr(ar, name)
    for name in ar.__all__
    if isinstance(getattr(ar, name), type) and issubclass(getattr(ar, name), Exception)
]


def test_every_public_exception_is_counted() -> None:
    assert ar.AruntimeError in _ERRORS and ar.StoreHazardError in _ERRORS
    assert len(_ERRORS) == 11


@pytest.mark.parametrize("cls", _ERRORS, ids=lambda c: c.__name__)
def test_exceptions_are_named_by_their_public_module(cls: type[Exception]) -> None:
    assert cls.__module__ == "aruntime"
    try:
        raise cls("boom")
    except cls as err:
        shown = "".join(traceback.format_exception_only(type(err), err))
    assert shown.startswith(f"aruntime.{cls.__name__}: boom")
    back = pickle.loads(pickle.dumps(cls("boom")))
    assert type(back) is cls and str(back) == "boom"


def test_np_asarray_of_a_device_ptr_says_to_copy_it(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(16)
    try:
        with pytest.raises(TypeError, match=r"DevicePtr.*copy_d2h"):
            np.asarray(ptr)
        with pytest.raises(TypeError, match=r"DevicePtr.*copy_d2h"):
            np.array(ptr)
        with pytest.raises(TypeError, match="slices"):
            ptr[0]  # type: ignore[index]
    finally:
        mock_backend.free(ptr)
