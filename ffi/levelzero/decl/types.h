// Level Zero 1.4 types used by aruntime (Debian libze-dev 1.8.x ships ze_api.h at API 1.4).
// cffi cdef syntax: no macros, array bounds written out.  Layouts are checked
// against the real ze_api.h by tests/ffi/test_levelzero_decl.py, and against the
// sim's ffi/levelzero/sim/ze_abi.h by tests/ffi/test_abi_headers.py.

typedef struct _ze_driver_handle_t *ze_driver_handle_t;
typedef struct _ze_device_handle_t *ze_device_handle_t;
typedef struct _ze_context_handle_t *ze_context_handle_t;
typedef struct _ze_command_queue_handle_t *ze_command_queue_handle_t;
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_fence_handle_t *ze_fence_handle_t;
typedef struct _ze_event_pool_handle_t *ze_event_pool_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;
typedef struct _ze_module_handle_t *ze_module_handle_t;
typedef struct _ze_module_build_log_handle_t *ze_module_build_log_handle_t;
typedef struct _ze_kernel_handle_t *ze_kernel_handle_t;

typedef enum _ze_result_t
{
    ZE_RESULT_SUCCESS = 0,
    ZE_RESULT_NOT_READY = 1,
    ZE_RESULT_ERROR_DEVICE_LOST = 0x70000001,
    ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY = 0x70000002,
    ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY = 0x70000003,
    ZE_RESULT_ERROR_MODULE_BUILD_FAILURE = 0x70000004,
    ZE_RESULT_ERROR_MODULE_LINK_FAILURE = 0x70000005,
    ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET = 0x70000006,
    ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE = 0x70000007,
    ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX = 0x7ff00001,
    ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE = 0x7ff00002,
    ZE_RESULT_EXP_ERROR_REMOTE_DEVICE = 0x7ff00003,
    ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS = 0x70010000,
    ZE_RESULT_ERROR_NOT_AVAILABLE = 0x70010001,
    ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE = 0x70020000,
    ZE_RESULT_WARNING_DROPPED_DATA = 0x70020001,
    ZE_RESULT_ERROR_UNINITIALIZED = 0x78000001,
    ZE_RESULT_ERROR_UNSUPPORTED_VERSION = 0x78000002,
    ZE_RESULT_ERROR_UNSUPPORTED_FEATURE = 0x78000003,
    ZE_RESULT_ERROR_INVALID_ARGUMENT = 0x78000004,
    ZE_RESULT_ERROR_INVALID_NULL_HANDLE = 0x78000005,
    ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE = 0x78000006,
    ZE_RESULT_ERROR_INVALID_NULL_POINTER = 0x78000007,
    ZE_RESULT_ERROR_INVALID_SIZE = 0x78000008,
    ZE_RESULT_ERROR_UNSUPPORTED_SIZE = 0x78000009,
    ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT = 0x7800000a,
    ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT = 0x7800000b,
    ZE_RESULT_ERROR_INVALID_ENUMERATION = 0x7800000c,
    ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION = 0x7800000d,
    ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT = 0x7800000e,
    ZE_RESULT_ERROR_INVALID_NATIVE_BINARY = 0x7800000f,
    ZE_RESULT_ERROR_INVALID_GLOBAL_NAME = 0x78000010,
    ZE_RESULT_ERROR_INVALID_KERNEL_NAME = 0x78000011,
    ZE_RESULT_ERROR_INVALID_FUNCTION_NAME = 0x78000012,
    ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION = 0x78000013,
    ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION = 0x78000014,
    ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX = 0x78000015,
    ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE = 0x78000016,
    ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE = 0x78000017,
    ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED = 0x78000018,
    ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE = 0x78000019,
    ZE_RESULT_ERROR_OVERLAPPING_REGIONS = 0x7800001a,
    ZE_RESULT_WARNING_ACTION_REQUIRED = 0x7800001b,
    ZE_RESULT_ERROR_UNKNOWN = 0x7ffffffe,
    ZE_RESULT_FORCE_UINT32 = 0x7fffffff
} ze_result_t;

