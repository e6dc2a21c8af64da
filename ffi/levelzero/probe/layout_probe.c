/* Prints the sizes, offsets, enum values and DDI slot numbers the software
 * driver relies on.  Built twice by the tests: once against ze_abi.h and once
 * (-DARZE_PROBE_REAL) against the real <level_zero/ze_api.h> and ze_ddi.h;
 * the two outputs must be identical.  Not part of the driver. */
#include <stdio.h>

#ifdef ARZE_PROBE_REAL
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#define SLOT(table, field, name) (offsetof(table, field) / sizeof(void *))
#else
#include "../sim/ze_abi.h"
#define SLOT(table, field, name) ((size_t)(name))
#endif

#define SZ(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof %s.%s %zu\n", #t, #f, offsetof(t, f))
#define VAL(e) printf("value %s %lld\n", #e, (long long)(e))
#define SL(table, field, name) printf("slot %s.%s %zu\n", #table, #field, SLOT(table, field, name))

static void print_layouts(void) {
    SZ(ze_driver_properties_t); OFF(ze_driver_properties_t, driverVersion);
    SZ(ze_device_properties_t);
    OFF(ze_device_properties_t, type); OFF(ze_device_properties_t, flags);
    OFF(ze_device_properties_t, maxMemAllocSize); OFF(ze_device_properties_t, numSlices);
    OFF(ze_device_properties_t, timerResolution); OFF(ze_device_properties_t, kernelTimestampValidBits);
    OFF(ze_device_properties_t, uuid); OFF(ze_device_properties_t, name);
    SZ(ze_device_memory_properties_t); OFF(ze_device_memory_properties_t, totalSize);
    OFF(ze_device_memory_properties_t, name);
    SZ(ze_device_compute_properties_t); OFF(ze_device_compute_properties_t, maxSharedLocalMemory);
    OFF(ze_device_compute_properties_t, subGroupSizes);
    SZ(ze_device_module_properties_t); OFF(ze_device_module_properties_t, spirvVersionSupported);
    OFF(ze_device_module_properties_t, fp64flags); OFF(ze_device_module_properties_t, printfBufferSize);
    OFF(ze_device_module_properties_t, nativeKernelSupported);
    VAL(ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES);
    SZ(ze_device_memory_access_properties_t);
    OFF(ze_device_memory_access_properties_t, hostAllocCapabilities);
    OFF(ze_device_memory_access_properties_t, sharedSystemAllocCapabilities);
    SZ(ze_device_cache_properties_t); OFF(ze_device_cache_properties_t, cacheSize);
    SZ(ze_device_image_properties_t); OFF(ze_device_image_properties_t, maxImageBufferSize);
    OFF(ze_device_image_properties_t, maxWriteImageArgs);
    SZ(ze_device_external_memory_properties_t);
    OFF(ze_device_external_memory_properties_t, imageExportTypes);
    SZ(ze_module_properties_t); OFF(ze_module_properties_t, flags);
    SZ(ze_driver_extension_properties_t); OFF(ze_driver_extension_properties_t, version);
    SZ(ze_command_queue_group_properties_t);
    OFF(ze_command_queue_group_properties_t, maxMemoryFillPatternSize);
    OFF(ze_command_queue_group_properties_t, numQueues);
    SZ(ze_context_desc_t); OFF(ze_context_desc_t, flags);
    SZ(ze_device_mem_alloc_desc_t); OFF(ze_device_mem_alloc_desc_t, ordinal);
    SZ(ze_host_mem_alloc_desc_t);
    SZ(ze_memory_allocation_properties_t); OFF(ze_memory_allocation_properties_t, id);
    OFF(ze_memory_allocation_properties_t, pageSize);
    SZ(ze_command_queue_desc_t); OFF(ze_command_queue_desc_t, ordinal);
    OFF(ze_command_queue_desc_t, mode); OFF(ze_command_queue_desc_t, priority);
    SZ(ze_command_list_desc_t); OFF(ze_command_list_desc_t, flags);
    SZ(ze_copy_region_t); OFF(ze_copy_region_t, depth);
    SZ(ze_event_pool_desc_t); OFF(ze_event_pool_desc_t, count);
    SZ(ze_event_desc_t); OFF(ze_event_desc_t, index); OFF(ze_event_desc_t, wait);
    SZ(ze_kernel_timestamp_result_t); OFF(ze_kernel_timestamp_result_t, context);
    SZ(ze_fence_desc_t);
    SZ(ze_module_constants_t);
    SZ(ze_module_desc_t); OFF(ze_module_desc_t, format); OFF(ze_module_desc_t, inputSize);
    OFF(ze_module_desc_t, pInputModule); OFF(ze_module_desc_t, pBuildFlags);
    OFF(ze_module_desc_t, pConstants);
    SZ(ze_module_program_exp_desc_t); OFF(ze_module_program_exp_desc_t, count);
    OFF(ze_module_program_exp_desc_t, inputSizes); OFF(ze_module_program_exp_desc_t, pInputModules);
    OFF(ze_module_program_exp_desc_t, pBuildFlags); OFF(ze_module_program_exp_desc_t, pConstants);
    SZ(ze_kernel_desc_t); OFF(ze_kernel_desc_t, pKernelName);
    SZ(ze_group_count_t);
}

