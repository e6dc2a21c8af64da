/* zeInit, the driver, its devices and contexts, and the driver's test hooks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/spirv/spv.h"
#include "lz_internal.h"

lz_driver *lz_g_driver;
lz_device *lz_g_devices[LZ_MAX_DEVICES];
int lz_g_ndevices;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static ze_result_t g_init_result = ZE_RESULT_ERROR_UNINITIALIZED;

static void free_plain(lz_obj *o) { free(o); }

static void init_once(void) {
    lz_driver *drv = calloc(1, sizeof *drv);
    if (!drv) {
        g_init_result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        return;
    }
    drv->base = (lz_obj){.type = LZ_T_DRIVER, .refs = 1, .finalize = free_plain};
    int n = arsim_device_count();
    if (n > LZ_MAX_DEVICES) n = LZ_MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        lz_device *d = calloc(1, sizeof *d);
        if (!d) {
            g_init_result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
            return;
        }
        d->base = (lz_obj){.type = LZ_T_DEVICE, .refs = 1, .finalize = free_plain};
        d->index = i;
        if (!lz_register(&d->base)) {
            g_init_result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
            return;
        }
        lz_g_devices[i] = d;
    }
    if (!lz_register(&drv->base)) {
        g_init_result = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        return;
    }
    lz_g_ndevices = n;
    lz_g_driver = drv;
    g_init_result = ZE_RESULT_SUCCESS;
}

bool lz_initialized(void) { return lz_g_driver != NULL && !arsim_forked(); }

ze_result_t lz_status_to_result(arsim_status s) {
    switch (s) {
    case ARSIM_OK: return ZE_RESULT_SUCCESS;
    case ARSIM_ERR_NOT_READY:
    case ARSIM_ERR_TIMEOUT: return ZE_RESULT_NOT_READY;
    case ARSIM_ERR_INVALID_VALUE: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    case ARSIM_ERR_OUT_OF_MEMORY: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case ARSIM_ERR_INVALID_HANDLE: return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    /* Level Zero has no "launch failed": a kernel that faults without
     * killing the device is reported as an unknown error. */
    case ARSIM_ERR_LAUNCH_FAILED: return ZE_RESULT_ERROR_UNKNOWN;
    case ARSIM_ERR_READONLY_WRITE: return (ze_result_t)ARSIM_READONLY_WRITE_RESULT;
    case ARSIM_ERR_ILLEGAL_ADDRESS: return ZE_RESULT_ERROR_DEVICE_LOST;
    case ARSIM_ERR_ASSERT: return ZE_RESULT_ERROR_DEVICE_LOST;
    case ARSIM_ERR_MISALIGNED_ADDRESS: return ZE_RESULT_ERROR_DEVICE_LOST;
    case ARSIM_ERR_INVALID_IMAGE: return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    case ARSIM_ERR_NOT_FOUND: return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
    case ARSIM_ERR_INVALID_DEVICE: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    case ARSIM_ERR_FORKED: return ZE_RESULT_ERROR_UNINITIALIZED;
    default: return ZE_RESULT_ERROR_UNKNOWN;
    }
}

ze_result_t lz_device_health(const lz_device *d) {
    return arsim_device_sticky(d->index) == ARSIM_OK ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_DEVICE_LOST;
}

arsim_wait_mode lz_wait_mode(void) {
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("ARUNTIME_LZ_SIM_SPIN_WAIT");
        mode = (v && strcmp(v, "1") == 0) ? ARSIM_WAIT_SPIN : ARSIM_WAIT_BLOCK;
    }
    return (arsim_wait_mode)mode;
}

int64_t lz_timeout(uint64_t timeout_ns) {
    return timeout_ns > (uint64_t)INT64_MAX ? -1 : (int64_t)timeout_ns;
}

/* ------------------------------------------------------------------ global */

ZE_APIEXPORT ze_result_t zeInit(ze_init_flags_t flags) {
    /* Called by the loader's driver check and again by the application. */
    if (flags & ~(ze_init_flags_t)(ZE_BIT(0) | ZE_BIT(1))) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (flags == ZE_BIT(1)) return ZE_RESULT_ERROR_UNINITIALIZED; /* VPU only: we are a GPU */
    /* Level Zero says nothing of fork(); the sim answers a child forked
     * after zeInit as NVIDIA's driver does (docs/backends.md): uninitialized. */
    if (arsim_forked()) return ZE_RESULT_ERROR_UNINITIALIZED;
    pthread_once(&g_once, init_once);
    if (g_init_result == ZE_RESULT_SUCCESS) arsim_mark_in_use();
    return g_init_result;
}