typedef enum _ze_structure_type_t
{
    ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES = 0x1,
    ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3,
    ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 = 0x00020006,
    ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES = 0x4,
    ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES = 0x5,
    ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES = 0x6,
    ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES = 0x7,
    ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES = 0x8,
    ZE_STRUCTURE_TYPE_DEVICE_CACHE_PROPERTIES = 0x9,
    ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES = 0xa,
    ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES = 0xc,
    ZE_STRUCTURE_TYPE_CONTEXT_DESC = 0xd,
    ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC = 0xe,
    ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC = 0xf,
    ZE_STRUCTURE_TYPE_EVENT_POOL_DESC = 0x10,
    ZE_STRUCTURE_TYPE_EVENT_DESC = 0x11,
    ZE_STRUCTURE_TYPE_FENCE_DESC = 0x12,
    ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC = 0x15,
    ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC = 0x16,
    ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES = 0x17,
    ZE_STRUCTURE_TYPE_MODULE_DESC = 0x1b,
    ZE_STRUCTURE_TYPE_MODULE_PROPERTIES = 0x1c,
    ZE_STRUCTURE_TYPE_KERNEL_DESC = 0x1d,
    ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES = 0x1e,
    ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC = 0x00020002,
    ZE_STRUCTURE_TYPE_FORCE_UINT32 = 0x7fffffff
} ze_structure_type_t;

typedef enum _ze_api_version_t
{
    ZE_API_VERSION_1_0 = 0x10000,
    ZE_API_VERSION_1_1 = 0x10001,
    ZE_API_VERSION_1_2 = 0x10002,
    ZE_API_VERSION_1_3 = 0x10003,
    ZE_API_VERSION_1_4 = 0x10004,
    ZE_API_VERSION_CURRENT = 0x10004,
    ZE_API_VERSION_FORCE_UINT32 = 0x7fffffff
} ze_api_version_t;

