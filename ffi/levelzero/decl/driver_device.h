// Initialisation, drivers and devices.

ze_result_t zeInit(ze_init_flags_t flags);
ze_result_t zeDriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers);
ze_result_t zeDriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version);
ze_result_t zeDriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* pDriverProperties);
ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices);
ze_result_t zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* pDeviceProperties);
ze_result_t zeDeviceGetStatus(ze_device_handle_t hDevice);
ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t hDevice, ze_device_compute_properties_t* pComputeProperties);
ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_memory_properties_t* pMemProperties);
ze_result_t zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount, ze_command_queue_group_properties_t* pCommandQueueGroupProperties);
ze_result_t zeDeviceGetGlobalTimestamps(ze_device_handle_t hDevice, uint64_t* hostTimestamp, uint64_t* deviceTimestamp);
ze_result_t zeDeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice, ze_bool_t* value);
