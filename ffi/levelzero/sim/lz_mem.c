/* Unified shared memory: device, host and shared allocations. */
#include <string.h>

#include "lz_internal.h"

#define LZ_PAGE_SIZE 4096u
#define LZ_ENGINE_ALIGN 256u

static ze_result_t check_alignment(size_t alignment) {
    if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    if (alignment > LZ_ENGINE_ALIGN) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
    return ZE_RESULT_SUCCESS;
}

static ze_result_t do_alloc(lz_context *ctx, int device, size_t size, size_t alignment,
                            arsim_mem_kind kind, void **pptr) {
    if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
    ze_result_t r = check_alignment(alignment);
    if (r != ZE_RESULT_SUCCESS) return r;
    if (kind != ARSIM_MEM_HOST) {
        arsim_device_info info;
        if (arsim_device_info_get(device, &info) != ARSIM_OK) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (size > info.total_memory) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE; /* > maxMemAllocSize */
        if (arsim_device_sticky(device) != ARSIM_OK) return ZE_RESULT_ERROR_DEVICE_LOST;
    }
    void *p = NULL;
    arsim_status st = arsim_mem_alloc(device, size, kind, ctx->base.id, 0, &p);
    if (st == ARSIM_ERR_OUT_OF_MEMORY)
        return kind == ARSIM_MEM_HOST ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                      : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    if (st != ARSIM_OK) return lz_status_to_result(st);
    *pptr = p;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeMemAllocDevice(ze_context_handle_t hContext,
                                          const ze_device_mem_alloc_desc_t *desc, size_t size,
                                          size_t alignment, ze_device_handle_t hDevice, void **pptr) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    lz_device *dev = (lz_device *)lz_lookup(hDevice, LZ_T_DEVICE);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!dev) r = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    else if (!desc || !pptr) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if (desc->flags & ~7u) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else r = do_alloc(ctx, dev->index, size, alignment, ARSIM_MEM_DEVICE, pptr);
    if (dev) lz_unref(&dev->base);
    lz_unref(&ctx->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeMemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t *desc,
                                        size_t size, size_t alignment, void **pptr) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    ze_result_t r;
    if (!desc || !pptr) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if (desc->flags & ~15u) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else r = do_alloc(ctx, -1, size, alignment, ARSIM_MEM_HOST, pptr);
    lz_unref(&ctx->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeMemAllocShared(ze_context_handle_t hContext,
                                          const ze_device_mem_alloc_desc_t *device_desc,
                                          const ze_host_mem_alloc_desc_t *host_desc, size_t size,
                                          size_t alignment, ze_device_handle_t hDevice, void **pptr) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    ze_result_t r = ZE_RESULT_SUCCESS;
    lz_device *dev = NULL;
    if (hDevice) { /* optional: NULL means "not tied to a device" */
        dev = (lz_device *)lz_lookup(hDevice, LZ_T_DEVICE);
        if (!dev) r = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    if (r == ZE_RESULT_SUCCESS) {
        if (!device_desc || !host_desc || !pptr) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        else if (device_desc->stype != ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC ||
                 host_desc->stype != ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC)
            r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
        else if ((device_desc->flags & ~7u) || (host_desc->flags & ~15u))
            r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
        else
            r = do_alloc(ctx, dev ? dev->index : 0, size, alignment, ARSIM_MEM_MANAGED, pptr);
    }
    if (dev) lz_unref(&dev->base);
    lz_unref(&ctx->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeMemFree(ze_context_handle_t hContext, void *ptr) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    ze_result_t r = ZE_RESULT_SUCCESS;
    arsim_alloc a;
    if (!ptr) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (arsim_mem_lookup(ptr, &a) != ARSIM_OK || a.base != ptr || a.owner != ctx->base.id ||
             !(a.kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED | ARSIM_MEM_HOST)))
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT; /* not an allocation of this context */
    else if (arsim_mem_in_use(ptr))
        /* Freeing memory that queued work still uses is undefined in Level
         * Zero; the sim reports it instead of letting the work scribble on
         * freed memory. */
        r = ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    else if (arsim_mem_free(ptr, ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED | ARSIM_MEM_HOST) != ARSIM_OK)
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT; /* freed concurrently */
    lz_unref(&ctx->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeMemGetAllocProperties(ze_context_handle_t hContext, const void *ptr,
                                                 ze_memory_allocation_properties_t *props,
                                                 ze_device_handle_t *phDevice) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    lz_unref(&ctx->base);
    if (!ptr || !props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    arsim_alloc a;
    if (arsim_mem_lookup(ptr, &a) != ARSIM_OK || a.owner != ctx->base.id) {
        props->type = ZE_MEMORY_TYPE_UNKNOWN;
        props->id = 0;
        props->pageSize = 0;
        if (phDevice) *phDevice = NULL;
        return ZE_RESULT_SUCCESS;
    }
    props->type = a.kind == ARSIM_MEM_DEVICE    ? ZE_MEMORY_TYPE_DEVICE
                  : a.kind == ARSIM_MEM_MANAGED ? ZE_MEMORY_TYPE_SHARED
                                                : ZE_MEMORY_TYPE_HOST;
    props->id = (uint64_t)(uintptr_t)a.base;
    props->pageSize = LZ_PAGE_SIZE;
    if (phDevice) {
        *phDevice = (a.device >= 0 && a.device < lz_g_ndevices && a.kind != ARSIM_MEM_HOST)
                        ? (ze_device_handle_t)LZ_HANDLE(lz_g_devices[a.device])
                        : NULL;
    }
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeMemGetAddressRange(ze_context_handle_t hContext, const void *ptr,
                                              void **pBase, size_t *pSize) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    lz_unref(&ctx->base);
    if (!ptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    arsim_alloc a;
    if (arsim_mem_lookup(ptr, &a) != ARSIM_OK || a.owner != ctx->base.id) return ZE_RESULT_ERROR_NOT_AVAILABLE;
    if (pBase) *pBase = a.base;
    if (pSize) *pSize = a.size;
    return ZE_RESULT_SUCCESS;
}