typedef uint8_t ze_bool_t;
typedef uint32_t ze_init_flags_t;
typedef enum _ze_init_flag_t
{
    ZE_INIT_FLAG_GPU_ONLY = 1,
    ZE_INIT_FLAG_VPU_ONLY = 2,
    ZE_INIT_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_init_flag_t;

typedef enum _ze_device_type_t
{
    ZE_DEVICE_TYPE_GPU = 1,
    ZE_DEVICE_TYPE_CPU = 2,
    ZE_DEVICE_TYPE_FPGA = 3,
    ZE_DEVICE_TYPE_MCA = 4,
    ZE_DEVICE_TYPE_VPU = 5,
    ZE_DEVICE_TYPE_FORCE_UINT32 = 0x7fffffff
} ze_device_type_t;

typedef uint32_t ze_device_property_flags_t;
typedef uint32_t ze_command_queue_group_property_flags_t;
typedef enum _ze_command_queue_group_property_flag_t
{
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE = 1,
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY = 2,
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS = 4,
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS = 8,
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_command_queue_group_property_flag_t;
typedef uint32_t ze_device_memory_property_flags_t;
typedef uint32_t ze_context_flags_t;
typedef uint32_t ze_command_queue_flags_t;

typedef enum _ze_command_queue_mode_t
{
    ZE_COMMAND_QUEUE_MODE_DEFAULT = 0,
    ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS = 1,
    ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS = 2,
    ZE_COMMAND_QUEUE_MODE_FORCE_UINT32 = 0x7fffffff
} ze_command_queue_mode_t;

typedef enum _ze_command_queue_priority_t
{
    ZE_COMMAND_QUEUE_PRIORITY_NORMAL = 0,
    ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW = 1,
    ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH = 2,
    ZE_COMMAND_QUEUE_PRIORITY_FORCE_UINT32 = 0x7fffffff
} ze_command_queue_priority_t;

typedef uint32_t ze_command_list_flags_t;
typedef uint32_t ze_event_pool_flags_t;
typedef enum _ze_event_pool_flag_t
{
    ZE_EVENT_POOL_FLAG_HOST_VISIBLE = 1,
    ZE_EVENT_POOL_FLAG_IPC = 2,
    ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP = 4,
    ZE_EVENT_POOL_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_event_pool_flag_t;
typedef uint32_t ze_event_scope_flags_t;
typedef enum _ze_event_scope_flag_t
{
    ZE_EVENT_SCOPE_FLAG_SUBDEVICE = 1,
    ZE_EVENT_SCOPE_FLAG_DEVICE = 2,
    ZE_EVENT_SCOPE_FLAG_HOST = 4,
    ZE_EVENT_SCOPE_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_event_scope_flag_t;
typedef uint32_t ze_fence_flags_t;
typedef uint32_t ze_device_mem_alloc_flags_t;
typedef uint32_t ze_host_mem_alloc_flags_t;
typedef uint32_t ze_kernel_flags_t;
typedef uint32_t ze_kernel_indirect_access_flags_t;
typedef enum _ze_kernel_indirect_access_flag_t
{
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST = 1,
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE = 2,
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED = 4,
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_kernel_indirect_access_flag_t;

typedef enum _ze_memory_type_t
{
    ZE_MEMORY_TYPE_UNKNOWN = 0,
    ZE_MEMORY_TYPE_HOST = 1,
    ZE_MEMORY_TYPE_DEVICE = 2,
    ZE_MEMORY_TYPE_SHARED = 3,
    ZE_MEMORY_TYPE_FORCE_UINT32 = 0x7fffffff
} ze_memory_type_t;

typedef enum _ze_module_format_t
{
    ZE_MODULE_FORMAT_IL_SPIRV = 0,
    ZE_MODULE_FORMAT_NATIVE = 1,
    ZE_MODULE_FORMAT_FORCE_UINT32 = 0x7fffffff
} ze_module_format_t;

// ZE_MAX_DRIVER_UUID_SIZE = 16
typedef struct _ze_driver_uuid_t
{
    uint8_t id[16];
} ze_driver_uuid_t;

typedef struct _ze_driver_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    ze_driver_uuid_t uuid;
    uint32_t driverVersion;
} ze_driver_properties_t;

// ZE_MAX_DEVICE_UUID_SIZE = 16
typedef struct _ze_device_uuid_t
{
    uint8_t id[16];
} ze_device_uuid_t;

// ZE_MAX_DEVICE_NAME = 256
typedef struct _ze_device_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    ze_device_type_t type;
    uint32_t vendorId;
    uint32_t deviceId;
    ze_device_property_flags_t flags;
    uint32_t subdeviceId;
    uint32_t coreClockRate;
    uint64_t maxMemAllocSize;
    uint32_t maxHardwareContexts;
    uint32_t maxCommandQueuePriority;
    uint32_t numThreadsPerEU;
    uint32_t physicalEUSimdWidth;
    uint32_t numEUsPerSubslice;
    uint32_t numSubslicesPerSlice;
    uint32_t numSlices;
    uint64_t timerResolution;
    uint32_t timestampValidBits;
    uint32_t kernelTimestampValidBits;
    ze_device_uuid_t uuid;
    char name[256];
} ze_device_properties_t;

// ZE_SUBGROUPSIZE_COUNT = 8
typedef struct _ze_device_compute_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    uint32_t maxTotalGroupSize;
    uint32_t maxGroupSizeX;
    uint32_t maxGroupSizeY;
    uint32_t maxGroupSizeZ;
    uint32_t maxGroupCountX;
    uint32_t maxGroupCountY;
    uint32_t maxGroupCountZ;
    uint32_t maxSharedLocalMemory;
    uint32_t numSubGroupSizes;
    uint32_t subGroupSizes[8];
} ze_device_compute_properties_t;

typedef struct _ze_command_queue_group_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    ze_command_queue_group_property_flags_t flags;
    size_t maxMemoryFillPatternSize;
    uint32_t numQueues;
} ze_command_queue_group_properties_t;

typedef struct _ze_device_memory_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    ze_device_memory_property_flags_t flags;
    uint32_t maxClockRate;
    uint32_t maxBusWidth;
    uint64_t totalSize;
    char name[256];
} ze_device_memory_properties_t;

