"""An op that reached the driver keeps its buffers alive even when no marker can follow it.

The op is queued and may still read its source (or write its destination)
after the marker that would say when it is done failed to be recorded: the
backend closing under another thread at interpreter exit, a sticky error
surfacing at the record.  The buffers then wait for the stream's next op,
which the stream reaches only after them.  Dropping them at once let a
staged copy's host function read freed memory (a segfault at exit in
tests/backends/cuda/test_exit.py).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


def _driver_error() -> Exception:
    return ar.DriverError("record failed", backend="mock", code=1, name="E", function="record")


def _closed() -> Exception:
    return ar.ClosedResourceError("mock: the interpreter is exiting")


# A new exception per raise: one kept by the parameter would keep the failed
# call's frames, and the buffer, alive through its traceback.
@pytest.mark.parametrize("make_error", [_driver_error, _closed], ids=["driver-error", "closed"])
async def test_buffers_of_an_op_without_a_marker_wait_for_the_next_op(
    make_error: Callable[[], Exception],
) -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        stream = gpu.create_stream()
        ptr = gpu.alloc(4096)
        driver: Any = gpu.driver
        record = driver.event_record

        def failing_record(*args: Any) -> None:
            raise make_error()

        src = np.ones(4096, np.uint8)
        alive = weakref.ref(src)
        driver.event_record = failing_record
        try:
            if make_error is _driver_error:
                with pytest.raises(ar.DriverError, match="record failed"):
                    await gpu.copy_h2d_async(src, ptr, stream=stream)
            else:
                # The marker is recorded when somebody waits: the await raises.
                with pytest.raises(ar.ClosedResourceError):
                    await gpu.copy_h2d_async(src, ptr, stream=stream)
        finally:
            driver.event_record = record
        del src
        gc.collect()
        assert alive() is not None  # the queued copy may still read it
        await gpu.memset_async(ptr, 0, 4096, stream=stream)
        gc.collect()
        assert alive() is None  # the stream is past the copy now
        stream.close()
        gpu.free(ptr)
    finally:
        gpu.close()
