/* The DDI table getters the Level Zero loader asks every driver for.
 *
 * All 53 names the 1.8.12 loader looks up are exported.  Tried one by one:
 * without any of 46 of them (zetGetTracerExpProcAddrTable included), or
 * when one returns an error, the loader marks the driver bad and zeInit fails
 * with ZE_RESULT_ERROR_UNINITIALIZED; without one of the other 7 (the ze*Exp
 * tables and zetGetMetricGroupExp) zeInit deadlocks in the loader's driver
 * check.  Tables of what this driver implements get their slots filled; the
 * others stay as the loader passed them (zeroed: "not supported"). */
#include "lz_api.h"
#include "lz_internal.h"

static ze_result_t check(ze_api_version_t version, void *table) {
    if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (ZE_MAJOR_VERSION(version) != ZE_MAJOR_VERSION(ZE_API_VERSION_CURRENT)) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
    return ZE_RESULT_SUCCESS;
}

#define FILL(slot, fn) (((void **)table)[SLOT_##slot] = (void *)(fn))

ZE_APIEXPORT ze_result_t zeGetCommandListProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(COMMAND_LIST_Create, zeCommandListCreate);
    FILL(COMMAND_LIST_CreateImmediate, zeCommandListCreateImmediate);
    FILL(COMMAND_LIST_Destroy, zeCommandListDestroy);
    FILL(COMMAND_LIST_Close, zeCommandListClose);
    FILL(COMMAND_LIST_Reset, zeCommandListReset);
    FILL(COMMAND_LIST_AppendBarrier, zeCommandListAppendBarrier);
    FILL(COMMAND_LIST_AppendMemoryRangesBarrier, zeCommandListAppendMemoryRangesBarrier);
    FILL(COMMAND_LIST_AppendMemoryCopy, zeCommandListAppendMemoryCopy);
    FILL(COMMAND_LIST_AppendMemoryFill, zeCommandListAppendMemoryFill);
    FILL(COMMAND_LIST_AppendMemoryCopyRegion, zeCommandListAppendMemoryCopyRegion);
    FILL(COMMAND_LIST_AppendMemoryPrefetch, zeCommandListAppendMemoryPrefetch);
    FILL(COMMAND_LIST_AppendMemAdvise, zeCommandListAppendMemAdvise);
    FILL(COMMAND_LIST_AppendSignalEvent, zeCommandListAppendSignalEvent);
    FILL(COMMAND_LIST_AppendWaitOnEvents, zeCommandListAppendWaitOnEvents);
    FILL(COMMAND_LIST_AppendEventReset, zeCommandListAppendEventReset);
    FILL(COMMAND_LIST_AppendLaunchKernel, zeCommandListAppendLaunchKernel);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetCommandQueueProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(COMMAND_QUEUE_Create, zeCommandQueueCreate);
    FILL(COMMAND_QUEUE_Destroy, zeCommandQueueDestroy);
    FILL(COMMAND_QUEUE_ExecuteCommandLists, zeCommandQueueExecuteCommandLists);
    FILL(COMMAND_QUEUE_Synchronize, zeCommandQueueSynchronize);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetContextProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(CONTEXT_Create, zeContextCreate);
    FILL(CONTEXT_Destroy, zeContextDestroy);
    FILL(CONTEXT_GetStatus, zeContextGetStatus);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetDeviceExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetDeviceProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(DEVICE_Get, zeDeviceGet);
    FILL(DEVICE_GetSubDevices, zeDeviceGetSubDevices);
    FILL(DEVICE_GetProperties, zeDeviceGetProperties);
    FILL(DEVICE_GetComputeProperties, zeDeviceGetComputeProperties);
    FILL(DEVICE_GetModuleProperties, zeDeviceGetModuleProperties);
    FILL(DEVICE_GetCommandQueueGroupProperties, zeDeviceGetCommandQueueGroupProperties);
    FILL(DEVICE_GetMemoryProperties, zeDeviceGetMemoryProperties);
    FILL(DEVICE_GetStatus, zeDeviceGetStatus);
    FILL(DEVICE_GetGlobalTimestamps, zeDeviceGetGlobalTimestamps);
    FILL(DEVICE_CanAccessPeer, zeDeviceCanAccessPeer);
    FILL(DEVICE_GetMemoryAccessProperties, zeDeviceGetMemoryAccessProperties);
    FILL(DEVICE_GetCacheProperties, zeDeviceGetCacheProperties);
    FILL(DEVICE_GetImageProperties, zeDeviceGetImageProperties);
    FILL(DEVICE_GetExternalMemoryProperties, zeDeviceGetExternalMemoryProperties);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetDriverProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(DRIVER_Get, zeDriverGet);
    FILL(DRIVER_GetApiVersion, zeDriverGetApiVersion);
    FILL(DRIVER_GetProperties, zeDriverGetProperties);
    FILL(DRIVER_GetExtensionProperties, zeDriverGetExtensionProperties);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetEventExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetEventPoolProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(EVENT_POOL_Create, zeEventPoolCreate);
    FILL(EVENT_POOL_Destroy, zeEventPoolDestroy);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetEventProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(EVENT_Create, zeEventCreate);
    FILL(EVENT_Destroy, zeEventDestroy);
    FILL(EVENT_HostSignal, zeEventHostSignal);
    FILL(EVENT_HostSynchronize, zeEventHostSynchronize);
    FILL(EVENT_QueryStatus, zeEventQueryStatus);
    FILL(EVENT_HostReset, zeEventHostReset);
    FILL(EVENT_QueryKernelTimestamp, zeEventQueryKernelTimestamp);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetFabricEdgeExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetFabricVertexExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetFenceProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(FENCE_Create, zeFenceCreate);
    FILL(FENCE_Destroy, zeFenceDestroy);
    FILL(FENCE_HostSynchronize, zeFenceHostSynchronize);
    FILL(FENCE_QueryStatus, zeFenceQueryStatus);
    FILL(FENCE_Reset, zeFenceReset);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetGlobalProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(GLOBAL_Init, zeInit);
    /* A loader of API 1.10 or later has the slot; an older one's table ends before it. */
    if (version >= ZE_MAKE_VERSION(1, 10)) FILL(GLOBAL_InitDrivers, zeInitDrivers);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetImageExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetImageProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetKernelExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetKernelProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(KERNEL_Create, zeKernelCreate);
    FILL(KERNEL_Destroy, zeKernelDestroy);
    FILL(KERNEL_SetGroupSize, zeKernelSetGroupSize);
    FILL(KERNEL_SuggestGroupSize, zeKernelSuggestGroupSize);
    FILL(KERNEL_SetArgumentValue, zeKernelSetArgumentValue);
    FILL(KERNEL_SetIndirectAccess, zeKernelSetIndirectAccess);
    FILL(KERNEL_GetIndirectAccess, zeKernelGetIndirectAccess);
    FILL(KERNEL_GetProperties, zeKernelGetProperties);
    FILL(KERNEL_GetName, zeKernelGetName);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetMemProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(MEM_AllocShared, zeMemAllocShared);
    FILL(MEM_AllocDevice, zeMemAllocDevice);
    FILL(MEM_AllocHost, zeMemAllocHost);
    FILL(MEM_Free, zeMemFree);
    FILL(MEM_GetAllocProperties, zeMemGetAllocProperties);
    FILL(MEM_GetAddressRange, zeMemGetAddressRange);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetModuleBuildLogProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(MODULE_BUILD_LOG_Destroy, zeModuleBuildLogDestroy);
    FILL(MODULE_BUILD_LOG_GetString, zeModuleBuildLogGetString);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetModuleProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    if (r != ZE_RESULT_SUCCESS) return r;
    FILL(MODULE_Create, zeModuleCreate);
    FILL(MODULE_Destroy, zeModuleDestroy);
    FILL(MODULE_DynamicLink, zeModuleDynamicLink);
    FILL(MODULE_GetKernelNames, zeModuleGetKernelNames);
    FILL(MODULE_GetProperties, zeModuleGetProperties);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeGetPhysicalMemProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetSamplerProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zeGetVirtualMemProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetDeviceProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetDiagnosticsProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetDriverProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetEngineProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetFabricPortProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetFanProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetFirmwareProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetFrequencyProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetLedProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetMemoryProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetPerformanceFactorProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetPowerProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetPsuProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetRasProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetSchedulerProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetStandbyProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zesGetTemperatureProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetCommandListProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetContextProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetDebugProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetDeviceProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetKernelProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricGroupExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricGroupProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricQueryPoolProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricQueryProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetMetricStreamerProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetModuleProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}

ZE_APIEXPORT ze_result_t zetGetTracerExpProcAddrTable(ze_api_version_t version, void *table) {
    ze_result_t r = check(version, table);
    return r;
}
