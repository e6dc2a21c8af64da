/* The slice of the Level Zero 1.x ABI that the software driver implements.
 *
 * Written for this project so that the driver builds on a machine without
 * libze-dev (a C compiler is the only build requirement).  Names, values and
 * struct layouts follow the Level Zero specification; tests/ffi/test_levelzero_sim.py
 * compiles ffi/levelzero/probe/layout_probe.c against this header and against the
 * real <level_zero/ze_ddi.h> and compares every size and offset, so a drift
 * is a test failure rather than memory corruption.  tests/ffi/test_abi_headers.py
 * holds every type this shares with the cffi declarations (ffi/levelzero/decl)
 * to theirs, field by field and constant by constant.
 */
#ifndef ARZE_ZE_ABI_H
#define ARZE_ZE_ABI_H

#include <stddef.h>
#include <stdint.h>

#define ZE_MAKE_VERSION(major, minor) (((major) << 16) | ((minor) & 0x0000ffff))
#define ZE_MAJOR_VERSION(v) ((v) >> 16)
#define ZE_BIT(i) (1u << (i))

typedef uint8_t ze_bool_t;
typedef uint32_t ze_flags_t;

typedef enum _ze_result_t {
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

typedef enum _ze_api_version_t {
    ZE_API_VERSION_1_0 = ZE_MAKE_VERSION(1, 0),
    ZE_API_VERSION_1_1 = ZE_MAKE_VERSION(1, 1),
    ZE_API_VERSION_1_2 = ZE_MAKE_VERSION(1, 2),
    ZE_API_VERSION_1_3 = ZE_MAKE_VERSION(1, 3),
    ZE_API_VERSION_1_4 = ZE_MAKE_VERSION(1, 4),
    ZE_API_VERSION_CURRENT = ZE_MAKE_VERSION(1, 4),
    ZE_API_VERSION_FORCE_UINT32 = 0x7fffffff
} ze_api_version_t;

typedef enum _ze_structure_type_t {
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

/* Opaque handles.  The driver hands out registry ids cast to these types
 * (never pointers), so a destroyed handle can always be recognised. */
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

typedef ze_flags_t ze_init_flags_t;

typedef enum _ze_memory_advice_t {
    ZE_MEMORY_ADVICE_SET_READ_MOSTLY = 0,
    ZE_MEMORY_ADVICE_BIAS_UNCACHED = 7, /* the last of the 1.8 headers */
    ZE_MEMORY_ADVICE_FORCE_UINT32 = 0x7fffffff
} ze_memory_advice_t;

/* zeInitDrivers (Level Zero 1.10): newer than Debian's 1.8 headers, so the
 * header checks cannot hold its stype (not in the aruntime backend's
 * declarations either); the shim's tests state the number. */
enum { ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC = 0x00020021 };
typedef ze_flags_t ze_init_driver_type_flags_t;
enum { ZE_INIT_DRIVER_TYPE_FLAG_GPU = ZE_BIT(0), ZE_INIT_DRIVER_TYPE_FLAG_NPU = ZE_BIT(1) };
typedef struct _ze_init_driver_type_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_init_driver_type_flags_t flags;
} ze_init_driver_type_desc_t;

typedef enum _ze_device_type_t {
    ZE_DEVICE_TYPE_GPU = 1,
    ZE_DEVICE_TYPE_CPU = 2,
    ZE_DEVICE_TYPE_FPGA = 3,
    ZE_DEVICE_TYPE_MCA = 4,
    ZE_DEVICE_TYPE_VPU = 5,
    ZE_DEVICE_TYPE_FORCE_UINT32 = 0x7fffffff
} ze_device_type_t;

enum {
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE = ZE_BIT(0),
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY = ZE_BIT(1),
    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS = ZE_BIT(2),
};
typedef enum _ze_command_queue_mode_t {
    ZE_COMMAND_QUEUE_MODE_DEFAULT = 0,
    ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS = 1,
    ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS = 2,
    ZE_COMMAND_QUEUE_MODE_FORCE_UINT32 = 0x7fffffff
} ze_command_queue_mode_t;
typedef enum _ze_command_queue_priority_t {
    ZE_COMMAND_QUEUE_PRIORITY_NORMAL = 0,
    ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_LOW = 1,
    ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH = 2,
    ZE_COMMAND_QUEUE_PRIORITY_FORCE_UINT32 = 0x7fffffff
} ze_command_queue_priority_t;
enum {
    ZE_EVENT_POOL_FLAG_HOST_VISIBLE = ZE_BIT(0),
    ZE_EVENT_POOL_FLAG_IPC = ZE_BIT(1),
    ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP = ZE_BIT(2),
    ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP = ZE_BIT(3),
};
enum { ZE_FENCE_FLAG_SIGNALED = ZE_BIT(0) };
typedef enum _ze_memory_type_t {
    ZE_MEMORY_TYPE_UNKNOWN = 0,
    ZE_MEMORY_TYPE_HOST = 1,
    ZE_MEMORY_TYPE_DEVICE = 2,
    ZE_MEMORY_TYPE_SHARED = 3,
    ZE_MEMORY_TYPE_FORCE_UINT32 = 0x7fffffff
} ze_memory_type_t;
typedef enum _ze_module_format_t {
    ZE_MODULE_FORMAT_IL_SPIRV = 0,
    ZE_MODULE_FORMAT_NATIVE = 1,
    ZE_MODULE_FORMAT_FORCE_UINT32 = 0x7fffffff
} ze_module_format_t;

#define ZE_MAX_DRIVER_UUID_SIZE 16
#define ZE_MAX_DEVICE_UUID_SIZE 16
#define ZE_MAX_DEVICE_NAME 256
#define ZE_SUBGROUPSIZE_COUNT 8

typedef struct _ze_driver_uuid_t { uint8_t id[ZE_MAX_DRIVER_UUID_SIZE]; } ze_driver_uuid_t;
typedef struct _ze_device_uuid_t { uint8_t id[ZE_MAX_DEVICE_UUID_SIZE]; } ze_device_uuid_t;

typedef struct _ze_driver_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_driver_uuid_t uuid;
    uint32_t driverVersion;
} ze_driver_properties_t;