typedef struct _ze_context_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_context_flags_t flags;
} ze_context_desc_t;

typedef struct _ze_command_queue_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    uint32_t ordinal;
    uint32_t index;
    ze_command_queue_flags_t flags;
    ze_command_queue_mode_t mode;
    ze_command_queue_priority_t priority;
} ze_command_queue_desc_t;

typedef struct _ze_command_list_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    uint32_t commandQueueGroupOrdinal;
    ze_command_list_flags_t flags;
} ze_command_list_desc_t;

typedef struct _ze_copy_region_t
{
    uint32_t originX;
    uint32_t originY;
    uint32_t originZ;
    uint32_t width;
    uint32_t height;
    uint32_t depth;
} ze_copy_region_t;

typedef struct _ze_event_pool_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_event_pool_flags_t flags;
    uint32_t count;
} ze_event_pool_desc_t;

typedef struct _ze_event_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    uint32_t index;
    ze_event_scope_flags_t signal;
    ze_event_scope_flags_t wait;
} ze_event_desc_t;

typedef struct _ze_kernel_timestamp_data_t
{
    uint64_t kernelStart;
    uint64_t kernelEnd;
} ze_kernel_timestamp_data_t;

typedef struct _ze_kernel_timestamp_result_t
{
    ze_kernel_timestamp_data_t global;
    ze_kernel_timestamp_data_t context;
} ze_kernel_timestamp_result_t;

typedef struct _ze_fence_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_fence_flags_t flags;
} ze_fence_desc_t;

typedef struct _ze_device_mem_alloc_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_device_mem_alloc_flags_t flags;
    uint32_t ordinal;
} ze_device_mem_alloc_desc_t;

typedef struct _ze_host_mem_alloc_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_host_mem_alloc_flags_t flags;
} ze_host_mem_alloc_desc_t;

typedef struct _ze_memory_allocation_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    ze_memory_type_t type;
    uint64_t id;
    uint64_t pageSize;
} ze_memory_allocation_properties_t;

typedef struct _ze_module_constants_t
{
    uint32_t numConstants;
    const uint32_t* pConstantIds;
    const void** pConstantValues;
} ze_module_constants_t;

typedef struct _ze_module_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_module_format_t format;
    size_t inputSize;
    const uint8_t* pInputModule;
    const char* pBuildFlags;
    const ze_module_constants_t* pConstants;
} ze_module_desc_t;

typedef struct _ze_kernel_desc_t
{
    ze_structure_type_t stype;
    const void* pNext;
    ze_kernel_flags_t flags;
    const char* pKernelName;
} ze_kernel_desc_t;

typedef struct _ze_kernel_uuid_t
{
    uint8_t kid[16];
    uint8_t mid[16];
} ze_kernel_uuid_t;

typedef struct _ze_kernel_properties_t
{
    ze_structure_type_t stype;
    void* pNext;
    uint32_t numKernelArgs;
    uint32_t requiredGroupSizeX;
    uint32_t requiredGroupSizeY;
    uint32_t requiredGroupSizeZ;
    uint32_t requiredNumSubGroups;
    uint32_t requiredSubgroupSize;
    uint32_t maxSubgroupSize;
    uint32_t maxNumSubgroups;
    uint32_t localMemSize;
    uint32_t privateMemSize;
    uint32_t spillMemSize;
    ze_kernel_uuid_t uuid;
} ze_kernel_properties_t;

typedef struct _ze_group_count_t
{
    uint32_t groupCountX;
    uint32_t groupCountY;
    uint32_t groupCountZ;
} ze_group_count_t;
