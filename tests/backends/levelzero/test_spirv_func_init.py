"""Aggregate initializers of function variables on levelzero-sim's SPIR-V executor.

dpnp's images declare ``Function`` variables whose initializer is an
``OpConstantComposite`` or ``OpConstantNull`` of struct or array type (issue
31: 121 of its tensor tests stopped there).  ``spirv/func_init.spvasm`` has
nested and partly null ones, a store of a constant composite, and a helper
called twice that changes its initialized variables: each call starts from
the initializer again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import aruntime as ar

HERE = Path(__file__).resolve().parent / "spirv"


def test_function_variables_start_from_their_aggregate_initializers(gpu: ar.Backend) -> None:
    module = gpu.load_module("func_init", (HERE / "func_init.spv").read_bytes())
    n = 8
    out = np.full((n, 16), 0x5A5A5A5A, np.uint32)
    p = gpu.alloc(out.nbytes)
    try:
        gpu.copy_h2d(out, p)
        gpu.launch(gpu.kernel(module, "func_init"), 2, n // 2, [p])
        gpu.synchronize().wait()
        got = gpu.copy_d2h(p, np.empty_like(out))
    finally:
        gpu.free(p)
    f32_bits = int(np.float32(2.5).view(np.uint32))
    row = [7, f32_bits, 1, 0xFFFFFFFE, 3, 0, 4, 9, 0, 0, 10 + 1 + 20, 10 + 2 + 20]
    want = np.array([[*row, i, 0x5A5A5A5A, 0x5A5A5A5A, 0x5A5A5A5A] for i in range(n)], np.uint32)
    np.testing.assert_array_equal(got, want)
