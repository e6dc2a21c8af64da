/* cuda-sim: cuGetProcAddress, answering by base name and CUDA version as the
 * driver does: "cuMemAlloc" at 12000 is cuMemAlloc_v2, "cuEventElapsedTime"
 * at 12080 and later is cuEventElapsedTime_v2, and so on.  Each row gives the
 * first CUDA version (major*1000 + minor*10) at which the base name means
 * that versioned entry point; a request gets the newest row not newer than
 * its version.  Generated from the list in the commit that added it; the
 * per-thread-default-stream flag returns the same entry points (the sim's
 * _ptds/_ptsz variants would only differ in what stream 0 means). */
#include <string.h>

#include "cusim.h"

typedef struct proc_entry {
    const char *name;
    int version;
    void *fn;
} proc_entry;

static const proc_entry g_procs[] = {
    {"cuInit", 2000, (void *)cuInit},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion},
    {"cuGetErrorName", 6000, (void *)cuGetErrorName},
    {"cuGetErrorString", 6000, (void *)cuGetErrorString},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount},
    {"cuDeviceGetName", 2000, (void *)cuDeviceGetName},
    {"cuDeviceGetUuid", 9020, (void *)cuDeviceGetUuid},
    {"cuDeviceGetUuid", 11040, (void *)cuDeviceGetUuid_v2},
    {"cuDeviceTotalMem", 3020, (void *)cuDeviceTotalMem_v2},
    {"cuDeviceGetAttribute", 2000, (void *)cuDeviceGetAttribute},
    {"cuDeviceGetPCIBusId", 4010, (void *)cuDeviceGetPCIBusId},
    {"cuDeviceCanAccessPeer", 4000, (void *)cuDeviceCanAccessPeer},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", 11000, (void *)cuDevicePrimaryCtxRelease_v2},
    {"cuDevicePrimaryCtxReset", 11000, (void *)cuDevicePrimaryCtxReset_v2},
    {"cuDevicePrimaryCtxGetState", 7000, (void *)cuDevicePrimaryCtxGetState},
    {"cuDevicePrimaryCtxSetFlags", 11000, (void *)cuDevicePrimaryCtxSetFlags_v2},
    {"cuCtxCreate", 3020, (void *)cuCtxCreate_v2},
    {"cuCtxCreate", 12050, (void *)cuCtxCreate_v4},
    {"cuCtxDestroy", 4000, (void *)cuCtxDestroy_v2},
    {"cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent},
    {"cuCtxGetCurrent", 4000, (void *)cuCtxGetCurrent},
    {"cuCtxPushCurrent", 4000, (void *)cuCtxPushCurrent_v2},
    {"cuCtxPopCurrent", 4000, (void *)cuCtxPopCurrent_v2},
    {"cuCtxGetDevice", 2000, (void *)cuCtxGetDevice},
    {"cuCtxGetFlags", 7000, (void *)cuCtxGetFlags},
    {"cuCtxSynchronize", 2000, (void *)cuCtxSynchronize},
    {"cuCtxGetStreamPriorityRange", 5050, (void *)cuCtxGetStreamPriorityRange},
    {"cuCtxGetApiVersion", 3020, (void *)cuCtxGetApiVersion},
    {"cuMemGetInfo", 3020, (void *)cuMemGetInfo_v2},
    {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2},
    {"cuMemFree", 3020, (void *)cuMemFree_v2},
    {"cuMemAllocManaged", 6000, (void *)cuMemAllocManaged},
    {"cuMemHostAlloc", 2020, (void *)cuMemHostAlloc},
    {"cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2},
    {"cuMemFreeHost", 2000, (void *)cuMemFreeHost},
    {"cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2},
    {"cuMemHostGetFlags", 2030, (void *)cuMemHostGetFlags},
    {"cuMemHostRegister", 4000, (void *)cuMemHostRegister_v2},
    {"cuMemHostUnregister", 4000, (void *)cuMemHostUnregister},
    {"cuMemGetAddressRange", 3020, (void *)cuMemGetAddressRange_v2},
    {"cuPointerGetAttribute", 4000, (void *)cuPointerGetAttribute},
    {"cuPointerGetAttributes", 7000, (void *)cuPointerGetAttributes},
    {"cuMemcpy", 4000, (void *)cuMemcpy},
    {"cuMemcpyAsync", 4000, (void *)cuMemcpyAsync},
    {"cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2},
    {"cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2},
    {"cuMemcpyDtoD", 3020, (void *)cuMemcpyDtoD_v2},
    {"cuMemcpyHtoDAsync", 3020, (void *)cuMemcpyHtoDAsync_v2},
    {"cuMemcpyDtoHAsync", 3020, (void *)cuMemcpyDtoHAsync_v2},
    {"cuMemcpyDtoDAsync", 3020, (void *)cuMemcpyDtoDAsync_v2},
    {"cuMemcpy2D", 3020, (void *)cuMemcpy2D_v2},
    {"cuMemcpy2DAsync", 3020, (void *)cuMemcpy2DAsync_v2},
    {"cuMemsetD8", 3020, (void *)cuMemsetD8_v2},
    {"cuMemsetD16", 3020, (void *)cuMemsetD16_v2},
    {"cuMemsetD32", 3020, (void *)cuMemsetD32_v2},
    {"cuMemsetD8Async", 3020, (void *)cuMemsetD8Async},
    {"cuMemsetD16Async", 3020, (void *)cuMemsetD16Async},
    {"cuMemsetD32Async", 3020, (void *)cuMemsetD32Async},
    {"cuStreamCreate", 2000, (void *)cuStreamCreate},
    {"cuStreamCreateWithPriority", 5050, (void *)cuStreamCreateWithPriority},
    {"cuStreamDestroy", 4000, (void *)cuStreamDestroy_v2},
    {"cuStreamSynchronize", 2000, (void *)cuStreamSynchronize},
    {"cuStreamQuery", 2000, (void *)cuStreamQuery},
    {"cuStreamWaitEvent", 3020, (void *)cuStreamWaitEvent},
    {"cuStreamGetPriority", 5050, (void *)cuStreamGetPriority},
    {"cuStreamGetFlags", 5050, (void *)cuStreamGetFlags},
    {"cuStreamGetCtx", 9020, (void *)cuStreamGetCtx},
    {"cuStreamGetId", 12000, (void *)cuStreamGetId},
    {"cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2},
    {"cuStreamEndCapture", 10000, (void *)cuStreamEndCapture},
    {"cuStreamIsCapturing", 10000, (void *)cuStreamIsCapturing},
    {"cuStreamGetCaptureInfo", 11030, (void *)cuStreamGetCaptureInfo_v2},
    {"cuStreamGetCaptureInfo", 12030, (void *)cuStreamGetCaptureInfo_v3},
    {"cuThreadExchangeStreamCaptureMode", 10010, (void *)cuThreadExchangeStreamCaptureMode},
    {"cuLaunchHostFunc", 10000, (void *)cuLaunchHostFunc},
    {"cuEventCreate", 2000, (void *)cuEventCreate},
    {"cuEventDestroy", 4000, (void *)cuEventDestroy_v2},
    {"cuEventRecord", 2000, (void *)cuEventRecord},
    {"cuEventRecordWithFlags", 11010, (void *)cuEventRecordWithFlags},
    {"cuEventQuery", 2000, (void *)cuEventQuery},
    {"cuEventSynchronize", 2000, (void *)cuEventSynchronize},
    {"cuEventElapsedTime", 2000, (void *)cuEventElapsedTime},
    {"cuEventElapsedTime", 12080, (void *)cuEventElapsedTime_v2},
    {"cuModuleLoad", 2000, (void *)cuModuleLoad},
    {"cuModuleLoadData", 2000, (void *)cuModuleLoadData},
    {"cuModuleLoadDataEx", 2010, (void *)cuModuleLoadDataEx},
    {"cuModuleUnload", 2000, (void *)cuModuleUnload},
    {"cuModuleGetFunction", 2000, (void *)cuModuleGetFunction},
    {"cuLaunchKernel", 4000, (void *)cuLaunchKernel},
    {"cuGraphCreate", 10000, (void *)cuGraphCreate},
    {"cuGraphGetNodes", 10000, (void *)cuGraphGetNodes},
    {"cuGraphInstantiateWithFlags", 11040, (void *)cuGraphInstantiateWithFlags},
    {"cuGraphInstantiate", 12000, (void *)cuGraphInstantiateWithFlags},
    {"cuGraphLaunch", 10000, (void *)cuGraphLaunch},
    {"cuGraphExecDestroy", 10000, (void *)cuGraphExecDestroy},
    {"cuGraphDestroy", 10000, (void *)cuGraphDestroy},
    {"cuGetProcAddress", 11030, (void *)cuGetProcAddress},
    {"cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!symbol || !pfn || cudaVersion < 0 ||
        (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    const proc_entry *best = NULL;
    int found = 0;
    for (size_t i = 0; i < sizeof g_procs / sizeof g_procs[0]; i++) {
        if (strcmp(g_procs[i].name, symbol) != 0)
            continue;
        found = 1;
        if (g_procs[i].version <= cudaVersion && (!best || g_procs[i].version > best->version))
            best = &g_procs[i];
    }
    if (!best) {
        if (symbolStatus && found)
            *symbolStatus = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = best->fn;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
