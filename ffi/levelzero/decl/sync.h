// Events, event pools and fences.

ze_result_t zeEventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t* desc, uint32_t numDevices, ze_device_handle_t* phDevices, ze_event_pool_handle_t* phEventPool);
ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t hEventPool);
ze_result_t zeEventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t* desc, ze_event_handle_t* phEvent);
ze_result_t zeEventDestroy(ze_event_handle_t hEvent);
ze_result_t zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);
ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents, ze_event_handle_t* phEvents);
ze_result_t zeCommandListAppendEventReset(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);
ze_result_t zeEventHostSignal(ze_event_handle_t hEvent);
ze_result_t zeEventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout);
ze_result_t zeEventQueryStatus(ze_event_handle_t hEvent);
ze_result_t zeEventHostReset(ze_event_handle_t hEvent);
ze_result_t zeEventQueryKernelTimestamp(ze_event_handle_t hEvent, ze_kernel_timestamp_result_t* dstptr);
ze_result_t zeFenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t* desc, ze_fence_handle_t* phFence);
ze_result_t zeFenceDestroy(ze_fence_handle_t hFence);
ze_result_t zeFenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout);
ze_result_t zeFenceQueryStatus(ze_fence_handle_t hFence);
ze_result_t zeFenceReset(ze_fence_handle_t hFence);
