/* cuda-sim: each memory location's default and current pool, per allocation
 * type (cuDeviceGetDefaultMemPool, cuDeviceGetMemPool, cuDeviceSetMemPool,
 * CUDA 13's cuMemGetDefaultMemPool, cuMemGetMemPool, cuMemSetMemPool), and
 * cuMemAllocAsync, which allocates from the current pool of its stream's
 * device.
 *
 * The locations cuda.h lists: a device, the host, a host NUMA node (the sim's
 * host is one node, 0) and, for managed memory only, none.  A default pool is
 * made on first use and never destroyed.  A current pool is kept as a handle:
 * once that pool is destroyed the handle no longer resolves and the default
 * serves again, as cuMemPoolDestroy documents. */
#include "cusim.h"

#define MAX_DEVICES 64

/* One slot per (allocation type, location). */
enum {
    SLOT_PINNED_DEVICE = 0,
    SLOT_MANAGED_DEVICE = MAX_DEVICES,
    SLOT_PINNED_HOST = 2 * MAX_DEVICES,
    SLOT_PINNED_HOST_NUMA,
    SLOT_MANAGED_NONE,
    SLOT_MANAGED_HOST,
    SLOT_MANAGED_HOST_NUMA,
    SLOTS
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cu_pool *g_default[SLOTS];
static uint64_t g_current[SLOTS]; /* 0: the default pool */

/* The slot of a valid (type, location) pair, or -1 (CUDA_ERROR_INVALID_VALUE). */
static int slot_of(CUmemAllocationType type, const CUmemLocation *loc)
{
    int managed = type == CU_MEM_ALLOCATION_TYPE_MANAGED;
    if (!managed && type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return -1;
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (loc->id < 0 || loc->id >= arsim_device_count() || loc->id >= MAX_DEVICES)
            return -1;
        return (managed ? SLOT_MANAGED_DEVICE : SLOT_PINNED_DEVICE) + loc->id;
    case CU_MEM_LOCATION_TYPE_HOST:
        return managed ? SLOT_MANAGED_HOST : SLOT_PINNED_HOST;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (loc->id != 0)
            return -1;
        return managed ? SLOT_MANAGED_HOST_NUMA : SLOT_PINNED_HOST_NUMA;
    case CU_MEM_LOCATION_TYPE_NONE:
        return managed ? SLOT_MANAGED_NONE : -1;
    default:
        return -1;
    }
}

static cu_pool *default_pool(int slot, CUmemAllocationType type, const CUmemLocation *loc)
{
    pthread_mutex_lock(&g_mu);
    if (!g_default[slot]) {
        CUmemLocation where = *loc;
        if (where.type == CU_MEM_LOCATION_TYPE_HOST)
            where.id = 0; /* ignored for the host: one pool, whatever id asked */
        g_default[slot] = cusim_pool_new(type, &where, 0, 1);
    }
    cu_pool *p = g_default[slot];
    pthread_mutex_unlock(&g_mu);
    return p;
}

static cu_pool *current_pool(int slot, CUmemAllocationType type, const CUmemLocation *loc)
{
    pthread_mutex_lock(&g_mu);
    uint64_t h = g_current[slot];
    pthread_mutex_unlock(&g_mu);
    cu_pool *p = h ? cusim_pool_get((CUmemoryPool)(uintptr_t)h) : NULL;
    return p ? p : default_pool(slot, type, loc);
}

static CUresult get_pool(CUmemoryPool *out, const CUmemLocation *loc, CUmemAllocationType type,
                         int current)
{
    CUSIM_TRY(cusim_check_init());
    if (!out || !loc)
        return CUDA_ERROR_INVALID_VALUE;
    int slot = slot_of(type, loc);
    if (slot < 0)
        return CUDA_ERROR_INVALID_VALUE;
    cu_pool *p = current ? current_pool(slot, type, loc) : default_pool(slot, type, loc);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = cusim_pool_handle(p);
    return CUDA_SUCCESS;
}

static CUresult set_pool(const CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    CUSIM_TRY(cusim_check_init());
    if (!loc)
        return CUDA_ERROR_INVALID_VALUE;
    int slot = slot_of(type, loc);
    cu_pool *p = cusim_pool_get(pool);
    /* The pool must be of this type at this location. */
    if (slot < 0 || !p || !cusim_pool_serves(p, type, loc))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&g_mu);
    g_current[slot] = p == g_default[slot] ? 0 : (uint64_t)(uintptr_t)pool;
    pthread_mutex_unlock(&g_mu);
    return CUDA_SUCCESS;
}

static CUresult device_location(CUdevice dev, CUmemLocation *loc)
{
    CUSIM_TRY(cusim_check_init());
    if (dev < 0 || dev >= arsim_device_count() || dev >= MAX_DEVICES)
        return CUDA_ERROR_INVALID_DEVICE;
    loc->type = CU_MEM_LOCATION_TYPE_DEVICE;
    loc->id = dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUmemLocation loc;
    CUSIM_TRY(device_location(dev, &loc));
    return get_pool(pool_out, &loc, CU_MEM_ALLOCATION_TYPE_PINNED, 0);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUmemLocation loc;
    CUSIM_TRY(device_location(dev, &loc));
    return get_pool(pool, &loc, CU_MEM_ALLOCATION_TYPE_PINNED, 1);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUmemLocation loc;
    CUSIM_TRY(device_location(dev, &loc));
    return set_pool(&loc, CU_MEM_ALLOCATION_TYPE_PINNED, pool);
}

CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                CUmemAllocationType type)
{
    return get_pool(pool_out, location, type, 0);
}

CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location, CUmemAllocationType type)
{
    return get_pool(pool, location, type, 1);
}

CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type, CUmemoryPool pool)
{
    return set_pool(location, type, pool);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    cu_stream *s;
    CUSIM_TRY(cusim_resolve_stream(hStream, &s));
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, s->ctx->device};
    cu_pool *p = current_pool(SLOT_PINNED_DEVICE + s->ctx->device, CU_MEM_ALLOCATION_TYPE_PINNED,
                              &loc);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return cusim_pool_alloc_async(p, bytesize, s, dptr);
}
