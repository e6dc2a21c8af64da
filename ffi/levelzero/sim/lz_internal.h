/* Objects of the software Level Zero driver, built on the shared simulated
 * device (ffi/sim/engine.h). */
#ifndef ARZE_LZ_INTERNAL_H
#define ARZE_LZ_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "../../sim/engine.h"
#include "lz_registry.h"
#include "ze_abi.h"

#define ZE_APIEXPORT __attribute__((visibility("default")))
#define LZ_HIDDEN __attribute__((visibility("hidden")))

/* Queue group ordinals every device reports. */
#define LZ_GROUP_COMPUTE 0u
#define LZ_GROUP_COPY 1u
#define LZ_GROUP_COUNT 2u
#define LZ_QUEUES_PER_GROUP 4u
#define LZ_MAX_GROUP_SIZE 1024u
#define LZ_MAX_DEVICES 64
/* The device IP version (ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT), in
 * Intel's GMD-ID layout (architecture << 22 | release << 14 | revision):
 * 12.0.0, Xe-LP (Tiger Lake), which SYCL's device architecture query names
 * intel_gpu_tgllp.  The sim is no Intel GPU; this is the plainest Xe one, with
 * no matrix engines (DPAS/XMX), so that oneMKL and other libraries pick
 * their generic kernels rather than refuse an unknown architecture. */
#define LZ_SIM_IP_VERSION ((12u << 22) | (0u << 14) | 0u)

typedef struct lz_driver {
    lz_obj base;
} lz_driver;

typedef struct lz_device {
    lz_obj base;
    int index; /* engine device index */
} lz_device;

typedef struct lz_context {
    lz_obj base;
} lz_context;

typedef struct lz_event_pool lz_event_pool;

typedef struct lz_event {
    lz_obj base;
    lz_event_pool *pool; /* reference held */
    uint32_t index;
    bool timestamps;
    arsim_event *done;  /* the Level Zero signaled state */
    arsim_event *start; /* signaled just before the op runs (timestamp pools) */
    uint64_t host_signal_ns; /* when signaled from the host; 0 otherwise */
    int forced; /* ze_result_t of a signal the engine refused (device lost); atomic */
} lz_event;

struct lz_event_pool {
    lz_obj base;
    uint32_t flags;
    uint32_t count;
    pthread_mutex_t lock;
    lz_event **events; /* count slots, weak: an event clears its slot when it dies */
};

typedef struct lz_fence {
    lz_obj base;
    arsim_event *ev;
    int forced; /* as lz_event.forced */
} lz_fence;

typedef struct lz_queue {
    lz_obj base;
    lz_device *device;
    uint32_t ordinal;
    uint32_t mode;
    arsim_queue *q;
} lz_queue;

typedef struct lz_list {
    lz_obj base;
    lz_device *device;
    uint32_t ordinal;
    bool immediate;
    uint32_t mode; /* immediate lists: synchronous or not */
    pthread_mutex_t lock;
    arsim_queue *q;   /* immediate lists */
    arsim_graph *g;   /* regular lists */
    bool closed;      /* regular lists */
    lz_obj **held;    /* events and kernels a regular list refers to */
    size_t nheld, capheld;
} lz_list;

typedef struct lz_module {
    lz_obj base;
    arsim_module *m;
    bool spirv; /* a SPIR-V module: m's foreign context is its spv_program */
} lz_module;

typedef struct lz_build_log {
    lz_obj base;
    char *text;
} lz_build_log;

typedef struct lz_kernel {
    lz_obj base;
    lz_module *module; /* reference held */
    const arsim_kernel *k;
    char *name;
    pthread_mutex_t lock;
    uint32_t group[3];
    uint8_t *args; /* packed argument values, offsets[i] each */
    size_t offsets[AR_KERNEL_MAX_PARAMS];
    uint64_t set_mask[AR_KERNEL_MAX_PARAMS / 64]; /* bit i: argument i was set */
    ze_flags_t indirect; /* zeKernelSetIndirectAccess: recorded, nothing to do */
} lz_kernel;

/* State shared by the translation units. */
LZ_HIDDEN extern lz_driver *lz_g_driver;
LZ_HIDDEN extern lz_device *lz_g_devices[LZ_MAX_DEVICES];
LZ_HIDDEN extern int lz_g_ndevices;

LZ_HIDDEN bool lz_initialized(void);
/* Fills the extension structs of zeDeviceGetProperties' pNext chain. */
LZ_HIDDEN void lz_device_fill_extensions(void *pNext);
LZ_HIDDEN ze_result_t lz_status_to_result(arsim_status s);
/* ZE_RESULT_ERROR_DEVICE_LOST if the device is poisoned, else SUCCESS. */
LZ_HIDDEN ze_result_t lz_device_health(const lz_device *d);

/* Typed lookups: NULL handle -> INVALID_NULL_HANDLE, unknown or destroyed
 * handle -> INVALID_NULL_HANDLE as the validation layer's handle lifetime
 * checks do.  On success the caller owns a reference (lz_unref it). */
/* In a forked child every call is refused before the registry's lock,
 * which a thread that did not survive the fork may hold. */
#define LZ_GET(var, T, handle, type)                                       \
    if (arsim_forked()) return ZE_RESULT_ERROR_UNINITIALIZED;              \
    T *var = (T *)lz_lookup((const void *)(handle), (type));               \
    if (!var) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE

/* Checks that `handle` names a live object of `type`, with LZ_GET's return
 * if not, keeping no reference (a handle that is only validated). */
#define LZ_CHECK(handle, type)                                             \
    do {                                                                   \
        if (arsim_forked()) return ZE_RESULT_ERROR_UNINITIALIZED;          \
        lz_obj *lz_check_ = lz_lookup((const void *)(handle), (type));     \
        if (!lz_check_) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;        \
        lz_unref(lz_check_);                                               \
    } while (0)

LZ_HIDDEN arsim_wait_mode lz_wait_mode(void);
/* Signals an event or fence whose signal op the engine refused (its device
 * was lost meanwhile), so that waiters get `r` instead of hanging. */
LZ_HIDDEN void lz_force_signal(arsim_event *ev, int *forced, ze_result_t r);
/* Level Zero timeouts (ns, UINT64_MAX = forever) to the engine's. */
LZ_HIDDEN int64_t lz_timeout(uint64_t timeout_ns);

#endif
