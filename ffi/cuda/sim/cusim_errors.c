/* cuda-sim: cuGetErrorName and cuGetErrorString.
 *
 * One row per CUresult of cuda.h (CUDA 13.5: 106 codes), sorted by code so a
 * lookup is a binary search.  tests/ffi/test_cuda_sim_errors.py checks the
 * rows against cuda.h and against cuda-bindings' CUresult, so a code that a
 * newer header adds shows up as a test failure, not as INVALID_VALUE at run
 * time.  The codes are written as numbers: the table is their one home, and
 * cuda_types.h names only the ones the sim returns. */
#include <stdlib.h>

#include "cusim.h"

typedef struct cusim_error {
    CUresult code;
    const char *name;
    const char *text;
} cusim_error;

static const cusim_error g_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {5, "CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using an external profiling tool"},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", "profiler not initialized"},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", "profiler already started"},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", "profiler already stopped"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
     "the call needs a newer driver than the one installed"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {47, "CUDA_ERROR_MULTICAST_RESOURCE_FULL", "the multicast object has no free resources"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "the device is not licensed for this operation"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
    {205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
    {206, "CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed"},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", "array is mapped"},
    {208, "CUDA_ERROR_ALREADY_MAPPED", "resource already mapped"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", "resource already acquired"},
    {211, "CUDA_ERROR_NOT_MAPPED", "resource not mapped"},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", "resource not mapped as array"},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", "resource not mapped as pointer"},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "the context is already in use by another thread"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these devices"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "invalid OpenGL or DirectX context"},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected"},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "the PTX JIT compiler library was not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the PTX was compiled with an unsupported toolchain"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation is disabled"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
     "the execution affinity type is not supported by the device"},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
     "the code uses device-side synchronization, which this device does not support"},
    {226, "CUDA_ERROR_CONTAINED", "an exception was contained on the device"},
    {227, "CUDA_ERROR_INSUFFICIENT_LOADER_VERSION",
     "the CUDA loader is too old for this driver"},
    {300, "CUDA_ERROR_INVALID_SOURCE", "device kernel source is invalid"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "shared object symbol not found"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialization failed"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "an operating system call failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {402, "CUDA_ERROR_LOSSY_QUERY", "the attribute query cannot be answered without loss"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "launch uses incompatible texturing mode"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "the primary context is already initialized"},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", "the context has been destroyed"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", "too many peer devices for peer access"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK",
     "a kernel exited without freeing its tensor memory"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "the driver and the kernel-mode driver versions do not match"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
     "forward compatibility is not supported on this device"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "MPS client failed to connect to the MPS server"},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", "the remote procedure call to the MPS server failed"},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", "the MPS server is not ready"},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", "the MPS server has reached its client limit"},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
     "the MPS server has reached its connection limit"},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", "the MPS client was terminated by the server"},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", "CUDA dynamic parallelism is not supported here"},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH",
     "the CUDA dynamic parallelism version does not match"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE",
     "operation would result in a merge of separate capture sequences"},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
     "capture was not ended in the same stream as it began"},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", "capturing stream has unjoined work"},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {907, "CUDA_ERROR_CAPTURED_EVENT",
     "operation not permitted on an event last recorded in a capturing stream"},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {909, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
     "the graph update was not performed because it broke an update rule"},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", "an async error occurred in an external device"},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", "a kernel launch has an invalid cluster size"},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "the function has not been loaded"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", "invalid resource type"},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION",
     "invalid resource configuration for the operation"},
    {916, "CUDA_ERROR_KEY_ROTATION", "an encryption key rotation error occurred"},
    {917, "CUDA_ERROR_STREAM_DETACHED", "the stream is detached"},
    {918, "CUDA_ERROR_GRAPH_RECAPTURE_FAILURE", "re-capturing the graph failed"},
    {919, "CUDA_ERROR_FABRIC_NOT_READY", "the fabric is not ready"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
    /* cuda-sim's own: only a launch that aruntime declared read-only ranges
     * for (arsim_set_launch_readonly) can fail with it. */
    {CUSIM_ERROR_READONLY_WRITE, "CUSIM_ERROR_READONLY_WRITE",
     "a kernel stored into memory its launch declared read-only"},
};

static int compare_code(const void *key, const void *row)
{
    CUresult a = *(const CUresult *)key, b = ((const cusim_error *)row)->code;
    return (a > b) - (a < b);
}

static const cusim_error *find_error(CUresult code)
{
    return bsearch(&code, g_errors, sizeof g_errors / sizeof g_errors[0], sizeof g_errors[0],
                   compare_code);
}

/* Like the driver, an unknown code is INVALID_VALUE with *pStr set to NULL;
 * neither call needs cuInit. */
CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const cusim_error *e = find_error(error);
    *pStr = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    const cusim_error *e = find_error(error);
    *pStr = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The engine's statuses as CUresults: the one mapping the front end uses. */
CUresult cusim_status(arsim_status s)
{
    switch (s) {
    case ARSIM_OK: return CUDA_SUCCESS;
    case ARSIM_ERR_INVALID_VALUE: return CUDA_ERROR_INVALID_VALUE;
    case ARSIM_ERR_OUT_OF_MEMORY: return CUDA_ERROR_OUT_OF_MEMORY;
    case ARSIM_ERR_INVALID_HANDLE: return CUDA_ERROR_INVALID_HANDLE;
    case ARSIM_ERR_NOT_READY: return CUDA_ERROR_NOT_READY;
    case ARSIM_ERR_LAUNCH_FAILED: return CUDA_ERROR_LAUNCH_FAILED;
    case ARSIM_ERR_READONLY_WRITE: return (CUresult)CUSIM_ERROR_READONLY_WRITE;
    case ARSIM_ERR_ILLEGAL_ADDRESS: return CUDA_ERROR_ILLEGAL_ADDRESS;
    case ARSIM_ERR_ASSERT: return (CUresult)710; /* CUDA_ERROR_ASSERT */
    case ARSIM_ERR_MISALIGNED_ADDRESS: return (CUresult)716; /* CUDA_ERROR_MISALIGNED_ADDRESS */
    case ARSIM_ERR_INVALID_IMAGE: return CUDA_ERROR_INVALID_IMAGE;
    case ARSIM_ERR_NOT_FOUND: return CUDA_ERROR_NOT_FOUND;
    case ARSIM_ERR_TIMEOUT: return CUDA_ERROR_TIMEOUT;
    case ARSIM_ERR_INVALID_DEVICE: return CUDA_ERROR_INVALID_DEVICE;
    case ARSIM_ERR_CAPTURING: return CUDA_ERROR_ILLEGAL_STATE;
    case ARSIM_ERR_NOT_CAPTURING: return CUDA_ERROR_ILLEGAL_STATE;
    case ARSIM_ERR_FORKED: return CUDA_ERROR_NOT_INITIALIZED;
    default: return CUDA_ERROR_UNKNOWN;
    }
}
