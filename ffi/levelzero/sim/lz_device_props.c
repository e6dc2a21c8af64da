/* The device and driver queries SYCL's Unified Runtime and dpctl make beyond
 * the core properties (lz_driver.c): memory access, caches, images, external
 * memory, the driver's extensions and the device IP version.  Every answer
 * describes what the sim does; nothing is claimed that would fail later. */
#include <string.h>
#include <unistd.h>

#include "lz_api.h"
#include "lz_internal.h"

/* Every allocation the engine makes (host, device and shared, any device's:
 * zeDeviceCanAccessPeer says yes) is host memory that kernels load, store and
 * update with the host's atomics, while the host and other devices do too. */
#define LZ_USM_CAPS                                                                       \
    (ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC |                    \
     ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC)

ZE_APIEXPORT ze_result_t zeDeviceGetMemoryAccessProperties(ze_device_handle_t hDevice,
                                                           ze_device_memory_access_properties_t *p) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->hostAllocCapabilities = LZ_USM_CAPS;
    p->deviceAllocCapabilities = LZ_USM_CAPS;
    p->sharedSingleDeviceAllocCapabilities = LZ_USM_CAPS;
    p->sharedCrossDeviceAllocCapabilities = LZ_USM_CAPS;
    /* Memory the engine did not allocate (malloc'd) is an illegal address to
     * a kernel: no system allocations. */
    p->sharedSystemAllocCapabilities = 0;
    return ZE_RESULT_SUCCESS;
}

/* The sim's memory is the host's, cached by the host's caches: the last
 * level's size (sysconf), or 1 MiB where the host does not say. */
static size_t host_cache_bytes(void) {
    long sizes[] = {sysconf(_SC_LEVEL3_CACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE)};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i] > 0) return (size_t)sizes[i];
    return (size_t)1 << 20;
}

ZE_APIEXPORT ze_result_t zeDeviceGetCacheProperties(ze_device_handle_t hDevice, uint32_t *pCount,
                                                    ze_device_cache_properties_t *pCacheProperties) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !pCacheProperties) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    *pCount = 1;
    pCacheProperties[0].flags = 0; /* no user cache control */
    pCacheProperties[0].cacheSize = host_cache_bytes();
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetImageProperties(ze_device_handle_t hDevice,
                                                    ze_device_image_properties_t *p) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* No images: the SPIR-V executor refuses ImageBasic, and zeImageCreate
     * is not implemented.  Zero dimensions are how a device says so. */
    p->maxImageDims1D = 0;
    p->maxImageDims2D = 0;
    p->maxImageDims3D = 0;
    p->maxImageBufferSize = 0;
    p->maxImageArraySlices = 0;
    p->maxSamplers = 0;
    p->maxReadImageArgs = 0;
    p->maxWriteImageArgs = 0;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetExternalMemoryProperties(ze_device_handle_t hDevice,
                                                             ze_device_external_memory_properties_t *p) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* No import or export of memory (dma-buf, opaque fds). */
    p->memoryAllocationImportTypes = 0;
    p->memoryAllocationExportTypes = 0;
    p->imageImportTypes = 0;
    p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
}

/* The extensions the driver implements: the device IP version, and the
 * module program extension (several SPIR-V modules linked into one at
 * zeModuleCreate, lz_module.c). */
static const ze_driver_extension_properties_t k_extensions[] = {
    {ZE_DEVICE_IP_VERSION_EXT_NAME, ZE_DEVICE_IP_VERSION_VERSION_1_0},
    {ZE_MODULE_PROGRAM_EXP_NAME, ZE_MODULE_PROGRAM_EXP_VERSION_1_0},
};
#define N_EXTENSIONS ((uint32_t)(sizeof k_extensions / sizeof k_extensions[0]))

ZE_APIEXPORT ze_result_t zeDriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t *pCount,
                                                        ze_driver_extension_properties_t *pExtensionProperties) {
    LZ_CHECK(hDriver, LZ_T_DRIVER);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !pExtensionProperties) {
        *pCount = N_EXTENSIONS;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > N_EXTENSIONS) *pCount = N_EXTENSIONS;
    memcpy(pExtensionProperties, k_extensions, *pCount * sizeof k_extensions[0]);
    return ZE_RESULT_SUCCESS;
}

/* Fills the extension structs chained to zeDeviceGetProperties' output that
 * the sim knows (the IP version); others are left as the caller made them. */
LZ_HIDDEN void lz_device_fill_extensions(void *pNext) {
    typedef struct {
        ze_structure_type_t stype;
        void *pNext;
    } header;
    for (header *h = pNext; h; h = h->pNext)
        if (h->stype == ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT)
            ((ze_device_ip_version_ext_t *)h)->ipVersion = LZ_SIM_IP_VERSION;
}
