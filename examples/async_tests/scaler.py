"""The code under test: a small async GPU routine of the kind a user writes.

``scale_on_gpu`` uploads an array, scales it with a kernel and downloads the
result on its own stream, awaiting each step, and releases what it allocated
even when a step fails or the caller is cancelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import aruntime as ar

Floats = np.ndarray[Any, np.dtype[np.float32]]


async def scale_on_gpu(gpu: ar.Backend, values: Floats, factor: float) -> Floats:
    """``values * factor``, computed on ``gpu``."""
    if values.dtype != np.float32 or values.ndim != 1:
        raise TypeError("scale_on_gpu expects a 1-D float32 array")
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    dptr = gpu.alloc(max(values.nbytes, 4))
    try:
        with gpu.create_stream() as stream:
            await gpu.copy_h2d_async(values, dptr, stream=stream)
            args = [np.uint32(values.size), np.float32(factor), dptr]
            await gpu.launch(kernel, max(1, -(-values.size // 256)), 256, args, stream=stream)
            out: Floats = await gpu.copy_d2h_async(dptr, np.empty_like(values), stream=stream)
            return out
    finally:
        # Safe even if the device is still using it (a cancelled await): the
        # backend frees the memory only after the queued work has finished.
        gpu.free(dptr)
