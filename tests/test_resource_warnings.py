"""ResourceWarnings name the user's line: where a dropped object was made, where close() ran."""

from __future__ import annotations

import gc
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar


def _line_of(marker: str, fn: Callable[..., Any]) -> int:
    """The line number of the first line of ``fn``'s source that contains ``marker``."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _make_and_drop(gpu: ar.Backend, what: str) -> None:
    if what == "stream":
        gpu.create_stream()  # made here
    elif what == "event":
        gpu.create_event()  # made here
    elif what == "graph":
        with gpu.capture(gpu.default_stream()):  # made here
            pass
    else:
        gpu.array_from_numpy(np.arange(4, dtype=np.float32))  # made here


@pytest.mark.parametrize("what", ["stream", "event", "graph", "array"])
def test_a_dropped_handle_warns_at_the_line_that_made_it(what: str) -> None:
    with ar.open_backend("mock") as gpu:
        with pytest.warns(ResourceWarning, match="unclosed") as record:
            _make_and_drop(gpu, what)
            gc.collect()
        ours = [w for w in record if issubclass(w.category, ResourceWarning)]
        assert ours, record
        assert ours[0].filename == __file__, ours[0].filename  # not weakref.py
        source = inspect.getsource(_make_and_drop)
        marker = {
            "stream": "gpu.create_stream()",
            "event": "gpu.create_event()",
            "graph": "with gpu.capture(",
            "array": "gpu.array_from_numpy(",
        }[what]
        assert marker in source
        assert ours[0].lineno == _line_of(marker, _make_and_drop)


def _open_and_drop() -> None:
    ar.open_backend("mock")  # opened here


def test_a_dropped_backend_warns_at_the_line_that_opened_it() -> None:
    with pytest.warns(ResourceWarning, match="unclosed backend") as record:
        _open_and_drop()
        gc.collect()
    assert record[0].filename == __file__
    assert record[0].lineno == _line_of("ar.open_backend", _open_and_drop)


@pytest.mark.parametrize("variant", ["mock", "mock-async"])
def test_close_warns_about_live_allocations_with_their_sites(variant: str) -> None:
    options: dict[str, Any] = {"latency": 0.0} if variant == "mock-async" else {}
    gpu = ar.open_backend("mock", **options)
    first = gpu.alloc(100)
    more = [gpu.alloc(10) for _ in range(3)]
    pinned = gpu.alloc_host_pinned(16)
    gpu.host_ptr_to_device(pinned)  # a mapping goes with its host buffer, uncounted
    freed = gpu.alloc(8)
    gpu.free(freed)
    with pytest.warns(ResourceWarning, match="freed 5 allocations \\(146 bytes\\)") as record:
        gpu.close()
    message = str(record[0].message)
    here = __file__
    this_test = test_close_warns_about_live_allocations_with_their_sites
    assert f"{here}:{_line_of('first = gpu.alloc(100)', this_test)}" in message
    assert "(3 x, 30 bytes)" in message  # grouped by site
    assert record[0].filename == here
    assert gpu.live_alloc_count() == 0 and pinned.freed
    del first, more


def test_close_without_leaks_does_not_warn() -> None:
    import warnings

    gpu = ar.open_backend("mock")
    ptr = gpu.alloc(8)
    gpu.free(ptr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu.close()