typedef struct _ze_device_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_device_type_t type;
    uint32_t vendorId;
    uint32_t deviceId;
    ze_flags_t flags;
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
    char name[ZE_MAX_DEVICE_NAME];
} ze_device_properties_t;

typedef struct _ze_device_memory_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t flags;
    uint32_t maxClockRate;
    uint32_t maxBusWidth;
    uint64_t totalSize;
    char name[ZE_MAX_DEVICE_NAME];
} ze_device_memory_properties_t;

typedef struct _ze_device_compute_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    uint32_t maxTotalGroupSize;
    uint32_t maxGroupSizeX;
    uint32_t maxGroupSizeY;
    uint32_t maxGroupSizeZ;
    uint32_t maxGroupCountX;
    uint32_t maxGroupCountY;
    uint32_t maxGroupCountZ;
    uint32_t maxSharedLocalMemory;
    uint32_t numSubGroupSizes;
    uint32_t subGroupSizes[ZE_SUBGROUPSIZE_COUNT];
} ze_device_compute_properties_t;

typedef struct _ze_native_kernel_uuid_t { uint8_t id[16]; } ze_native_kernel_uuid_t;

typedef struct _ze_device_module_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    uint32_t spirvVersionSupported;
    ze_flags_t flags;
    ze_flags_t fp16flags;
    ze_flags_t fp32flags;
    ze_flags_t fp64flags;
    uint32_t maxArgumentsSize;
    uint32_t printfBufferSize;
    ze_native_kernel_uuid_t nativeKernelSupported;
} ze_device_module_properties_t;

/* Extracted from ze_api.h (1.8.12) by script, comments dropped. */
typedef enum _ze_memory_access_cap_flag_t {
    ZE_MEMORY_ACCESS_CAP_FLAG_RW = ZE_BIT(0),
    ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC = ZE_BIT(1),
    ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT = ZE_BIT(2),
    ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC = ZE_BIT(3),
} ze_memory_access_cap_flag_t;

typedef enum _ze_device_module_flag_t {
    ZE_DEVICE_MODULE_FLAG_FP16 = ZE_BIT(0),
    ZE_DEVICE_MODULE_FLAG_FP64 = ZE_BIT(1),
    ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS = ZE_BIT(2),
    ZE_DEVICE_MODULE_FLAG_DP4A = ZE_BIT(3),
} ze_device_module_flag_t;

