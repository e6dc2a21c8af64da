"""The code under test: a user's own small GPU helpers built on aruntime.

``scale`` multiplies an array by a factor on the device; ``scale_or_fallback``
does the same but computes on the host when the device runs out of memory,
which is the error path the tests exercise with the mock's fault injection.
"""

from __future__ import annotations

import numpy as np

import aruntime as ar

BLOCK = 256


async def scale(gpu: ar.Backend, host: np.ndarray, factor: float) -> np.ndarray:
    """Return ``host * factor`` (float32), computed on ``gpu``.

    Device memory and the stream are released however this ends, including
    when the caller is cancelled mid-await (the device finishes the queued
    ops on its own; the free waits for them).
    """
    data = np.ascontiguousarray(host, dtype=np.float32)
    if data.size == 0:
        return data.copy()
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    ptr = gpu.alloc(data.nbytes)
    try:
        with gpu.create_stream() as stream:
            await gpu.copy_h2d_async(data, ptr, stream=stream)
            grid = (data.size + BLOCK - 1) // BLOCK
            args = [np.uint32(data.size), np.float32(factor), ptr]
            await gpu.launch(kernel, grid, BLOCK, args, stream=stream)
            result: np.ndarray = await gpu.copy_d2h_async(ptr, np.empty_like(data), stream=stream)
            return result
    finally:
        gpu.free(ptr)


async def scale_or_fallback(gpu: ar.Backend, host: np.ndarray, factor: float) -> np.ndarray:
    """Like :func:`scale`, but on the host when the device is out of memory."""
    try:
        return await scale(gpu, host, factor)
    except ar.OutOfMemoryError:
        return np.asarray(host, dtype=np.float32) * np.float32(factor)
