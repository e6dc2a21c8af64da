"""numpy twins of the portable kernels in ffi/kernels, for the mock backend.

Each takes the launch geometry first and handles only the indices a real
launch of that geometry would cover, so a too-small grid shows up on mock too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ..._driver import LaunchConfig
from ._bounds import typed
from ._compute_kernels import COMPUTE_MODULES

__all__ = ["MODULES"]

_Bytes = np.ndarray[Any, np.dtype[np.uint8]]


def _covered(launch: LaunchConfig, n: np.integer[Any]) -> int:
    threads = launch.grid[0] * launch.block[0]
    return min(int(n), threads)


def _f32(buf: _Bytes, count: int) -> np.ndarray[Any, np.dtype[np.float32]]:
    return typed(buf, count, np.float32)


_F = TypeVar("_F", bound=Callable[..., None])

# Byte sizes of the portable kernels' parameters (ffi/kernels/vector_ops.c):
# the mock checks launches against them as the native drivers do.  Every
# 8-byte parameter of these kernels is a pointer: the mock reads 8 raw bytes
# passed there as the address, as the native drivers do.
_U32 = _F32_SIZE = 4
_PTR = 8


def _params(*sizes: int) -> Callable[[_F], _F]:
    def mark(fn: _F) -> _F:
        fn.param_sizes = sizes  # type: ignore[attr-defined]
        fn.pointer_params = tuple(i for i, s in enumerate(sizes) if s == _PTR)  # type: ignore[attr-defined]
        return fn

    return mark


@_params(_U32, _F32_SIZE, _PTR, _PTR)
def saxpy(launch: LaunchConfig, n: Any, a: Any, x: _Bytes, y: _Bytes) -> None:
    m = _covered(launch, n)
    yv = _f32(y, m)
    yv[:] = np.float32(a) * _f32(x, m) + yv


@_params(_U32, _F32_SIZE, _PTR)
def fill_f32(launch: LaunchConfig, n: Any, value: Any, y: _Bytes) -> None:
    _f32(y, _covered(launch, n))[:] = np.float32(value)


@_params(_U32, _F32_SIZE, _PTR)
def scale_f32(launch: LaunchConfig, n: Any, a: Any, y: _Bytes) -> None:
    yv = _f32(y, _covered(launch, n))
    yv *= np.float32(a)


@_params(_U32, _PTR, _PTR, _PTR)
def add_f32(launch: LaunchConfig, n: Any, x: _Bytes, y: _Bytes, z: _Bytes) -> None:
    m = _covered(launch, n)
    _f32(z, m)[:] = _f32(x, m) + _f32(y, m)


@_params(_U32, _U32, _PTR)
def iota_u32(launch: LaunchConfig, n: Any, start: Any, y: _Bytes) -> None:
    m = _covered(launch, n)
    typed(y, m, np.uint32)[:] = np.arange(m, dtype=np.uint32) + np.uint32(start)


MODULES: dict[str, dict[str, Callable[..., None]]] = {
    "vector_ops": {
        "saxpy": saxpy,
        "fill_f32": fill_f32,
        "scale_f32": scale_f32,
        "add_f32": add_f32,
        "iota_u32": iota_u32,
    },
    **COMPUTE_MODULES,
}