typedef enum _ze_device_fp_flag_t {
    ZE_DEVICE_FP_FLAG_DENORM = ZE_BIT(0),
    ZE_DEVICE_FP_FLAG_INF_NAN = ZE_BIT(1),
    ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST = ZE_BIT(2),
    ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO = ZE_BIT(3),
    ZE_DEVICE_FP_FLAG_ROUND_TO_INF = ZE_BIT(4),
    ZE_DEVICE_FP_FLAG_FMA = ZE_BIT(5),
    ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT = ZE_BIT(6),
    ZE_DEVICE_FP_FLAG_SOFT_FLOAT = ZE_BIT(7),
} ze_device_fp_flag_t;

typedef enum _ze_kernel_indirect_access_flag_t {
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST = ZE_BIT(0),
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE = ZE_BIT(1),
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED = ZE_BIT(2),
    ZE_KERNEL_INDIRECT_ACCESS_FLAG_FORCE_UINT32 = 0x7fffffff
} ze_kernel_indirect_access_flag_t;

typedef enum _ze_module_property_flag_t {
    ZE_MODULE_PROPERTY_FLAG_IMPORTS = ZE_BIT(0),
} ze_module_property_flag_t;

typedef struct _ze_device_memory_access_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t hostAllocCapabilities;
    ze_flags_t deviceAllocCapabilities;
    ze_flags_t sharedSingleDeviceAllocCapabilities;
    ze_flags_t sharedCrossDeviceAllocCapabilities;
    ze_flags_t sharedSystemAllocCapabilities;
} ze_device_memory_access_properties_t;

typedef struct _ze_device_cache_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t flags;
    size_t cacheSize;
} ze_device_cache_properties_t;

typedef struct _ze_device_image_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    uint32_t maxImageDims1D;
    uint32_t maxImageDims2D;
    uint32_t maxImageDims3D;
    uint64_t maxImageBufferSize;
    uint32_t maxImageArraySlices;
    uint32_t maxSamplers;
    uint32_t maxReadImageArgs;
    uint32_t maxWriteImageArgs;
} ze_device_image_properties_t;

typedef struct _ze_device_external_memory_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t memoryAllocationImportTypes;
    ze_flags_t memoryAllocationExportTypes;
    ze_flags_t imageImportTypes;
    ze_flags_t imageExportTypes;
} ze_device_external_memory_properties_t;

typedef struct _ze_module_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t flags;
} ze_module_properties_t;

#define ZE_MAX_EXTENSION_NAME 256
typedef struct _ze_driver_extension_properties_t {
    char name[ZE_MAX_EXTENSION_NAME];
    uint32_t version;
} ze_driver_extension_properties_t;

/* The device IP-version extension (spec 1.6), which Debian's 1.8.12
 * ze_api.h (spec 1.4) lacks: outside ze_structure_type_t, which the backend's
 * declarations share and which must hold only what that header has.
 * test_abi_headers.py checks these against ze_api.h wherever a header that
 * has them is installed; value and layout are those of the spec's
 * ze_api.h (oneapi-src/level-zero 1.17 and later). */
enum {
    ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT = 0x1000f,
};
#define ZE_DEVICE_IP_VERSION_EXT_NAME "ZE_extension_device_ip_version"
typedef enum _ze_device_ip_version_version_t {
    ZE_DEVICE_IP_VERSION_VERSION_1_0 = ZE_MAKE_VERSION(1, 0),
} ze_device_ip_version_version_t;

typedef struct _ze_device_ip_version_ext_t {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t ipVersion;
} ze_device_ip_version_ext_t;


typedef struct _ze_command_queue_group_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_flags_t flags;
    size_t maxMemoryFillPatternSize;
    uint32_t numQueues;
} ze_command_queue_group_properties_t;

typedef struct _ze_context_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
} ze_context_desc_t;

typedef struct _ze_device_mem_alloc_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
    uint32_t ordinal;
} ze_device_mem_alloc_desc_t;

typedef struct _ze_host_mem_alloc_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
} ze_host_mem_alloc_desc_t;

typedef struct _ze_memory_allocation_properties_t {
    ze_structure_type_t stype;
    void *pNext;
    ze_memory_type_t type;
    uint64_t id;
    uint64_t pageSize;
} ze_memory_allocation_properties_t;

typedef struct _ze_command_queue_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t ordinal;
    uint32_t index;
    ze_flags_t flags;
    ze_command_queue_mode_t mode;
    ze_command_queue_priority_t priority;
} ze_command_queue_desc_t;

