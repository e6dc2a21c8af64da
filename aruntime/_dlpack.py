"""DLPack capsules built with ctypes (no compiler, no extra dependency).

A capsule named ``"dltensor"`` holds a ``DLManagedTensor`` whose
``manager_ctx`` keys an entry in :data:`_live`: the ctypes structures, the
shape and strides arrays, and the Python owner that keeps the memory alive.
The consumer renames the capsule to ``"used_dltensor"`` and later calls the
tensor's ``deleter``, which drops that entry; a capsule that nobody consumed
calls the deleter itself when it is collected.

The deleter is a ctypes function: ctypes takes the GIL for it, so the
consumer may call it from any thread.  The capsule's destructor is native
(ffi/dlpack/dlpack_capsule.c): a consumer that refuses the tensor (numpy, for
device memory) drops the capsule while its exception is set, and no Python
may run then; the native destructor sets the exception aside around the
deleter, so the consumer's error reaches the caller intact.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from typing import Any

import numpy as np

from ._exceptions import BackendUnavailableError
from ._native import native_library_path

__all__ = [
    "KDL_CPU",
    "KDL_CUDA",
    "KDL_EXT_DEV",
    "KDL_ONEAPI",
    "dtype_code",
    "make_capsule",
]

KDL_CPU = 1
KDL_CUDA = 2
KDL_ONEAPI = 14
#: DLPack's device type for memory no standard type describes: the mock's.
KDL_EXT_DEV = 12

_KDL_INT = 0
_KDL_UINT = 1
_KDL_FLOAT = 2
_KDL_COMPLEX = 5
_KDL_BOOL = 6
_CODES = {"i": _KDL_INT, "u": _KDL_UINT, "f": _KDL_FLOAT, "c": _KDL_COMPLEX, "b": _KDL_BOOL}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _Deleter),
]

_NAME = b"dltensor"
# A private handle on the C API, so setting argtypes touches nobody else's.
_api = ctypes.PyDLL(None)
_capsule_new = _api.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_is_valid = _api.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer = _api.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

#: manager_ctx -> everything one exported tensor keeps alive.
_live: dict[int, tuple[Any, ...]] = {}
_live_lock = threading.Lock()
_ids = itertools.count(1)


def _release(ctx: int | None) -> None:
    if ctx is not None:
        with _live_lock:
            _live.pop(ctx, None)


def _delete(managed: Any) -> None:
    _release(managed.contents.manager_ctx)


# Only where the native library is missing (ARUNTIME_NO_NATIVE_BUILD without a
# build): correct unless a consumer drops the capsule with its error set.
# The argument is a raw pointer, not py_object: the capsule is being destroyed,
# and taking a new reference to it here would resurrect it.
def _destroy_capsule(capsule: int | None) -> None:
    if capsule is None or not _capsule_is_valid(capsule, _NAME):
        return  # consumed: the consumer calls the deleter
    address = _capsule_pointer(capsule, _NAME)
    if address:
        _delete(ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)))


# Module-level, so the C thunks live as long as any capsule may call them.
_deleter: Any = _Deleter(_delete)
_python_destructor: Any = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_destroy_capsule)
_destructor: list[int] = []  # the destructor's address, found on first export


def _capsule_destructor() -> int:
    if not _destructor:
        try:
            native = ctypes.CDLL(str(native_library_path("libaruntime_dlpack.so")))
            address = ctypes.cast(native.ar_dlpack_capsule_destructor, ctypes.c_void_p).value
        except BackendUnavailableError:
            address = ctypes.cast(_python_destructor, ctypes.c_void_p).value
        assert address is not None
        _destructor.append(address)
    return _destructor[0]


def dtype_code(dtype: np.dtype[Any]) -> tuple[int, int] | None:
    """``(DLDataTypeCode, bits)`` for a numeric numpy dtype, else None."""
    code = _CODES.get(dtype.kind)
    if code is None or dtype.fields is not None or dtype.subdtype is not None:
        return None
    return code, dtype.itemsize * 8


def live_exports() -> int:
    """How many exported tensors are still held by a consumer (for leak tests)."""
    with _live_lock:
        return len(_live)


def make_capsule(
    data: int,
    device: tuple[int, int],
    dtype: np.dtype[Any],
    shape: tuple[int, ...],
    strides_elements: tuple[int, ...] | None,
    owner: object,
) -> Any:
    """A ``"dltensor"`` capsule over ``data``; ``owner`` lives until the consumer lets go."""
    code = dtype_code(dtype)
    if code is None:
        raise BufferError(f"__dlpack__: dtype {dtype} has no DLPack equivalent")
    ndim = len(shape)
    shape_arr = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides_arr = None
    if strides_elements is not None:
        strides_arr = (ctypes.c_int64 * max(ndim, 1))(*strides_elements)
    managed = _DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = data or None
    tensor.device = _DLDevice(*device)
    tensor.ndim = ndim
    tensor.dtype = _DLDataType(code[0], code[1], 1)
    tensor.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    if strides_arr is not None:
        tensor.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    ctx = next(_ids)
    managed.manager_ctx = ctx
    managed.deleter = _deleter
    with _live_lock:
        _live[ctx] = (managed, shape_arr, strides_arr, owner)
    try:
        return _capsule_new(
            ctypes.addressof(managed),
            _NAME,
            _capsule_destructor(),
        )
    except BaseException:
        _release(ctx)
        raise