static void print_values(void) {
    VAL(ZE_API_VERSION_CURRENT);
    VAL(ZE_RESULT_ERROR_DEVICE_LOST); VAL(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    VAL(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY); VAL(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    VAL(ZE_RESULT_ERROR_UNINITIALIZED); VAL(ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
    VAL(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE); VAL(ZE_RESULT_ERROR_INVALID_ARGUMENT);
    VAL(ZE_RESULT_ERROR_INVALID_NULL_HANDLE); VAL(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
    VAL(ZE_RESULT_ERROR_INVALID_NULL_POINTER); VAL(ZE_RESULT_ERROR_INVALID_SIZE);
    VAL(ZE_RESULT_ERROR_UNSUPPORTED_SIZE); VAL(ZE_RESULT_ERROR_INVALID_ENUMERATION);
    VAL(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY); VAL(ZE_RESULT_ERROR_INVALID_KERNEL_NAME);
    VAL(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION);
    VAL(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION);
    VAL(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX);
    VAL(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE);
    VAL(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE); VAL(ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
    VAL(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT); VAL(ZE_RESULT_ERROR_UNKNOWN);
    VAL(ZE_RESULT_ERROR_NOT_AVAILABLE); VAL(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
    VAL(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
    VAL(ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES); VAL(ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES);
    VAL(ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES);
    VAL(ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES);
    VAL(ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES); VAL(ZE_STRUCTURE_TYPE_CONTEXT_DESC);
    VAL(ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC); VAL(ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC);
    VAL(ZE_STRUCTURE_TYPE_EVENT_POOL_DESC); VAL(ZE_STRUCTURE_TYPE_EVENT_DESC);
    VAL(ZE_STRUCTURE_TYPE_FENCE_DESC); VAL(ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC);
    VAL(ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC);
    VAL(ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES); VAL(ZE_STRUCTURE_TYPE_MODULE_DESC);
    VAL(ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC); VAL(ZE_MODULE_PROGRAM_EXP_VERSION_1_0);
    VAL(ZE_STRUCTURE_TYPE_KERNEL_DESC);
    VAL(ZE_DEVICE_TYPE_GPU);
    VAL(ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE); VAL(ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY);
    VAL(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS); VAL(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
    VAL(ZE_EVENT_POOL_FLAG_HOST_VISIBLE); VAL(ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP);
    VAL(ZE_FENCE_FLAG_SIGNALED);
    VAL(ZE_MEMORY_TYPE_HOST); VAL(ZE_MEMORY_TYPE_DEVICE); VAL(ZE_MEMORY_TYPE_SHARED);
    VAL(ZE_MODULE_FORMAT_IL_SPIRV); VAL(ZE_MODULE_FORMAT_NATIVE);
}

static void print_slots(void) {
    SL(ze_global_dditable_t, pfnInit, SLOT_GLOBAL_Init);
    SL(ze_driver_dditable_t, pfnGet, SLOT_DRIVER_Get);
    SL(ze_driver_dditable_t, pfnGetApiVersion, SLOT_DRIVER_GetApiVersion);
    SL(ze_driver_dditable_t, pfnGetProperties, SLOT_DRIVER_GetProperties);
    SL(ze_driver_dditable_t, pfnGetIpcProperties, SLOT_DRIVER_GetIpcProperties);
    SL(ze_driver_dditable_t, pfnGetExtensionProperties, SLOT_DRIVER_GetExtensionProperties);
    SL(ze_driver_dditable_t, pfnGetExtensionFunctionAddress,
       SLOT_DRIVER_GetExtensionFunctionAddress);
    SL(ze_device_dditable_t, pfnGet, SLOT_DEVICE_Get);
    SL(ze_device_dditable_t, pfnGetSubDevices, SLOT_DEVICE_GetSubDevices);
    SL(ze_device_dditable_t, pfnGetProperties, SLOT_DEVICE_GetProperties);
    SL(ze_device_dditable_t, pfnGetComputeProperties, SLOT_DEVICE_GetComputeProperties);
    SL(ze_device_dditable_t, pfnGetModuleProperties, SLOT_DEVICE_GetModuleProperties);
    SL(ze_device_dditable_t, pfnGetCommandQueueGroupProperties,
       SLOT_DEVICE_GetCommandQueueGroupProperties);
    SL(ze_device_dditable_t, pfnGetMemoryProperties, SLOT_DEVICE_GetMemoryProperties);
    SL(ze_device_dditable_t, pfnGetMemoryAccessProperties, SLOT_DEVICE_GetMemoryAccessProperties);
    SL(ze_device_dditable_t, pfnGetCacheProperties, SLOT_DEVICE_GetCacheProperties);
    SL(ze_device_dditable_t, pfnGetImageProperties, SLOT_DEVICE_GetImageProperties);
    SL(ze_device_dditable_t, pfnGetExternalMemoryProperties,
       SLOT_DEVICE_GetExternalMemoryProperties);
    SL(ze_device_dditable_t, pfnGetP2PProperties, SLOT_DEVICE_GetP2PProperties);
    SL(ze_device_dditable_t, pfnCanAccessPeer, SLOT_DEVICE_CanAccessPeer);
    SL(ze_device_dditable_t, pfnGetStatus, SLOT_DEVICE_GetStatus);
    SL(ze_device_dditable_t, pfnGetGlobalTimestamps, SLOT_DEVICE_GetGlobalTimestamps);
    SL(ze_context_dditable_t, pfnCreate, SLOT_CONTEXT_Create);
    SL(ze_context_dditable_t, pfnDestroy, SLOT_CONTEXT_Destroy);
    SL(ze_context_dditable_t, pfnGetStatus, SLOT_CONTEXT_GetStatus);
    SL(ze_command_queue_dditable_t, pfnCreate, SLOT_COMMAND_QUEUE_Create);
    SL(ze_command_queue_dditable_t, pfnDestroy, SLOT_COMMAND_QUEUE_Destroy);
    SL(ze_command_queue_dditable_t, pfnExecuteCommandLists, SLOT_COMMAND_QUEUE_ExecuteCommandLists);
    SL(ze_command_queue_dditable_t, pfnSynchronize, SLOT_COMMAND_QUEUE_Synchronize);
    SL(ze_command_list_dditable_t, pfnCreate, SLOT_COMMAND_LIST_Create);
    SL(ze_command_list_dditable_t, pfnCreateImmediate, SLOT_COMMAND_LIST_CreateImmediate);
    SL(ze_command_list_dditable_t, pfnDestroy, SLOT_COMMAND_LIST_Destroy);
    SL(ze_command_list_dditable_t, pfnClose, SLOT_COMMAND_LIST_Close);
    SL(ze_command_list_dditable_t, pfnReset, SLOT_COMMAND_LIST_Reset);
    SL(ze_command_list_dditable_t, pfnAppendWriteGlobalTimestamp,
       SLOT_COMMAND_LIST_AppendWriteGlobalTimestamp);
    SL(ze_command_list_dditable_t, pfnAppendBarrier, SLOT_COMMAND_LIST_AppendBarrier);
    SL(ze_command_list_dditable_t, pfnAppendMemoryRangesBarrier,
       SLOT_COMMAND_LIST_AppendMemoryRangesBarrier);
    SL(ze_command_list_dditable_t, pfnAppendMemoryCopy, SLOT_COMMAND_LIST_AppendMemoryCopy);
    SL(ze_command_list_dditable_t, pfnAppendMemoryFill, SLOT_COMMAND_LIST_AppendMemoryFill);
    SL(ze_command_list_dditable_t, pfnAppendMemoryCopyRegion,
       SLOT_COMMAND_LIST_AppendMemoryCopyRegion);
    SL(ze_command_list_dditable_t, pfnAppendSignalEvent, SLOT_COMMAND_LIST_AppendSignalEvent);
    SL(ze_command_list_dditable_t, pfnAppendWaitOnEvents, SLOT_COMMAND_LIST_AppendWaitOnEvents);
    SL(ze_command_list_dditable_t, pfnAppendEventReset, SLOT_COMMAND_LIST_AppendEventReset);
    SL(ze_command_list_dditable_t, pfnAppendMemoryPrefetch, SLOT_COMMAND_LIST_AppendMemoryPrefetch);
    SL(ze_command_list_dditable_t, pfnAppendMemAdvise, SLOT_COMMAND_LIST_AppendMemAdvise);
    SL(ze_command_list_dditable_t, pfnAppendLaunchKernel, SLOT_COMMAND_LIST_AppendLaunchKernel);
    SL(ze_fence_dditable_t, pfnCreate, SLOT_FENCE_Create);
    SL(ze_fence_dditable_t, pfnDestroy, SLOT_FENCE_Destroy);
    SL(ze_fence_dditable_t, pfnHostSynchronize, SLOT_FENCE_HostSynchronize);
    SL(ze_fence_dditable_t, pfnQueryStatus, SLOT_FENCE_QueryStatus);
    SL(ze_fence_dditable_t, pfnReset, SLOT_FENCE_Reset);
    SL(ze_event_pool_dditable_t, pfnCreate, SLOT_EVENT_POOL_Create);
    SL(ze_event_pool_dditable_t, pfnDestroy, SLOT_EVENT_POOL_Destroy);
    SL(ze_event_dditable_t, pfnCreate, SLOT_EVENT_Create);
    SL(ze_event_dditable_t, pfnDestroy, SLOT_EVENT_Destroy);
    SL(ze_event_dditable_t, pfnHostSignal, SLOT_EVENT_HostSignal);
    SL(ze_event_dditable_t, pfnHostSynchronize, SLOT_EVENT_HostSynchronize);
    SL(ze_event_dditable_t, pfnQueryStatus, SLOT_EVENT_QueryStatus);
    SL(ze_event_dditable_t, pfnHostReset, SLOT_EVENT_HostReset);
    SL(ze_event_dditable_t, pfnQueryKernelTimestamp, SLOT_EVENT_QueryKernelTimestamp);
    SL(ze_module_dditable_t, pfnCreate, SLOT_MODULE_Create);
    SL(ze_module_dditable_t, pfnDestroy, SLOT_MODULE_Destroy);
    SL(ze_module_dditable_t, pfnDynamicLink, SLOT_MODULE_DynamicLink);
    SL(ze_module_dditable_t, pfnGetKernelNames, SLOT_MODULE_GetKernelNames);
    SL(ze_module_dditable_t, pfnGetProperties, SLOT_MODULE_GetProperties);
    SL(ze_module_build_log_dditable_t, pfnDestroy, SLOT_MODULE_BUILD_LOG_Destroy);
    SL(ze_module_build_log_dditable_t, pfnGetString, SLOT_MODULE_BUILD_LOG_GetString);
    SL(ze_kernel_dditable_t, pfnCreate, SLOT_KERNEL_Create);
    SL(ze_kernel_dditable_t, pfnDestroy, SLOT_KERNEL_Destroy);
    SL(ze_kernel_dditable_t, pfnSetGroupSize, SLOT_KERNEL_SetGroupSize);
    SL(ze_kernel_dditable_t, pfnSuggestGroupSize, SLOT_KERNEL_SuggestGroupSize);
    SL(ze_kernel_dditable_t, pfnSetArgumentValue, SLOT_KERNEL_SetArgumentValue);
    SL(ze_kernel_dditable_t, pfnSetIndirectAccess, SLOT_KERNEL_SetIndirectAccess);
    SL(ze_kernel_dditable_t, pfnGetIndirectAccess, SLOT_KERNEL_GetIndirectAccess);
    SL(ze_kernel_dditable_t, pfnGetName, SLOT_KERNEL_GetName);
    SL(ze_mem_dditable_t, pfnAllocShared, SLOT_MEM_AllocShared);
    SL(ze_mem_dditable_t, pfnAllocDevice, SLOT_MEM_AllocDevice);
    SL(ze_mem_dditable_t, pfnAllocHost, SLOT_MEM_AllocHost);
    SL(ze_mem_dditable_t, pfnFree, SLOT_MEM_Free);
    SL(ze_mem_dditable_t, pfnGetAllocProperties, SLOT_MEM_GetAllocProperties);
    SL(ze_mem_dditable_t, pfnGetAddressRange, SLOT_MEM_GetAddressRange);
}

int main(void) {
    print_layouts();
    print_values();
    print_slots();
    return 0;
}
