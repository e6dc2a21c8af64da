/* cuda-sim: cuGetProcAddress, answering by base name and CUDA version as the
 * driver does: "cuMemAlloc" at 12000 is cuMemAlloc_v2, "cuEventElapsedTime"
 * at 12080 and later is cuEventElapsedTime_v2, and so on.  Each row gives the
 * first CUDA version (major*1000 + minor*10) at which the base name means
 * that versioned entry point; a request gets the newest row not newer than
 * its version.  Under CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the
 * _ptsz/_ptds variant is returned where there is one (cusim_ptds.c). */
#include <string.h>

#include "cusim.h"

typedef struct proc_entry {
    const char *name;
    int version;
    void *fn;
    void *fn_ptds; /* its _ptsz/_ptds variant, if stream 0 matters to it */
} proc_entry;

static const proc_entry g_procs[] = {
    {"cuInit", 2000, (void *)cuInit, NULL},
    {"cuDriverGetVersion", 2020, (void *)cuDriverGetVersion, NULL},
    {"cuGetErrorName", 6000, (void *)cuGetErrorName, NULL},
    {"cuGetErrorString", 6000, (void *)cuGetErrorString, NULL},
    {"cuDeviceGet", 2000, (void *)cuDeviceGet, NULL},
    {"cuDeviceGetCount", 2000, (void *)cuDeviceGetCount, NULL},
    {"cuDeviceGetName", 2000, (void *)cuDeviceGetName, NULL},
    {"cuDeviceGetUuid", 9020, (void *)cuDeviceGetUuid, NULL},
    {"cuDeviceGetUuid", 11040, (void *)cuDeviceGetUuid_v2, NULL},
    {"cuDeviceTotalMem", 3020, (void *)cuDeviceTotalMem_v2, NULL},
    {"cuDeviceGetAttribute", 2000, (void *)cuDeviceGetAttribute, NULL},
    {"cuDeviceGetPCIBusId", 4010, (void *)cuDeviceGetPCIBusId, NULL},
    {"cuDeviceCanAccessPeer", 4000, (void *)cuDeviceCanAccessPeer, NULL},
    {"cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain, NULL},
    {"cuDevicePrimaryCtxRelease", 11000, (void *)cuDevicePrimaryCtxRelease_v2, NULL},
    {"cuDevicePrimaryCtxReset", 11000, (void *)cuDevicePrimaryCtxReset_v2, NULL},
    {"cuDevicePrimaryCtxGetState", 7000, (void *)cuDevicePrimaryCtxGetState, NULL},
    {"cuDevicePrimaryCtxSetFlags", 11000, (void *)cuDevicePrimaryCtxSetFlags_v2, NULL},
    {"cuCtxCreate", 3020, (void *)cuCtxCreate_v2, NULL},
    {"cuCtxCreate", 12050, (void *)cuCtxCreate_v4, NULL},
    {"cuCtxDestroy", 4000, (void *)cuCtxDestroy_v2, NULL},
    {"cuCtxSetCurrent", 4000, (void *)cuCtxSetCurrent, NULL},
    {"cuCtxGetCurrent", 4000, (void *)cuCtxGetCurrent, NULL},
    {"cuCtxPushCurrent", 4000, (void *)cuCtxPushCurrent_v2, NULL},
    {"cuCtxPopCurrent", 4000, (void *)cuCtxPopCurrent_v2, NULL},
    {"cuCtxGetDevice", 2000, (void *)cuCtxGetDevice, NULL},
    {"cuCtxSetLimit", 3010, (void *)cuCtxSetLimit, NULL},
    {"cuCtxGetLimit", 3010, (void *)cuCtxGetLimit, NULL},
    {"cuProfilerStart", 4000, (void *)cuProfilerStart, NULL},
    {"cuProfilerStop", 4000, (void *)cuProfilerStop, NULL},
    {"cuCtxGetFlags", 7000, (void *)cuCtxGetFlags, NULL},
    {"cuCtxSynchronize", 2000, (void *)cuCtxSynchronize, NULL},
    {"cuCtxGetStreamPriorityRange", 5050, (void *)cuCtxGetStreamPriorityRange, NULL},
    {"cuCtxGetApiVersion", 3020, (void *)cuCtxGetApiVersion, NULL},
    {"cuMemGetInfo", 3020, (void *)cuMemGetInfo_v2, NULL},
    {"cuMemAlloc", 3020, (void *)cuMemAlloc_v2, NULL},
    {"cuMemFree", 3020, (void *)cuMemFree_v2, NULL},
    {"cuMemAllocManaged", 6000, (void *)cuMemAllocManaged, NULL},
    {"cuMemHostAlloc", 2020, (void *)cuMemHostAlloc, NULL},
    {"cuMemAllocHost", 3020, (void *)cuMemAllocHost_v2, NULL},
    {"cuMemFreeHost", 2000, (void *)cuMemFreeHost, NULL},
    {"cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2, NULL},
    {"cuMemHostGetFlags", 2030, (void *)cuMemHostGetFlags, NULL},
    {"cuMemHostRegister", 4000, (void *)cuMemHostRegister_v2, NULL},
    {"cuMemHostUnregister", 4000, (void *)cuMemHostUnregister, NULL},
    {"cuDeviceGetDefaultMemPool", 11020, (void *)cuDeviceGetDefaultMemPool, NULL},
    {"cuDeviceGetMemPool", 11020, (void *)cuDeviceGetMemPool, NULL},
    {"cuDeviceSetMemPool", 11020, (void *)cuDeviceSetMemPool, NULL},
    {"cuMemPoolCreate", 11020, (void *)cuMemPoolCreate, NULL},
    {"cuMemPoolDestroy", 11020, (void *)cuMemPoolDestroy, NULL},
    {"cuMemPoolSetAttribute", 11020, (void *)cuMemPoolSetAttribute, NULL},
    {"cuMemPoolGetAttribute", 11020, (void *)cuMemPoolGetAttribute, NULL},
    {"cuMemPoolTrimTo", 11020, (void *)cuMemPoolTrimTo, NULL},
    {"cuMemAllocAsync", 11020, (void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, (void *)cuMemAllocFromPoolAsync, (void *)cuMemAllocFromPoolAsync_ptsz},
    {"cuMemFreeAsync", 11020, (void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz},
    {"cuMemGetAddressRange", 3020, (void *)cuMemGetAddressRange_v2, NULL},
    {"cuPointerGetAttribute", 4000, (void *)cuPointerGetAttribute, NULL},
    {"cuPointerGetAttributes", 7000, (void *)cuPointerGetAttributes, NULL},
    {"cuMemcpyPeer", 4000, (void *)cuMemcpyPeer, NULL},
    {"cuMemcpyPeerAsync", 4000, (void *)cuMemcpyPeerAsync, NULL},
    {"cuCtxEnablePeerAccess", 4000, (void *)cuCtxEnablePeerAccess, NULL},
    {"cuCtxDisablePeerAccess", 4000, (void *)cuCtxDisablePeerAccess, NULL},
    {"cuMemcpy", 4000, (void *)cuMemcpy, (void *)cuMemcpy_ptds},
    {"cuMemcpyAsync", 4000, (void *)cuMemcpyAsync, (void *)cuMemcpyAsync_ptsz},
    {"cuMemcpyHtoD", 3020, (void *)cuMemcpyHtoD_v2, (void *)cuMemcpyHtoD_v2_ptds},
    {"cuMemcpyDtoH", 3020, (void *)cuMemcpyDtoH_v2, (void *)cuMemcpyDtoH_v2_ptds},
    {"cuMemcpyDtoD", 3020, (void *)cuMemcpyDtoD_v2, (void *)cuMemcpyDtoD_v2_ptds},
    {"cuMemcpyHtoDAsync", 3020, (void *)cuMemcpyHtoDAsync_v2, (void *)cuMemcpyHtoDAsync_v2_ptsz},
    {"cuMemcpyDtoHAsync", 3020, (void *)cuMemcpyDtoHAsync_v2, (void *)cuMemcpyDtoHAsync_v2_ptsz},
    {"cuMemcpyDtoDAsync", 3020, (void *)cuMemcpyDtoDAsync_v2, (void *)cuMemcpyDtoDAsync_v2_ptsz},
    {"cuMemcpy2D", 3020, (void *)cuMemcpy2D_v2, (void *)cuMemcpy2D_v2_ptds},
    {"cuMemcpy2DAsync", 3020, (void *)cuMemcpy2DAsync_v2, (void *)cuMemcpy2DAsync_v2_ptsz},
    {"cuMemsetD8", 3020, (void *)cuMemsetD8_v2, (void *)cuMemsetD8_v2_ptds},
    {"cuMemsetD16", 3020, (void *)cuMemsetD16_v2, (void *)cuMemsetD16_v2_ptds},
    {"cuMemsetD32", 3020, (void *)cuMemsetD32_v2, (void *)cuMemsetD32_v2_ptds},
    {"cuMemsetD8Async", 3020, (void *)cuMemsetD8Async, (void *)cuMemsetD8Async_ptsz},
    {"cuMemsetD16Async", 3020, (void *)cuMemsetD16Async, (void *)cuMemsetD16Async_ptsz},
    {"cuMemsetD32Async", 3020, (void *)cuMemsetD32Async, (void *)cuMemsetD32Async_ptsz},
    {"cuStreamCreate", 2000, (void *)cuStreamCreate, NULL},
    {"cuStreamCreateWithPriority", 5050, (void *)cuStreamCreateWithPriority, NULL},
    {"cuStreamDestroy", 4000, (void *)cuStreamDestroy_v2, NULL},
    {"cuStreamSynchronize", 2000, (void *)cuStreamSynchronize, (void *)cuStreamSynchronize_ptsz},
    {"cuStreamQuery", 2000, (void *)cuStreamQuery, (void *)cuStreamQuery_ptsz},
    {"cuStreamWaitEvent", 3020, (void *)cuStreamWaitEvent, (void *)cuStreamWaitEvent_ptsz},
    {"cuStreamGetPriority", 5050, (void *)cuStreamGetPriority, (void *)cuStreamGetPriority_ptsz},
    {"cuStreamGetFlags", 5050, (void *)cuStreamGetFlags, (void *)cuStreamGetFlags_ptsz},
    {"cuStreamGetCtx", 9020, (void *)cuStreamGetCtx, (void *)cuStreamGetCtx_ptsz},
    {"cuStreamGetId", 12000, (void *)cuStreamGetId, (void *)cuStreamGetId_ptsz},
    {"cuStreamBeginCapture", 10010, (void *)cuStreamBeginCapture_v2, (void *)cuStreamBeginCapture_v2_ptsz},
    {"cuStreamEndCapture", 10000, (void *)cuStreamEndCapture, (void *)cuStreamEndCapture_ptsz},
    {"cuStreamIsCapturing", 10000, (void *)cuStreamIsCapturing, (void *)cuStreamIsCapturing_ptsz},
    {"cuStreamGetCaptureInfo", 11030, (void *)cuStreamGetCaptureInfo_v2, (void *)cuStreamGetCaptureInfo_v2_ptsz},
    {"cuStreamGetCaptureInfo", 12030, (void *)cuStreamGetCaptureInfo_v3, (void *)cuStreamGetCaptureInfo_v3_ptsz},
    {"cuThreadExchangeStreamCaptureMode", 10010, (void *)cuThreadExchangeStreamCaptureMode, NULL},
    {"cuLaunchHostFunc", 10000, (void *)cuLaunchHostFunc, (void *)cuLaunchHostFunc_ptsz},
    {"cuEventCreate", 2000, (void *)cuEventCreate, NULL},
    {"cuEventDestroy", 4000, (void *)cuEventDestroy_v2, NULL},
    {"cuEventRecord", 2000, (void *)cuEventRecord, (void *)cuEventRecord_ptsz},
    {"cuEventRecordWithFlags", 11010, (void *)cuEventRecordWithFlags, (void *)cuEventRecordWithFlags_ptsz},
    {"cuEventQuery", 2000, (void *)cuEventQuery, NULL},
    {"cuEventSynchronize", 2000, (void *)cuEventSynchronize, NULL},
    {"cuEventElapsedTime", 2000, (void *)cuEventElapsedTime, NULL},
    {"cuEventElapsedTime", 12080, (void *)cuEventElapsedTime_v2, NULL},
    {"cuModuleLoad", 2000, (void *)cuModuleLoad, NULL},
    {"cuModuleLoadData", 2000, (void *)cuModuleLoadData, NULL},
    {"cuModuleLoadDataEx", 2010, (void *)cuModuleLoadDataEx, NULL},
    {"cuModuleUnload", 2000, (void *)cuModuleUnload, NULL},
    {"cuModuleGetFunction", 2000, (void *)cuModuleGetFunction, NULL},
    {"cuModuleGetGlobal", 3020, (void *)cuModuleGetGlobal_v2, NULL},
    {"cuFuncGetParamInfo", 12040, (void *)cuFuncGetParamInfo, NULL},
    {"cuLaunchKernel", 4000, (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz},
    {"cuLaunchKernelEx", 11060, (void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz},
    {"cuLinkCreate", 5050, (void *)cuLinkCreate, NULL},
    {"cuLinkCreate", 6050, (void *)cuLinkCreate_v2, NULL},
    {"cuLinkAddData", 5050, (void *)cuLinkAddData, NULL},
    {"cuLinkAddData", 6050, (void *)cuLinkAddData_v2, NULL},
    {"cuLinkAddFile", 5050, (void *)cuLinkAddFile, NULL},
    {"cuLinkAddFile", 6050, (void *)cuLinkAddFile_v2, NULL},
    {"cuLinkComplete", 5050, (void *)cuLinkComplete, NULL},
    {"cuLinkDestroy", 5050, (void *)cuLinkDestroy, NULL},
    {"cuLibraryLoadData", 12000, (void *)cuLibraryLoadData, NULL},
    {"cuLibraryLoadFromFile", 12000, (void *)cuLibraryLoadFromFile, NULL},
    {"cuLibraryUnload", 12000, (void *)cuLibraryUnload, NULL},
    {"cuLibraryGetKernel", 12000, (void *)cuLibraryGetKernel, NULL},
    {"cuLibraryGetModule", 12000, (void *)cuLibraryGetModule, NULL},
    {"cuLibraryGetGlobal", 12000, (void *)cuLibraryGetGlobal, NULL},
    {"cuKernelGetFunction", 12000, (void *)cuKernelGetFunction, NULL},
    {"cuKernelGetLibrary", 12050, (void *)cuKernelGetLibrary, NULL},
    {"cuKernelGetName", 12030, (void *)cuKernelGetName, NULL},
    {"cuKernelGetParamInfo", 12040, (void *)cuKernelGetParamInfo, NULL},
    {"cuKernelGetAttribute", 12000, (void *)cuKernelGetAttribute, NULL},
    {"cuKernelSetAttribute", 12000, (void *)cuKernelSetAttribute, NULL},
    {"cuKernelSetCacheConfig", 12000, (void *)cuKernelSetCacheConfig, NULL},
    {"cuFuncGetAttribute", 2020, (void *)cuFuncGetAttribute, NULL},
    {"cuFuncSetAttribute", 9000, (void *)cuFuncSetAttribute, NULL},
    {"cuFuncSetCacheConfig", 3000, (void *)cuFuncSetCacheConfig, NULL},
    {"cuFuncGetName", 12030, (void *)cuFuncGetName, NULL},
    {"cuFuncGetModule", 11000, (void *)cuFuncGetModule, NULL},
    {"cuFuncIsLoaded", 12040, (void *)cuFuncIsLoaded, NULL},
    {"cuFuncLoad", 12040, (void *)cuFuncLoad, NULL},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
     (void *)cuOccupancyMaxActiveBlocksPerMultiprocessor, NULL},
    {"cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", 7000,
     (void *)cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, NULL},
    {"cuOccupancyMaxPotentialBlockSize", 6050, (void *)cuOccupancyMaxPotentialBlockSize, NULL},
    {"cuOccupancyMaxPotentialBlockSizeWithFlags", 7000,
     (void *)cuOccupancyMaxPotentialBlockSizeWithFlags, NULL},
    {"cuOccupancyAvailableDynamicSMemPerBlock", 10020,
     (void *)cuOccupancyAvailableDynamicSMemPerBlock, NULL},
    {"cuGraphCreate", 10000, (void *)cuGraphCreate, NULL},
    {"cuGraphGetNodes", 10000, (void *)cuGraphGetNodes, NULL},
    {"cuGraphInstantiateWithFlags", 11040, (void *)cuGraphInstantiateWithFlags, NULL},
    {"cuGraphInstantiate", 12000, (void *)cuGraphInstantiateWithFlags, NULL},
    {"cuGraphInstantiateWithParams", 12000, (void *)cuGraphInstantiateWithParams,
     (void *)cuGraphInstantiateWithParams_ptsz},
    {"cuGraphLaunch", 10000, (void *)cuGraphLaunch, (void *)cuGraphLaunch_ptsz},
    {"cuGraphExecDestroy", 10000, (void *)cuGraphExecDestroy, NULL},
    {"cuGraphDestroy", 10000, (void *)cuGraphDestroy, NULL},
    {"cuGraphClone", 10000, (void *)cuGraphClone, NULL},
    {"cuGraphUpload", 11010, (void *)cuGraphUpload, NULL},
    {"cuGraphExecUpdate", 12000, (void *)cuGraphExecUpdate_v2, NULL},
    {"cuGraphNodeFindInClone", 10000, (void *)cuGraphNodeFindInClone, NULL},
    {"cuGraphDebugDotPrint", 11030, (void *)cuGraphDebugDotPrint, NULL},
    {"cuGraphGetRootNodes", 10000, (void *)cuGraphGetRootNodes, NULL},
    {"cuGraphGetEdges", 10000, (void *)cuGraphGetEdges, NULL},
    {"cuGraphGetEdges", 12030, (void *)cuGraphGetEdges_v2, NULL},
    {"cuGraphNodeGetDependencies", 10000, (void *)cuGraphNodeGetDependencies, NULL},
    {"cuGraphNodeGetDependencies", 12030, (void *)cuGraphNodeGetDependencies_v2, NULL},
    {"cuGraphNodeGetDependentNodes", 10000, (void *)cuGraphNodeGetDependentNodes, NULL},
    {"cuGraphNodeGetDependentNodes", 12030, (void *)cuGraphNodeGetDependentNodes_v2, NULL},
    {"cuGraphAddDependencies", 10000, (void *)cuGraphAddDependencies, NULL},
    {"cuGraphAddDependencies", 12030, (void *)cuGraphAddDependencies_v2, NULL},
    {"cuGraphRemoveDependencies", 10000, (void *)cuGraphRemoveDependencies, NULL},
    {"cuGraphRemoveDependencies", 12030, (void *)cuGraphRemoveDependencies_v2, NULL},
    {"cuGraphNodeGetType", 10000, (void *)cuGraphNodeGetType, NULL},
    {"cuGraphDestroyNode", 10000, (void *)cuGraphDestroyNode, NULL},
    {"cuGraphAddEmptyNode", 10000, (void *)cuGraphAddEmptyNode, NULL},
    {"cuGraphAddKernelNode", 12000, (void *)cuGraphAddKernelNode_v2, NULL},
    {"cuGraphKernelNodeGetParams", 12000, (void *)cuGraphKernelNodeGetParams_v2, NULL},
    {"cuGraphAddMemsetNode", 10000, (void *)cuGraphAddMemsetNode, NULL},
    {"cuGraphMemsetNodeGetParams", 10000, (void *)cuGraphMemsetNodeGetParams, NULL},
    {"cuGraphAddMemcpyNode", 10000, (void *)cuGraphAddMemcpyNode, NULL},
    {"cuGraphMemcpyNodeGetParams", 10000, (void *)cuGraphMemcpyNodeGetParams, NULL},
    {"cuGraphAddHostNode", 10000, (void *)cuGraphAddHostNode, NULL},
    {"cuGraphHostNodeGetParams", 10000, (void *)cuGraphHostNodeGetParams, NULL},
    {"cuGraphAddChildGraphNode", 10000, (void *)cuGraphAddChildGraphNode, NULL},
    {"cuGraphChildGraphNodeGetGraph", 10000, (void *)cuGraphChildGraphNodeGetGraph, NULL},
    {"cuGraphAddEventRecordNode", 11010, (void *)cuGraphAddEventRecordNode, NULL},
    {"cuGraphEventRecordNodeGetEvent", 11010, (void *)cuGraphEventRecordNodeGetEvent, NULL},
    {"cuGraphAddEventWaitNode", 11010, (void *)cuGraphAddEventWaitNode, NULL},
    {"cuGraphEventWaitNodeGetEvent", 11010, (void *)cuGraphEventWaitNodeGetEvent, NULL},
    {"cuGraphAddMemAllocNode", 11040, (void *)cuGraphAddMemAllocNode, NULL},
    {"cuGraphMemAllocNodeGetParams", 11040, (void *)cuGraphMemAllocNodeGetParams, NULL},
    {"cuGraphAddMemFreeNode", 11040, (void *)cuGraphAddMemFreeNode, NULL},
    {"cuGraphMemFreeNodeGetParams", 11040, (void *)cuGraphMemFreeNodeGetParams, NULL},
    {"cuGraphNodeGetParams", 13020, (void *)cuGraphNodeGetParams, NULL},
    {"cuGraphAddNode", 12020, (void *)cuGraphAddNode, NULL},
    {"cuGraphAddNode", 12030, (void *)cuGraphAddNode_v2, NULL},
    {"cuDeviceGetGraphMemAttribute", 11040, (void *)cuDeviceGetGraphMemAttribute, NULL},
    {"cuDeviceSetGraphMemAttribute", 11040, (void *)cuDeviceSetGraphMemAttribute, NULL},
    {"cuDeviceGraphMemTrim", 11040, (void *)cuDeviceGraphMemTrim, NULL},
    {"cuUserObjectCreate", 11030, (void *)cuUserObjectCreate, NULL},
    {"cuUserObjectRetain", 11030, (void *)cuUserObjectRetain, NULL},
    {"cuUserObjectRelease", 11030, (void *)cuUserObjectRelease, NULL},
    {"cuGraphRetainUserObject", 11030, (void *)cuGraphRetainUserObject, NULL},
    {"cuGraphReleaseUserObject", 11030, (void *)cuGraphReleaseUserObject, NULL},
    {"cuGraphConditionalHandleCreate", 12030, (void *)cuGraphConditionalHandleCreate, NULL},
    {"cuStreamBeginCaptureToGraph", 12030, (void *)cuStreamBeginCaptureToGraph, NULL},
    {"cuStreamUpdateCaptureDependencies", 11030, (void *)cuStreamUpdateCaptureDependencies, NULL},
    {"cuStreamUpdateCaptureDependencies", 12030, (void *)cuStreamUpdateCaptureDependencies_v2,
     NULL},
    {"cuArrayCreate", 3020, (void *)cuArrayCreate_v2, NULL},
    {"cuArray3DCreate", 3020, (void *)cuArray3DCreate_v2, NULL},
    {"cuMemGetMemPool", 13000, (void *)cuMemGetMemPool, NULL},
    {"cuMemPoolSetAccess", 11020, (void *)cuMemPoolSetAccess, NULL},
    {"cuMemPoolGetAccess", 11020, (void *)cuMemPoolGetAccess, NULL},
    {"cuGetExportTable", 3000, (void *)cuGetExportTable, NULL},
    {"cuGetProcAddress", 11030, (void *)cuGetProcAddress, NULL},
    {"cuGetProcAddress", 12000, (void *)cuGetProcAddress_v2, NULL},
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
    *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best->fn_ptds
               ? best->fn_ptds
               : best->fn;
    if (symbolStatus)
        *symbolStatus = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
