/* Event pools, events and fences. */
#include <stdlib.h>
#include <string.h>

#include "lz_internal.h"

#define POOL_FLAGS_KNOWN 0xfu

static ze_result_t wait_result(arsim_status st, const int *forced) {
    if (st == ARSIM_ERR_TIMEOUT) return ZE_RESULT_NOT_READY;
    if (st == ARSIM_OK) {
        int f = __atomic_load_n(forced, __ATOMIC_ACQUIRE);
        if (f) return (ze_result_t)f;
    }
    return lz_status_to_result(st);
}

void lz_force_signal(arsim_event *ev, int *forced, ze_result_t r) {
    __atomic_store_n(forced, (int)r, __ATOMIC_RELEASE);
    arsim_event_host_signal(ev);
}

/* ------------------------------------------------------------- event pool */

static void pool_finalize(lz_obj *o) {
    lz_event_pool *p = (lz_event_pool *)o;
    pthread_mutex_destroy(&p->lock);
    free(p->events);
    free(p);
}

ZE_APIEXPORT ze_result_t zeEventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t *desc,
                                           uint32_t numDevices, ze_device_handle_t *phDevices,
                                           ze_event_pool_handle_t *phEventPool) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    if (!desc || !phEventPool) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (desc->stype != ZE_STRUCTURE_TYPE_EVENT_POOL_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->flags & ~POOL_FLAGS_KNOWN) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->count == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (numDevices && !phDevices) return ZE_RESULT_ERROR_INVALID_SIZE;
    for (uint32_t i = 0; i < numDevices; i++) LZ_CHECK(phDevices[i], LZ_T_DEVICE);
    lz_event_pool *p = calloc(1, sizeof *p);
    if (!p) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    p->events = calloc(desc->count, sizeof *p->events);
    if (!p->events) {
        free(p);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    p->base = (lz_obj){.type = LZ_T_POOL, .refs = 1, .finalize = pool_finalize};
    p->flags = desc->flags;
    p->count = desc->count;
    pthread_mutex_init(&p->lock, NULL);
    if (!lz_register(&p->base)) {
        pool_finalize(&p->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *phEventPool = (ze_event_pool_handle_t)LZ_HANDLE(p);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t hEventPool) {
    LZ_GET(p, lz_event_pool, hEventPool, LZ_T_POOL);
    /* Events still alive die with their pool, so their handles are rejected
     * from now on instead of pointing into a destroyed pool. */
    pthread_mutex_lock(&p->lock);
    for (uint32_t i = 0; i < p->count; i++) {
        lz_event *e = p->events[i];
        p->events[i] = NULL;
        if (e) lz_unregister(&e->base);
    }
    pthread_mutex_unlock(&p->lock);
    lz_unregister(&p->base);
    lz_unref(&p->base);
    return ZE_RESULT_SUCCESS;
}

/* ------------------------------------------------------------------ event */

static void event_finalize(lz_obj *o) {
    lz_event *e = (lz_event *)o;
    if (e->done) arsim_event_release(e->done);
    if (e->start) arsim_event_release(e->start);
    if (e->pool) lz_unref(&e->pool->base);
    free(e);
}

ZE_APIEXPORT ze_result_t zeEventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t *desc,
                                       ze_event_handle_t *phEvent) {
    LZ_GET(p, lz_event_pool, hEventPool, LZ_T_POOL);
    ze_result_t r = ZE_RESULT_SUCCESS;
    lz_event *e = NULL;
    if (!desc || !phEvent) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_EVENT_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if ((desc->signal | desc->wait) & ~7u) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else if (desc->index >= p->count) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (r != ZE_RESULT_SUCCESS) goto out;
    e = calloc(1, sizeof *e);
    if (!e) {
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    e->base = (lz_obj){.type = LZ_T_EVENT, .refs = 1, .finalize = event_finalize};
    e->index = desc->index;
    e->timestamps = (p->flags & (ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP |
                                 ZE_EVENT_POOL_FLAG_KERNEL_MAPPED_TIMESTAMP)) != 0;
    unsigned eflags = e->timestamps ? ARSIM_EVENT_TIMING : 0;
    if (arsim_event_create(eflags, &e->done) != ARSIM_OK ||
        (e->timestamps && arsim_event_create(eflags, &e->start) != ARSIM_OK)) {
        event_finalize(&e->base);
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    pthread_mutex_lock(&p->lock);
    if (p->events[desc->index]) {
        /* Two live events on one slot would share its memory on a GPU. */
        pthread_mutex_unlock(&p->lock);
        event_finalize(&e->base);
        r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
        goto out;
    }
    lz_ref(&p->base);
    e->pool = p;
    if (!lz_register(&e->base)) {
        pthread_mutex_unlock(&p->lock);
        event_finalize(&e->base);
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    p->events[desc->index] = e;
    pthread_mutex_unlock(&p->lock);
    *phEvent = (ze_event_handle_t)LZ_HANDLE(e);
out:
    lz_unref(&p->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeEventDestroy(ze_event_handle_t hEvent) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    lz_event_pool *p = e->pool;
    pthread_mutex_lock(&p->lock);
    if (p->events[e->index] == e) p->events[e->index] = NULL;
    lz_unregister(&e->base);
    pthread_mutex_unlock(&p->lock);
    /* Ops already queued hold their own references on the engine events. */
    lz_unref(&e->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeEventHostSignal(ze_event_handle_t hEvent) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    __atomic_store_n(&e->host_signal_ns, arsim_now_ns(), __ATOMIC_RELEASE);
    arsim_event_host_signal(e->done);
    lz_unref(&e->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeEventHostReset(ze_event_handle_t hEvent) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    __atomic_store_n(&e->host_signal_ns, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->forced, 0, __ATOMIC_RELEASE);
    arsim_event_host_reset(e->done);
    lz_unref(&e->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeEventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    /* UINT64_MAX waits forever; 0 only queries. */
    arsim_status st = arsim_event_wait_signaled(e->done, lz_wait_mode(), lz_timeout(timeout));
    ze_result_t r = wait_result(st, &e->forced);
    lz_unref(&e->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeEventQueryStatus(ze_event_handle_t hEvent) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    arsim_status st = arsim_event_wait_signaled(e->done, ARSIM_WAIT_SPIN, 0);
    ze_result_t r = wait_result(st, &e->forced);
    lz_unref(&e->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeEventQueryKernelTimestamp(ze_event_handle_t hEvent,
                                                     ze_kernel_timestamp_result_t *dst) {
    LZ_GET(e, lz_event, hEvent, LZ_T_EVENT);
    ze_result_t r = ZE_RESULT_SUCCESS;
    uint64_t start = 0, end = 0;
    if (!dst) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (!e->timestamps) r = ZE_RESULT_ERROR_INVALID_ARGUMENT; /* pool lacks KERNEL_TIMESTAMP */
    else if (!arsim_event_is_signaled(e->done)) r = ZE_RESULT_NOT_READY;
    else {
        uint64_t host = __atomic_load_n(&e->host_signal_ns, __ATOMIC_ACQUIRE);
        if (host) {
            start = end = host;
        } else if (arsim_event_timestamp(e->done, &end) != ARSIM_OK) {
            r = ZE_RESULT_NOT_READY;
        } else if (arsim_event_timestamp(e->start, &start) != ARSIM_OK || start > end) {
            start = end; /* a bare signal: no op ran before it */
        }
    }
    if (r == ZE_RESULT_SUCCESS) {
        dst->global.kernelStart = start;
        dst->global.kernelEnd = end;
        dst->context.kernelStart = start;
        dst->context.kernelEnd = end;
    }
    lz_unref(&e->base);
    return r;
}

/* ------------------------------------------------------------------ fence */

static void fence_finalize(lz_obj *o) {
    lz_fence *f = (lz_fence *)o;
    if (f->ev) arsim_event_release(f->ev);
    free(f);
}

ZE_APIEXPORT ze_result_t zeFenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t *desc,
                                       ze_fence_handle_t *phFence) {
    LZ_GET(q, lz_queue, hCommandQueue, LZ_T_QUEUE);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!desc || !phFence) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_FENCE_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if (desc->flags & ~(uint32_t)ZE_FENCE_FLAG_SIGNALED) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (r == ZE_RESULT_SUCCESS) {
        lz_fence *f = calloc(1, sizeof *f);
        if (!f || arsim_event_create(0, &f->ev) != ARSIM_OK) {
            free(f);
            r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        } else {
            f->base = (lz_obj){.type = LZ_T_FENCE, .refs = 1, .finalize = fence_finalize};
            if (desc->flags & ZE_FENCE_FLAG_SIGNALED) arsim_event_host_signal(f->ev);
            if (!lz_register(&f->base)) {
                fence_finalize(&f->base);
                r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
            } else {
                *phFence = (ze_fence_handle_t)LZ_HANDLE(f);
            }
        }
    }
    lz_unref(&q->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeFenceDestroy(ze_fence_handle_t hFence) {
    LZ_GET(f, lz_fence, hFence, LZ_T_FENCE);
    lz_unregister(&f->base);
    lz_unref(&f->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeFenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout) {
    LZ_GET(f, lz_fence, hFence, LZ_T_FENCE);
    arsim_status st = arsim_event_wait_signaled(f->ev, lz_wait_mode(), lz_timeout(timeout));
    ze_result_t r = wait_result(st, &f->forced);
    lz_unref(&f->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeFenceQueryStatus(ze_fence_handle_t hFence) {
    LZ_GET(f, lz_fence, hFence, LZ_T_FENCE);
    arsim_status st = arsim_event_wait_signaled(f->ev, ARSIM_WAIT_SPIN, 0);
    ze_result_t r = wait_result(st, &f->forced);
    lz_unref(&f->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeFenceReset(ze_fence_handle_t hFence) {
    LZ_GET(f, lz_fence, hFence, LZ_T_FENCE);
    __atomic_store_n(&f->forced, 0, __ATOMIC_RELEASE);
    arsim_event_host_reset(f->ev);
    lz_unref(&f->base);
    return ZE_RESULT_SUCCESS;
}