typedef struct _ze_command_list_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t commandQueueGroupOrdinal;
    ze_flags_t flags;
} ze_command_list_desc_t;

typedef struct _ze_copy_region_t {
    uint32_t originX;
    uint32_t originY;
    uint32_t originZ;
    uint32_t width;
    uint32_t height;
    uint32_t depth;
} ze_copy_region_t;

typedef struct _ze_event_pool_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
    uint32_t count;
} ze_event_pool_desc_t;

typedef struct _ze_event_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t index;
    ze_flags_t signal;
    ze_flags_t wait;
} ze_event_desc_t;

typedef struct _ze_kernel_timestamp_data_t {
    uint64_t kernelStart;
    uint64_t kernelEnd;
} ze_kernel_timestamp_data_t;

typedef struct _ze_kernel_timestamp_result_t {
    ze_kernel_timestamp_data_t global;
    ze_kernel_timestamp_data_t context;
} ze_kernel_timestamp_result_t;

typedef struct _ze_fence_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
} ze_fence_desc_t;

typedef struct _ze_module_constants_t {
    uint32_t numConstants;
    const uint32_t *pConstantIds;
    const void **pConstantValues;
} ze_module_constants_t;

typedef struct _ze_module_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_module_format_t format;
    size_t inputSize;
    const uint8_t *pInputModule;
    const char *pBuildFlags;
    const ze_module_constants_t *pConstants;
} ze_module_desc_t;

/* The module program extension: several SPIR-V modules linked into one. */
#define ZE_MODULE_PROGRAM_EXP_NAME "ZE_experimental_module_program"
typedef enum _ze_module_program_exp_version_t {
    ZE_MODULE_PROGRAM_EXP_VERSION_1_0 = ZE_MAKE_VERSION(1, 0),
} ze_module_program_exp_version_t;

typedef struct _ze_module_program_exp_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    uint32_t count;
    const size_t *inputSizes;
    const uint8_t **pInputModules;
    const char **pBuildFlags;
    const ze_module_constants_t **pConstants;
} ze_module_program_exp_desc_t;

typedef struct _ze_kernel_desc_t {
    ze_structure_type_t stype;
    const void *pNext;
    ze_flags_t flags;
    const char *pKernelName;
} ze_kernel_desc_t;

typedef struct _ze_kernel_uuid_t {
    uint8_t kid[16];
    uint8_t mid[16];
} ze_kernel_uuid_t;

