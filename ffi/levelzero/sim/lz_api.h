/* Prototypes of the Level Zero entry points this driver exports (generated
 * from the definitions; used by lz_ddi.c to fill the DDI tables with
 * type-checked references). */
#ifndef ARZE_LZ_API_H
#define ARZE_LZ_API_H
#include "ze_abi.h"
ze_result_t zeCommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_command_queue_desc_t *desc, ze_command_queue_handle_t *phCommandQueue);
ze_result_t zeCommandQueueDestroy(ze_command_queue_handle_t hCommandQueue);
ze_result_t zeCommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue, uint64_t timeout);
ze_result_t zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue, uint32_t numCommandLists, ze_command_list_handle_t *phCommandLists, ze_fence_handle_t hFence);
ze_result_t zeCommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_command_list_desc_t *desc, ze_command_list_handle_t *phCommandList);
ze_result_t zeCommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_command_queue_desc_t *altdesc, ze_command_list_handle_t *phCommandList);
ze_result_t zeCommandListDestroy(ze_command_list_handle_t hCommandList);
ze_result_t zeCommandListClose(ze_command_list_handle_t hCommandList);
ze_result_t zeCommandListReset(ze_command_list_handle_t hCommandList);
ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void *dstptr, const void *srcptr, size_t size, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeCommandListAppendMemoryCopyRegion( ze_command_list_handle_t hCommandList, void *dstptr, const ze_copy_region_t *dstRegion, uint32_t dstPitch, uint32_t dstSlicePitch, const void *srcptr, const ze_copy_region_t *srcRegion, uint32_t srcPitch, uint32_t srcSlicePitch, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void *ptr, const void *pattern, size_t pattern_size, size_t size, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeCommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hCommandList, uint32_t numRanges, const size_t *pRangeSizes, const void **pRanges, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);
ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents, ze_event_handle_t *phEvents);
ze_result_t zeCommandListAppendEventReset(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);
ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList, ze_kernel_handle_t hKernel, const ze_group_count_t *pLaunchFuncArgs, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents);
ze_result_t zeInit(ze_init_flags_t flags);
ze_result_t zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers);
ze_result_t zeDriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t *version);
ze_result_t zeDriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t *props);
ze_result_t zeDriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t *pCount, void *pExtensionProperties);
ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount, ze_device_handle_t *phDevices);
ze_result_t zeDeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t *pCount, ze_device_handle_t *phSubdevices);
ze_result_t zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t *p);
ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t hDevice, ze_device_compute_properties_t *p);
ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t hDevice, ze_device_module_properties_t *p);
ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t *pCount, ze_device_memory_properties_t *pMem);
ze_result_t zeDeviceGetCommandQueueGroupProperties( ze_device_handle_t hDevice, uint32_t *pCount, ze_command_queue_group_properties_t *p);
ze_result_t zeDeviceGetStatus(ze_device_handle_t hDevice);
ze_result_t zeDeviceGetGlobalTimestamps(ze_device_handle_t hDevice, uint64_t *hostTimestamp, uint64_t *deviceTimestamp);
ze_result_t zeDeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeer, ze_bool_t *value);
ze_result_t zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t *desc, ze_context_handle_t *phContext);
ze_result_t zeContextDestroy(ze_context_handle_t hContext);
ze_result_t zeContextGetStatus(ze_context_handle_t hContext);
ze_result_t zeEventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t *desc, uint32_t numDevices, ze_device_handle_t *phDevices, ze_event_pool_handle_t *phEventPool);
ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t hEventPool);
ze_result_t zeEventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t *desc, ze_event_handle_t *phEvent);
ze_result_t zeEventDestroy(ze_event_handle_t hEvent);
ze_result_t zeEventHostSignal(ze_event_handle_t hEvent);
ze_result_t zeEventHostReset(ze_event_handle_t hEvent);
ze_result_t zeEventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout);
ze_result_t zeEventQueryStatus(ze_event_handle_t hEvent);
ze_result_t zeEventQueryKernelTimestamp(ze_event_handle_t hEvent, ze_kernel_timestamp_result_t *dst);
ze_result_t zeFenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t *desc, ze_fence_handle_t *phFence);
ze_result_t zeFenceDestroy(ze_fence_handle_t hFence);
ze_result_t zeFenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout);
ze_result_t zeFenceQueryStatus(ze_fence_handle_t hFence);
ze_result_t zeFenceReset(ze_fence_handle_t hFence);
ze_result_t zeMemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t *desc, size_t size, size_t alignment, ze_device_handle_t hDevice, void **pptr);
ze_result_t zeMemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t *desc, size_t size, size_t alignment, void **pptr);
ze_result_t zeMemAllocShared(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t *device_desc, const ze_host_mem_alloc_desc_t *host_desc, size_t size, size_t alignment, ze_device_handle_t hDevice, void **pptr);
ze_result_t zeMemFree(ze_context_handle_t hContext, void *ptr);
ze_result_t zeMemGetAllocProperties(ze_context_handle_t hContext, const void *ptr, ze_memory_allocation_properties_t *props, ze_device_handle_t *phDevice);
ze_result_t zeMemGetAddressRange(ze_context_handle_t hContext, const void *ptr, void **pBase, size_t *pSize);
ze_result_t zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_module_desc_t *desc, ze_module_handle_t *phModule, ze_module_build_log_handle_t *phBuildLog);
ze_result_t zeModuleDestroy(ze_module_handle_t hModule);
ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog);
ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t hModuleBuildLog, size_t *pSize, char *pBuildLog);
ze_result_t zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t *desc, ze_kernel_handle_t *phKernel);
ze_result_t zeKernelDestroy(ze_kernel_handle_t hKernel);
ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize, const void *pArgValue);
ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t x, uint32_t y, uint32_t z);
ze_result_t zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t *x, uint32_t *y, uint32_t *z);
ze_result_t zeKernelGetName(ze_kernel_handle_t hKernel, size_t *pSize, char *pName);
#endif