/* ------------------------------------------------------------------ driver */

ZE_APIEXPORT ze_result_t zeDriverGet(uint32_t *pCount, ze_driver_handle_t *phDrivers) {
    if (!lz_initialized()) return ZE_RESULT_ERROR_UNINITIALIZED;
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !phDrivers) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    phDrivers[0] = (ze_driver_handle_t)LZ_HANDLE(lz_g_driver);
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
}

/* Level Zero 1.10's initialisation by driver type: the sim is one GPU driver.
 * No driver of the asked types is UNINITIALIZED with a count of 0, as the
 * loader answers when none matches. */
ZE_APIEXPORT ze_result_t zeInitDrivers(uint32_t *pCount, ze_driver_handle_t *phDrivers,
                                       ze_init_driver_type_desc_t *desc) {
    if (!pCount || !desc) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if ((uint32_t)desc->stype != ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (!(desc->flags & ZE_INIT_DRIVER_TYPE_FLAG_GPU)) {
        *pCount = 0;
        return ZE_RESULT_ERROR_UNINITIALIZED;
    }
    ze_result_t r = zeInit(0);
    if (r != ZE_RESULT_SUCCESS) return r;
    return zeDriverGet(pCount, phDrivers);
}

ZE_APIEXPORT ze_result_t zeDriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t *version) {
    LZ_CHECK(hDriver, LZ_T_DRIVER);
    if (!version) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *version = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDriverGetProperties(ze_driver_handle_t hDriver,
                                               ze_driver_properties_t *props) {
    LZ_CHECK(hDriver, LZ_T_DRIVER);
    if (!props) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    memset(props->uuid.id, 0, sizeof props->uuid.id);
    memcpy(props->uuid.id, "aruntime-lz-sim", 15);
    props->driverVersion = 1;
    return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ device */

ZE_APIEXPORT ze_result_t zeDeviceGet(ze_driver_handle_t hDriver, uint32_t *pCount,
                                     ze_device_handle_t *phDevices) {
    LZ_CHECK(hDriver, LZ_T_DRIVER);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    uint32_t n = (uint32_t)lz_g_ndevices;
    if (*pCount == 0 || !phDevices) {
        *pCount = n;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > n) *pCount = n;
    for (uint32_t i = 0; i < *pCount; i++) phDevices[i] = (ze_device_handle_t)LZ_HANDLE(lz_g_devices[i]);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t *pCount,
                                               ze_device_handle_t *phSubdevices) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *pCount = 0;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t *p) {
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    lz_unref(&dev->base);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    arsim_device_info info;
    arsim_status st = arsim_device_info_get(dev->index, &info);
    if (st != ARSIM_OK) return lz_status_to_result(st);
    /* stype and pNext belong to the caller: only the body is written. */
    p->type = ZE_DEVICE_TYPE_GPU;
    p->vendorId = 0x1234; /* the id emulators use: this is not real hardware */
    p->deviceId = 0x5a00u + (uint32_t)dev->index;
    p->flags = 0;
    p->subdeviceId = 0;
    p->coreClockRate = 1000; /* MHz */
    p->maxMemAllocSize = info.total_memory;
    p->maxHardwareContexts = 64;
    p->maxCommandQueuePriority = 0;
    p->numThreadsPerEU = 8;
    p->physicalEUSimdWidth = 8;
    /* One slice of compute_units subslices: numSlices * numSubslicesPerSlice
     * is the device's compute-unit count, like SMs on CUDA. */
    p->numEUsPerSubslice = 8;
    p->numSubslicesPerSlice = info.compute_units ? info.compute_units : 1;
    p->numSlices = 1;
    /* Timestamps tick in nanoseconds.  The units of timerResolution follow
     * the caller's stype: nanoseconds per tick for DEVICE_PROPERTIES, ticks
     * per second for DEVICE_PROPERTIES_1_2 (what the Unified Runtime asks). */
    p->timerResolution = p->stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2 ? 1000000000u : 1u;
    p->timestampValidBits = 64;
    p->kernelTimestampValidBits = 64;
    memset(p->uuid.id, 0, sizeof p->uuid.id);
    snprintf((char *)p->uuid.id, sizeof p->uuid.id, "arsim-lz-%d", dev->index);
    memset(p->name, 0, sizeof p->name);
    snprintf(p->name, sizeof p->name, "aruntime levelzero-sim device %d (%s)", dev->index, info.name);
    lz_device_fill_extensions(p->pNext);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t hDevice,
                                                      ze_device_compute_properties_t *p) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    p->maxTotalGroupSize = LZ_MAX_GROUP_SIZE;
    p->maxGroupSizeX = LZ_MAX_GROUP_SIZE;
    p->maxGroupSizeY = LZ_MAX_GROUP_SIZE;
    p->maxGroupSizeZ = 64;
    p->maxGroupCountX = UINT32_MAX;
    p->maxGroupCountY = 65535;
    p->maxGroupCountZ = 65535;
    p->maxSharedLocalMemory = 64 * 1024;
    /* The SPIR-V executor runs sub-groups of SPV_SUBGROUP_SIZE work-items
     * (ffi/sim/spirv/README.md): the one size a kernel can get. */
    p->numSubGroupSizes = 1;
    memset(p->subGroupSizes, 0, sizeof p->subGroupSizes);
    p->subGroupSizes[0] = SPV_SUBGROUP_SIZE;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t hDevice,
                                                     ze_device_module_properties_t *p) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!p) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* SPIR-V runs on the executor (ffi/sim/spirv): versions up to 1.6.  Native
     * modules are host shared objects; the uuid names that format. */
    p->spirvVersionSupported = (1u << 16) | 6u;
    /* FP64: the host's doubles.  FP16: IEEE half, each operation rounded
     * once to nearest even (ffi/sim/spirv/README.md); no fma on halves
     * (OpenCL.std on halves is refused). */
    p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | ZE_DEVICE_MODULE_FLAG_FP64 | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS;
    const ze_flags_t host_fp = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN |
                               ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST | ZE_DEVICE_FP_FLAG_FMA;
    p->fp16flags = ZE_DEVICE_FP_FLAG_DENORM | ZE_DEVICE_FP_FLAG_INF_NAN | ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST;
    p->fp32flags = host_fp;
    p->fp64flags = host_fp;
    p->maxArgumentsSize = AR_KERNEL_MAX_PARAMS * 16;
    p->printfBufferSize = 0;
    memset(p->nativeKernelSupported.id, 0, sizeof p->nativeKernelSupported.id);
    snprintf((char *)p->nativeKernelSupported.id, sizeof p->nativeKernelSupported.id, "arhostabi-v%u",
             AR_HOST_ABI_VERSION);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t *pCount,
                                                     ze_device_memory_properties_t *pMem) {
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    lz_unref(&dev->base);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !pMem) {
        *pCount = 1;
        return ZE_RESULT_SUCCESS;
    }
    arsim_device_info info;
    arsim_status st = arsim_device_info_get(dev->index, &info);
    if (st != ARSIM_OK) return lz_status_to_result(st);
    *pCount = 1;
    pMem[0].flags = 0;
    pMem[0].maxClockRate = 1000;
    pMem[0].maxBusWidth = 64;
    pMem[0].totalSize = info.total_memory;
    memset(pMem[0].name, 0, sizeof pMem[0].name);
    snprintf(pMem[0].name, sizeof pMem[0].name, "sim-host-backed");
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetCommandQueueGroupProperties(
    ze_device_handle_t hDevice, uint32_t *pCount, ze_command_queue_group_properties_t *p) {
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    lz_unref(&dev->base);
    if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (*pCount == 0 || !p) {
        *pCount = LZ_GROUP_COUNT;
        return ZE_RESULT_SUCCESS;
    }
    if (*pCount > LZ_GROUP_COUNT) *pCount = LZ_GROUP_COUNT;
    arsim_device_info info;
    arsim_device_info_get(dev->index, &info);
    for (uint32_t i = 0; i < *pCount; i++) {
        if (i == LZ_GROUP_COMPUTE) {
            /* The render/compute engine also accepts copies, as on Intel GPUs. */
            p[i].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE |
                         ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY |
                         ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS;
            p[i].numQueues = LZ_QUEUES_PER_GROUP;
        } else {
            /* Copy-only group: the engine's copy (DMA) engines. */
            p[i].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
            p[i].numQueues = info.copy_engines ? info.copy_engines : 1;
        }
        p[i].maxMemoryFillPatternSize = 128;
    }
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceGetStatus(ze_device_handle_t hDevice) {
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    ze_result_t r = lz_device_health(dev);
    lz_unref(&dev->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeDeviceGetGlobalTimestamps(ze_device_handle_t hDevice, uint64_t *hostTimestamp,
                                                     uint64_t *deviceTimestamp) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if (!hostTimestamp || !deviceTimestamp) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    /* Host and device share one clock on the sim. */
    uint64_t now = arsim_now_ns();
    *hostTimestamp = now;
    *deviceTimestamp = now;
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeDeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeer,
                                               ze_bool_t *value) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    LZ_CHECK(hPeer, LZ_T_DEVICE);
    if (!value) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    *value = 1; /* all device memory is host memory */
    return ZE_RESULT_SUCCESS;
}

/* ----------------------------------------------------------------- context */

ZE_APIEXPORT ze_result_t zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t *desc,
                                         ze_context_handle_t *phContext) {
    LZ_CHECK(hDriver, LZ_T_DRIVER);
    if (!desc || !phContext) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->stype != ZE_STRUCTURE_TYPE_CONTEXT_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->flags & ~1u) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    lz_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    ctx->base = (lz_obj){.type = LZ_T_CONTEXT, .refs = 1, .finalize = free_plain};
    if (!lz_register(&ctx->base)) {
        free(ctx);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *phContext = (ze_context_handle_t)LZ_HANDLE(ctx);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeContextDestroy(ze_context_handle_t hContext) {
    LZ_GET(ctx, lz_context, hContext, LZ_T_CONTEXT);
    /* Memory still allocated in the context goes with it, so that a
     * forgotten zeMemFree does not leak past the context. */
    arsim_mem_free_owner(ctx->base.id);
    lz_unregister(&ctx->base);
    lz_unref(&ctx->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeContextGetStatus(ze_context_handle_t hContext) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    for (int i = 0; i < lz_g_ndevices; i++)
        if (lz_device_health(lz_g_devices[i]) != ZE_RESULT_SUCCESS) return ZE_RESULT_ERROR_DEVICE_LOST;
    return ZE_RESULT_SUCCESS;
}

/* -------------------------------------------------------------- test hooks */

/* Fault kinds of arze_sim_inject_fault. */
#define ARZE_FAULT_OUT_OF_MEMORY 1 /* next `count` device/shared allocations fail */
#define ARZE_FAULT_KERNEL_ERROR 2  /* next `count` kernels fail (ZE_RESULT_ERROR_UNKNOWN) */
#define ARZE_FAULT_DEVICE_LOST 3   /* next kernel loses the device (sticky DEVICE_LOST) */

/* device -1: every device.  count 0 clears that kind.  0 on success, -1 for
 * a bad device or kind. */
ZE_APIEXPORT int arze_sim_inject_fault(int device, int kind, int count) {
    static const int map[] = {0, ARSIM_FAULT_OUT_OF_MEMORY, ARSIM_FAULT_LAUNCH_FAILED,
                              ARSIM_FAULT_ILLEGAL_ADDRESS};
    if (kind < 1 || kind > 3) return -1;
    return arsim_inject_fault(device, map[kind], count);
}

static void drain_queue(lz_obj *o, void *user) {
    arsim_queue *q = o->type == LZ_T_QUEUE ? ((lz_queue *)o)->q : ((lz_list *)o)->q;
    if (q) (void)arsim_queue_synchronize(q, ARSIM_WAIT_BLOCK);
}

/* Clears pending faults and every device's lost state, then waits for every
 * queue and drops the errors they still hold (the engine's device reset
 * leaves a queue's pending error behind, which would otherwise fail the
 * first signal after recovery). */
ZE_APIEXPORT void arze_sim_clear_faults(void) {
    arsim_clear_faults();
    lz_foreach(LZ_T_QUEUE, drain_queue, NULL);
    lz_foreach(LZ_T_LIST, drain_queue, NULL);
}

/* Live handles of one kind (1 driver ... 11 kernel, see lz_registry.h), for
 * leak checks. */
ZE_APIEXPORT uint64_t arze_sim_live_handles(int kind) {
    return (kind > 0 && kind < LZ_T_COUNT) ? lz_live_count((lz_type)kind) : 0;
}

ZE_APIEXPORT void arze_sim_set_timing(double copy_gbps, double op_latency_us) {
    arsim_set_timing(copy_gbps, op_latency_us);
}

/* The engine's view: queues not yet gone, and engine threads started. */
ZE_APIEXPORT int arze_sim_live_queues(void) { return arsim_live_queues(); }
ZE_APIEXPORT int arze_sim_engine_threads(void) { return arsim_engine_threads(); }