typedef struct _ze_kernel_properties_t {
    ze_structure_type_t stype;
    void *pNext;
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

typedef struct _ze_group_count_t {
    uint32_t groupCountX;
    uint32_t groupCountY;
    uint32_t groupCountZ;
} ze_group_count_t;

/* DDI tables: the driver fills them slot by slot.  Each table is an array of
 * function pointers in the order the specification's ze_ddi.h gives; the
 * slot numbers below are checked against the real header by the layout probe. */
/* pfnInitDrivers joined the global table in 1.10 (after the 1.8 headers). */
enum arze_slot_global { SLOT_GLOBAL_Init = 0, SLOT_GLOBAL_InitDrivers = 1 };
enum arze_slot_driver {
    SLOT_DRIVER_Get = 0,
    SLOT_DRIVER_GetApiVersion = 1,
    SLOT_DRIVER_GetProperties = 2,
    SLOT_DRIVER_GetIpcProperties = 3,
    SLOT_DRIVER_GetExtensionProperties = 4,
    SLOT_DRIVER_GetExtensionFunctionAddress = 5,
};
enum arze_slot_device {
    SLOT_DEVICE_Get = 0,
    SLOT_DEVICE_GetSubDevices = 1,
    SLOT_DEVICE_GetProperties = 2,
    SLOT_DEVICE_GetComputeProperties = 3,
    SLOT_DEVICE_GetModuleProperties = 4,
    SLOT_DEVICE_GetCommandQueueGroupProperties = 5,
    SLOT_DEVICE_GetMemoryProperties = 6,
    SLOT_DEVICE_GetMemoryAccessProperties = 7,
    SLOT_DEVICE_GetCacheProperties = 8,
    SLOT_DEVICE_GetImageProperties = 9,
    SLOT_DEVICE_GetExternalMemoryProperties = 10,
    SLOT_DEVICE_GetP2PProperties = 11,
    SLOT_DEVICE_CanAccessPeer = 12,
    SLOT_DEVICE_GetStatus = 13,
    SLOT_DEVICE_GetGlobalTimestamps = 14,
};
enum arze_slot_context { SLOT_CONTEXT_Create = 0, SLOT_CONTEXT_Destroy = 1, SLOT_CONTEXT_GetStatus = 2 };
enum arze_slot_command_queue {
    SLOT_COMMAND_QUEUE_Create = 0,
    SLOT_COMMAND_QUEUE_Destroy = 1,
    SLOT_COMMAND_QUEUE_ExecuteCommandLists = 2,
    SLOT_COMMAND_QUEUE_Synchronize = 3,
};
enum arze_slot_command_list {
    SLOT_COMMAND_LIST_Create = 0,
    SLOT_COMMAND_LIST_CreateImmediate = 1,
    SLOT_COMMAND_LIST_Destroy = 2,
    SLOT_COMMAND_LIST_Close = 3,
    SLOT_COMMAND_LIST_Reset = 4,
    SLOT_COMMAND_LIST_AppendWriteGlobalTimestamp = 5,
    SLOT_COMMAND_LIST_AppendBarrier = 6,
    SLOT_COMMAND_LIST_AppendMemoryRangesBarrier = 7,
    SLOT_COMMAND_LIST_AppendMemoryCopy = 8,
    SLOT_COMMAND_LIST_AppendMemoryFill = 9,
    SLOT_COMMAND_LIST_AppendMemoryCopyRegion = 10,
    SLOT_COMMAND_LIST_AppendMemoryPrefetch = 16,
    SLOT_COMMAND_LIST_AppendMemAdvise = 17,
    SLOT_COMMAND_LIST_AppendSignalEvent = 18,
    SLOT_COMMAND_LIST_AppendWaitOnEvents = 19,
    SLOT_COMMAND_LIST_AppendEventReset = 20,
    SLOT_COMMAND_LIST_AppendLaunchKernel = 22,
};
enum arze_slot_fence {
    SLOT_FENCE_Create = 0,
    SLOT_FENCE_Destroy = 1,
    SLOT_FENCE_HostSynchronize = 2,
    SLOT_FENCE_QueryStatus = 3,
    SLOT_FENCE_Reset = 4,
};
enum arze_slot_event_pool { SLOT_EVENT_POOL_Create = 0, SLOT_EVENT_POOL_Destroy = 1 };
enum arze_slot_event {
    SLOT_EVENT_Create = 0,
    SLOT_EVENT_Destroy = 1,
    SLOT_EVENT_HostSignal = 2,
    SLOT_EVENT_HostSynchronize = 3,
    SLOT_EVENT_QueryStatus = 4,
    SLOT_EVENT_HostReset = 5,
    SLOT_EVENT_QueryKernelTimestamp = 6,
};
enum arze_slot_module {
    SLOT_MODULE_Create = 0,
    SLOT_MODULE_Destroy = 1,
    SLOT_MODULE_DynamicLink = 2,
    SLOT_MODULE_GetKernelNames = 5,
    SLOT_MODULE_GetProperties = 6,
};
enum arze_slot_module_build_log { SLOT_MODULE_BUILD_LOG_Destroy = 0, SLOT_MODULE_BUILD_LOG_GetString = 1 };
enum arze_slot_kernel {
    SLOT_KERNEL_Create = 0,
    SLOT_KERNEL_Destroy = 1,
    SLOT_KERNEL_SetGroupSize = 3,
    SLOT_KERNEL_SuggestGroupSize = 4,
    SLOT_KERNEL_SetArgumentValue = 6,
    SLOT_KERNEL_SetIndirectAccess = 7,
    SLOT_KERNEL_GetIndirectAccess = 8,
    SLOT_KERNEL_GetProperties = 10,
    SLOT_KERNEL_GetName = 11,
};
enum arze_slot_mem {
    SLOT_MEM_AllocShared = 0,
    SLOT_MEM_AllocDevice = 1,
    SLOT_MEM_AllocHost = 2,
    SLOT_MEM_Free = 3,
    SLOT_MEM_GetAllocProperties = 4,
    SLOT_MEM_GetAddressRange = 5,
};

#endif
