"""cuda.h enum values (ABI, stable across releases)."""

from __future__ import annotations

from . import _errors

# cuda.h constants (enum values are ABI, stable across releases).
_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
#: MAX_THREADS_PER_BLOCK, MAX_BLOCK_DIM_X/Y/Z, MAX_GRID_DIM_X/Y/Z,
#: MAX_SHARED_MEMORY_PER_BLOCK (cuda.h numbers them 1 to 8) and
#: MAX_SHARED_MEMORY_PER_BLOCK_OPTIN (97), in that order.
_CU_DEVICE_ATTRIBUTES_LIMITS = (1, 2, 3, 4, 5, 6, 7, 8, 97)
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CU_STREAM_NON_BLOCKING = 0x1
_CU_EVENT_BLOCKING_SYNC = 0x1
_CU_EVENT_DISABLE_TIMING = 0x2
_CU_MEMHOSTALLOC_PORTABLE = 0x1
_CU_MEMHOSTALLOC_DEVICEMAP = 0x2
_CU_MEM_ATTACH_GLOBAL = 0x1
_CU_MEMORYTYPE_HOST = 0x1
_CU_MEMORYTYPE_DEVICE = 0x2
_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2
_CU_STREAM_CAPTURE_MODE_RELAXED = 2
_CU_STREAM_CAPTURE_STATUS_NONE = 0
_NOT_READY = _errors.CUDA_ERROR_NOT_READY
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4

#: Idle memory a stream-ordered pool keeps for reuse instead of returning it
#: to the device at the next synchronisation: a quarter of the device, at most.
POOL_KEEP_FRACTION = 4

#: cuCtxEnablePeerAccess when access is already on (another library enabled it).
_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
