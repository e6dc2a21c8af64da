"""A launch with the wrong arguments is refused cleanly on every backend.

Too few, too many, or an argument of the wrong size (a 4-byte scalar where
the kernel takes a pointer) raises InvalidArgumentError at ``launch``; the
process survives, nothing runs, and the backend keeps working.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio

N = 64


def _bad_args(dx: ar.DevicePtr, dy: ar.DevicePtr) -> list[tuple[str, list[Any]]]:
    n, a = np.uint32(N), np.float32(2)
    return [
        ("none", []),
        ("too few", [n, a, dx]),
        ("too many", [n, a, dx, dy, dy]),
        ("scalar for pointer", [n, a, np.uint32(0), dy]),
        ("wide scalar", [np.uint64(N), a, dx, dy]),
        ("short bytes", [n, a, dx, b"\0" * 4]),
    ]


async def test_wrong_arguments_are_refused(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    dx, dy = backend.alloc(x.nbytes), backend.alloc(y.nbytes)
    backend.copy_h2d_async(x, dx)
    await backend.copy_h2d_async(y, dy)
    for label, args in _bad_args(dx, dy):
        with pytest.raises(ar.InvalidArgumentError, match="saxpy") as info:
            backend.launch(saxpy, 1, N, args)
        assert "argument" in str(info.value), label
    # Nothing ran, and a correct launch still gives the right numbers.
    await backend.synchronize()
    np.testing.assert_array_equal(await backend.copy_d2h_async(dy, np.empty_like(y)), y)
    await backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(2), dx, dy])
    out = await backend.copy_d2h_async(dy, np.empty_like(y))
    np.testing.assert_allclose(out, 2 * x + 1)
    backend.free(dx)
    backend.free(dy)


async def test_error_names_index_and_sizes(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    d = backend.alloc(4 * N)
    with pytest.raises(ar.InvalidArgumentError, match=r"4 argument\(s\), got 3"):
        backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(1), d])
    with pytest.raises(ar.InvalidArgumentError, match=r"argument 2\b.*\b4 bytes"):
        backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(1), np.uint32(0), d])
    backend.free(d)


async def test_mock_checks_python_signature(mock_backend: ar.Backend) -> None:
    seen: list[int] = []

    def two(launch: Any, n: Any, ptr: Any) -> None:
        seen.append(int(n))

    def flexible(launch: Any, n: Any, *rest: Any) -> None:
        seen.append(len(rest))

    module = mock_backend.load_module("sig", {"two": two, "flexible": flexible})
    k = mock_backend.kernel(module, "two")
    d = mock_backend.alloc(16)
    with pytest.raises(ar.InvalidArgumentError, match=r"'two' takes 2 argument\(s\), got 1"):
        mock_backend.launch(k, 1, 1, [np.uint32(1)])
    with pytest.raises(ar.InvalidArgumentError, match="got 3"):
        mock_backend.launch(k, 1, 1, [np.uint32(1), d, d])
    await mock_backend.launch(k, 1, 1, [np.uint32(7), d])
    f = mock_backend.kernel(module, "flexible")
    with pytest.raises(ar.InvalidArgumentError, match="at least 1"):
        mock_backend.launch(f, 1, 1, [])
    await mock_backend.launch(f, 1, 1, [np.uint32(1), d, d, d])
    assert seen == [7, 3]
    mock_backend.free(d)
