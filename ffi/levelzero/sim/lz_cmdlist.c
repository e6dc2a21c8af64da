/* Command queues, command lists (immediate and regular) and their appends.
 *
 * An immediate list owns an engine queue (a thread) and submits each append
 * at once.  A regular list records its appends into an engine graph; a
 * command queue replays the graphs of closed lists on its own engine queue,
 * as often as zeCommandQueueExecuteCommandLists is called. */
#include <stdlib.h>
#include <string.h>

#include "../../sim/spirv/spv.h"
#include "lz_internal.h"

/* --------------------------------------------------------------- helpers */

static ze_result_t check_ordinal(uint32_t ordinal) {
    return ordinal < LZ_GROUP_COUNT ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_ARGUMENT;
}

static uint32_t group_queues(const lz_device *d, uint32_t ordinal) {
    if (ordinal == LZ_GROUP_COMPUTE) return LZ_QUEUES_PER_GROUP;
    arsim_device_info info;
    if (arsim_device_info_get(d->index, &info) != ARSIM_OK || !info.copy_engines) return 1;
    return info.copy_engines;
}

static ze_result_t check_queue_desc(const lz_device *d, const ze_command_queue_desc_t *desc) {
    if (desc->stype != ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->flags & ~1u) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (desc->priority > 2) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    if (check_ordinal(desc->ordinal) != ZE_RESULT_SUCCESS) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (desc->index >= group_queues(d, desc->ordinal)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return ZE_RESULT_SUCCESS;
}

/* Engine priority: Level Zero's LOW (1) and HIGH (2) around NORMAL (0). */
static int engine_priority(uint32_t p) { return p == 2 ? -1 : p == 1 ? 1 : 0; }

/* ------------------------------------------------------------ queue object */

static void queue_finalize(lz_obj *o) {
    lz_queue *q = (lz_queue *)o;
    if (q->q) arsim_queue_destroy(q->q); /* queued work still runs */
    if (q->device) lz_unref(&q->device->base);
    free(q);
}

ZE_APIEXPORT ze_result_t zeCommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                              const ze_command_queue_desc_t *desc,
                                              ze_command_queue_handle_t *phCommandQueue) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    ze_result_t r = ZE_RESULT_SUCCESS;
    if (!desc || !phCommandQueue) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else r = check_queue_desc(dev, desc);
    if (r == ZE_RESULT_SUCCESS) r = lz_device_health(dev);
    if (r != ZE_RESULT_SUCCESS) {
        lz_unref(&dev->base);
        return r;
    }
    lz_queue *q = calloc(1, sizeof *q);
    if (!q) {
        lz_unref(&dev->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    q->base = (lz_obj){.type = LZ_T_QUEUE, .refs = 1, .finalize = queue_finalize};
    q->device = dev; /* keeps the lookup's reference */
    q->ordinal = desc->ordinal;
    q->mode = desc->mode;
    arsim_status st = arsim_queue_create(dev->index, engine_priority(desc->priority), &q->q);
    if (st != ARSIM_OK) {
        q->q = NULL;
        queue_finalize(&q->base);
        return st == ARSIM_ERR_OUT_OF_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY : lz_status_to_result(st);
    }
    if (!lz_register(&q->base)) {
        queue_finalize(&q->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *phCommandQueue = (ze_command_queue_handle_t)LZ_HANDLE(q);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeCommandQueueDestroy(ze_command_queue_handle_t hCommandQueue) {
    LZ_GET(q, lz_queue, hCommandQueue, LZ_T_QUEUE);
    lz_unregister(&q->base);
    lz_unref(&q->base);
    return ZE_RESULT_SUCCESS;
}

/* Waits for an engine queue with a Level Zero timeout (UINT64_MAX forever,
 * 0 a query) and returns the queue's pending error if any. */
static ze_result_t sync_engine_queue(arsim_queue *eq, int device, uint64_t timeout) {
    arsim_status st;
    if (timeout == UINT64_MAX) {
        st = arsim_queue_synchronize(eq, lz_wait_mode());
    } else if (arsim_queue_query(eq) == ARSIM_OK) {
        st = arsim_queue_synchronize(eq, lz_wait_mode()); /* idle: only collects the error */
    } else if (timeout == 0) {
        return ZE_RESULT_NOT_READY;
    } else {
        /* A marker event that completes after everything queued so far; the
         * engine hands a pending error to it as to any signal. */
        arsim_event *ev = NULL;
        if (arsim_event_create(0, &ev) != ARSIM_OK) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        st = arsim_queue_submit(eq, arsim_op_event_signal(ev), NULL);
        if (st == ARSIM_OK) st = arsim_event_wait_signaled(ev, lz_wait_mode(), lz_timeout(timeout));
        arsim_event_release(ev);
    }
    if (st == ARSIM_ERR_TIMEOUT) return ZE_RESULT_NOT_READY;
    if (st == ARSIM_OK && arsim_device_sticky(device) != ARSIM_OK) return ZE_RESULT_ERROR_DEVICE_LOST;
    return lz_status_to_result(st);
}

ZE_APIEXPORT ze_result_t zeCommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue, uint64_t timeout) {
    LZ_GET(q, lz_queue, hCommandQueue, LZ_T_QUEUE);
    ze_result_t r = sync_engine_queue(q->q, q->device->index, timeout);
    lz_unref(&q->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue,
                                                           uint32_t numCommandLists,
                                                           ze_command_list_handle_t *phCommandLists,
                                                           ze_fence_handle_t hFence) {
    LZ_GET(q, lz_queue, hCommandQueue, LZ_T_QUEUE);
    ze_result_t r = ZE_RESULT_SUCCESS;
    lz_fence *fence = NULL;
    lz_list **lists = NULL;
    uint32_t got = 0;
    if (!phCommandLists) {
        r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        goto out;
    }
    if (numCommandLists == 0) {
        r = ZE_RESULT_ERROR_INVALID_SIZE;
        goto out;
    }
    if (hFence) {
        fence = (lz_fence *)lz_lookup(hFence, LZ_T_FENCE);
        if (!fence) {
            r = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
            goto out;
        }
    }
    lists = calloc(numCommandLists, sizeof *lists);
    if (!lists) {
        r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        goto out;
    }
    for (; got < numCommandLists; got++) {
        lz_list *l = (lz_list *)lz_lookup(phCommandLists[got], LZ_T_LIST);
        if (!l) {
            r = ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
            goto out;
        }
        lists[got] = l;
        if (l->immediate || l->ordinal != q->ordinal || l->device != q->device) {
            got++;
            r = ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
            goto out;
        }
        pthread_mutex_lock(&l->lock);
        bool closed = l->closed;
        pthread_mutex_unlock(&l->lock);
        if (!closed) { /* a list must be closed before it is executed */
            got++;
            r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
            goto out;
        }
    }
    r = lz_device_health(q->device);
    if (r != ZE_RESULT_SUCCESS) goto out;
    for (uint32_t i = 0; i < numCommandLists; i++) {
        lz_list *l = lists[i];
        pthread_mutex_lock(&l->lock);
        arsim_status st = arsim_queue_submit_graph(q->q, l->g);
        pthread_mutex_unlock(&l->lock);
        if (st != ARSIM_OK) {
            r = lz_status_to_result(st);
            /* Lists already queued still run; the fence must not hang. */
            if (fence) lz_force_signal(fence->ev, &fence->forced, r);
            goto out;
        }
    }
    if (fence) {
        arsim_status st = arsim_queue_submit(q->q, arsim_op_event_signal(fence->ev), NULL);
        if (st != ARSIM_OK) {
            /* The lists were queued; the device was lost under them. */
            lz_force_signal(fence->ev, &fence->forced, lz_status_to_result(st));
            goto out;
        }
    }
    if (q->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS) r = sync_engine_queue(q->q, q->device->index, UINT64_MAX);
out:
    for (uint32_t i = 0; i < got; i++)
        if (lists[i]) lz_unref(&lists[i]->base);
    free(lists);
    if (fence) lz_unref(&fence->base);
    lz_unref(&q->base);
    return r;
}

/* ------------------------------------------------------------ list object */

static void list_finalize(lz_obj *o) {
    lz_list *l = (lz_list *)o;
    if (l->q) arsim_queue_destroy(l->q);
    if (l->g) arsim_graph_destroy(l->g);
    if (l->device) lz_unref(&l->device->base);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static ze_result_t list_new(lz_device *dev, uint32_t ordinal, bool immediate, uint32_t mode,
                            int priority, ze_command_list_handle_t *out) {
    lz_list *l = calloc(1, sizeof *l);
    if (!l) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    l->base = (lz_obj){.type = LZ_T_LIST, .refs = 1, .finalize = list_finalize};
    pthread_mutex_init(&l->lock, NULL);
    lz_ref(&dev->base);
    l->device = dev;
    l->ordinal = ordinal;
    l->immediate = immediate;
    l->mode = mode;
    arsim_status st = immediate ? arsim_queue_create(dev->index, priority, &l->q) : arsim_graph_create(&l->g);
    if (st != ARSIM_OK) {
        l->q = NULL;
        l->g = NULL;
        list_finalize(&l->base);
        return st == ARSIM_ERR_OUT_OF_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY : lz_status_to_result(st);
    }
    if (!lz_register(&l->base)) {
        list_finalize(&l->base);
        return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    *out = (ze_command_list_handle_t)LZ_HANDLE(l);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeCommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                             const ze_command_list_desc_t *desc,
                                             ze_command_list_handle_t *phCommandList) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    ze_result_t r;
    if (!desc || !phCommandList) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if (desc->stype != ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    else if (desc->flags & ~0xfu) r = ZE_RESULT_ERROR_INVALID_ENUMERATION;
    else if ((r = check_ordinal(desc->commandQueueGroupOrdinal)) != ZE_RESULT_SUCCESS) {
    } else r = list_new(dev, desc->commandQueueGroupOrdinal, false, 0, 0, phCommandList);
    lz_unref(&dev->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeCommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                      const ze_command_queue_desc_t *altdesc,
                                                      ze_command_list_handle_t *phCommandList) {
    LZ_CHECK(hContext, LZ_T_CONTEXT);
    LZ_GET(dev, lz_device, hDevice, LZ_T_DEVICE);
    ze_result_t r;
    if (!altdesc || !phCommandList) r = ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    else if ((r = check_queue_desc(dev, altdesc)) != ZE_RESULT_SUCCESS) {
    } else if ((r = lz_device_health(dev)) != ZE_RESULT_SUCCESS) {
    } else
        r = list_new(dev, altdesc->ordinal, true, altdesc->mode, engine_priority(altdesc->priority),
                     phCommandList);
    lz_unref(&dev->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeCommandListDestroy(ze_command_list_handle_t hCommandList) {
    LZ_GET(l, lz_list, hCommandList, LZ_T_LIST);
    lz_unregister(&l->base);
    lz_unref(&l->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeCommandListClose(ze_command_list_handle_t hCommandList) {
    LZ_GET(l, lz_list, hCommandList, LZ_T_LIST);
    pthread_mutex_lock(&l->lock);
    if (!l->immediate) l->closed = true;
    pthread_mutex_unlock(&l->lock);
    lz_unref(&l->base);
    return ZE_RESULT_SUCCESS;
}

ZE_APIEXPORT ze_result_t zeCommandListReset(ze_command_list_handle_t hCommandList) {
    LZ_GET(l, lz_list, hCommandList, LZ_T_LIST);
    ze_result_t r = ZE_RESULT_SUCCESS;
    pthread_mutex_lock(&l->lock);
    if (!l->immediate) {
        /* Executions already submitted hold copies of the ops. */
        arsim_graph *g = NULL;
        if (arsim_graph_create(&g) != ARSIM_OK) {
            r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        } else {
            arsim_graph_destroy(l->g);
            l->g = g;
            l->closed = false;
        }
    }
    pthread_mutex_unlock(&l->lock);
    lz_unref(&l->base);
    return r;
}

/* --------------------------------------------------------------- appends */

typedef struct {
    lz_list *list;
    lz_event *signal;
    lz_event *waits[16];
    lz_event **wait;
    uint32_t nwait;
} append_ctx;

static void append_release(append_ctx *a) {
    for (uint32_t i = 0; i < a->nwait; i++)
        if (a->wait[i]) lz_unref(&a->wait[i]->base);
    if (a->wait && a->wait != a->waits) free(a->wait);
    if (a->signal) lz_unref(&a->signal->base);
    if (a->list) lz_unref(&a->list->base);
}

/* Looks up the list and the events of one append. */
static ze_result_t append_begin(append_ctx *a, ze_command_list_handle_t hList, ze_event_handle_t hSignal,
                                uint32_t nwait, ze_event_handle_t *phWait) {
    memset(a, 0, sizeof *a);
    a->list = (lz_list *)lz_lookup(hList, LZ_T_LIST);
    if (!a->list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (nwait && !phWait) return ZE_RESULT_ERROR_INVALID_SIZE;
    if (hSignal) {
        a->signal = (lz_event *)lz_lookup(hSignal, LZ_T_EVENT);
        if (!a->signal) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    a->wait = nwait <= 16 ? a->waits : calloc(nwait, sizeof *a->wait);
    if (!a->wait) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    for (; a->nwait < nwait; a->nwait++) {
        a->wait[a->nwait] = (lz_event *)lz_lookup(phWait[a->nwait], LZ_T_EVENT);
        if (!a->wait[a->nwait]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    }
    if (!a->list->immediate && a->list->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    return lz_device_health(a->list->device);
}

/* Queues (immediate) or records (regular) one engine op; takes ownership. */
static arsim_status emit(lz_list *l, arsim_op *op) {
    if (!op) return ARSIM_ERR_OUT_OF_MEMORY;
    if (l->immediate) return arsim_queue_submit(l->q, op, NULL);
    return arsim_graph_append(l->g, op);
}

/* Emits: waits, [start timestamp], the ops (none for a bare wait/signal),
 * signal.  Takes ownership of the ops and releases the append's references.
 *
 * On an immediate list the device can be lost between two submits of one
 * append (a kernel submitted first may poison it at once), and the engine
 * then refuses the rest, signal included.  Once anything was submitted the
 * append has happened, as on a GPU: the loss is reported through the signal
 * event (forced), never by leaving its waiters hanging. */
static ze_result_t append_commit_ops(append_ctx *a, arsim_op **ops, size_t nops) {
    lz_list *l = a->list;
    arsim_status st = ARSIM_OK;
    bool any = false;
    size_t next = 0; /* ops[next..] not yet handed to the engine */
    pthread_mutex_lock(&l->lock);
    if (!l->immediate && l->closed) {
        st = ARSIM_ERR_INVALID_VALUE;
        goto unlock;
    }
    for (uint32_t i = 0; i < a->nwait && st == ARSIM_OK; i++)
        if ((st = emit(l, arsim_op_event_wait_signaled(a->wait[i]->done))) == ARSIM_OK) any = true;
    if (st == ARSIM_OK && nops && a->signal && a->signal->timestamps)
        if ((st = emit(l, arsim_op_event_signal(a->signal->start))) == ARSIM_OK) any = true;
    for (; next < nops && st == ARSIM_OK; next++)
        if ((st = emit(l, ops[next])) == ARSIM_OK) any = true;
    if (st == ARSIM_OK && a->signal) st = emit(l, arsim_op_event_signal(a->signal->done));
unlock:
    pthread_mutex_unlock(&l->lock);
    for (; next < nops; next++)
        if (ops[next]) arsim_op_free(ops[next]);
    if (st == ARSIM_ERR_INVALID_VALUE && !any) {
        append_release(a);
        return ZE_RESULT_ERROR_INVALID_ARGUMENT; /* closed meanwhile */
    }
    if (st != ARSIM_OK && any && l->immediate) {
        ze_result_t lost = lz_status_to_result(st);
        if (a->signal) lz_force_signal(a->signal->done, &a->signal->forced, lost);
        st = ARSIM_OK;
    }
    if (st == ARSIM_OK && l->immediate && l->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS)
        st = arsim_queue_synchronize(l->q, lz_wait_mode());
    append_release(a);
    if (st == ARSIM_ERR_OUT_OF_MEMORY) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    return lz_status_to_result(st);
}

static ze_result_t append_commit(append_ctx *a, arsim_op *op) {
    if (!op) return append_commit_ops(a, NULL, 0);
    return append_commit_ops(a, &op, 1);
}

static ze_result_t append_fail(append_ctx *a, ze_result_t r) {
    append_release(a);
    return r;
}

static bool is_device_side(const void *p, arsim_alloc *a, bool *known) {
    *known = arsim_mem_lookup(p, a) == ARSIM_OK;
    return *known && (a->kind & (ARSIM_MEM_DEVICE | ARSIM_MEM_MANAGED));
}

/* A range inside a known allocation must stay inside it: the sim's device
 * memory is host memory, and running off its end would corrupt the process. */
static bool range_ok(const void *p, size_t n, const arsim_alloc *a, bool known) {
    if (!known) return true;
    uintptr_t base = (uintptr_t)a->base, q = (uintptr_t)p;
    return q >= base && n <= a->size && q - base <= a->size - n;
}

static arsim_copy_dir copy_dir(bool dst_dev, bool src_dev) {
    if (dst_dev && src_dev) return ARSIM_COPY_D2D;
    if (dst_dev) return ARSIM_COPY_H2D;
    if (src_dev) return ARSIM_COPY_D2H;
    return ARSIM_COPY_H2H;
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void *dstptr,
                                                       const void *srcptr, size_t size,
                                                       ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                       ze_event_handle_t *phWaitEvents) {
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    if (!dstptr || !srcptr) return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    if (size == 0) return append_commit(&a, NULL); /* nothing to move; still orders and signals */
    uintptr_t d = (uintptr_t)dstptr, s = (uintptr_t)srcptr;
    if ((d < s + size) && (s < d + size)) return append_fail(&a, ZE_RESULT_ERROR_OVERLAPPING_REGIONS);
    arsim_alloc da, sa;
    bool dk, sk;
    bool dd = is_device_side(dstptr, &da, &dk), sd = is_device_side(srcptr, &sa, &sk);
    if (!range_ok(dstptr, size, &da, dk) || !range_ok(srcptr, size, &sa, sk))
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    if (dd && sd && da.device != sa.device) {
        /* Two devices' memory: a peer copy, on the copy engines of both.  A
         * third device's list is not modeled: refused, never run wrongly. */
        int mine = a.list->device->index;
        if (mine != da.device && mine != sa.device) return append_fail(&a, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        return append_commit(&a, arsim_op_copy_peer(dstptr, da.device, srcptr, sa.device, size));
    }
    return append_commit(&a, arsim_op_copy(dstptr, srcptr, size, copy_dir(dd, sd)));
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemoryCopyRegion(
    ze_command_list_handle_t hCommandList, void *dstptr, const ze_copy_region_t *dstRegion, uint32_t dstPitch,
    uint32_t dstSlicePitch, const void *srcptr, const ze_copy_region_t *srcRegion, uint32_t srcPitch,
    uint32_t srcSlicePitch, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
    ze_event_handle_t *phWaitEvents) {
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    if (!dstptr || !srcptr || !dstRegion || !srcRegion) return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    const ze_copy_region_t *dr = dstRegion, *sr = srcRegion;
    uint32_t depth = dr->depth ? dr->depth : 1;
    if (dr->width != sr->width || dr->height != sr->height || (sr->depth ? sr->depth : 1) != depth)
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_ARGUMENT);
    if (dr->width == 0 || dr->height == 0) return append_commit(&a, NULL);
    if ((uint64_t)dr->originX + dr->width > dstPitch || (uint64_t)sr->originX + sr->width > srcPitch)
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    if (depth > 1 && ((uint64_t)dstSlicePitch < (uint64_t)dstPitch * (dr->originY + dr->height) ||
                      (uint64_t)srcSlicePitch < (uint64_t)srcPitch * (sr->originY + sr->height)))
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    uint8_t *d0 = (uint8_t *)dstptr + (size_t)dr->originZ * dstSlicePitch + (size_t)dr->originY * dstPitch + dr->originX;
    const uint8_t *s0 =
        (const uint8_t *)srcptr + (size_t)sr->originZ * srcSlicePitch + (size_t)sr->originY * srcPitch + sr->originX;
    /* The whole footprint (first byte to last byte touched) must stay in bounds. */
    size_t dspan = (size_t)(depth - 1) * dstSlicePitch + (size_t)(dr->height - 1) * dstPitch + dr->width;
    size_t sspan = (size_t)(depth - 1) * srcSlicePitch + (size_t)(sr->height - 1) * srcPitch + sr->width;
    arsim_alloc da, sa;
    bool dk, sk;
    bool dd = is_device_side(dstptr, &da, &dk), sd = is_device_side(srcptr, &sa, &sk);
    if (!range_ok(d0, dspan, &da, dk) || !range_ok(s0, sspan, &sa, sk))
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    arsim_copy_dir dir = copy_dir(dd, sd);
    if (depth == 1) return append_commit(&a, arsim_op_copy2d(d0, dstPitch, s0, srcPitch, dr->width, dr->height, dir));
    /* 3D: one 2D op per slice, all before the signal. */
    arsim_op *slices[64];
    arsim_op **ops = depth <= 64 ? slices : calloc(depth, sizeof *ops);
    if (!ops) return append_fail(&a, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    bool oom = false;
    for (uint32_t z = 0; z < depth; z++) {
        ops[z] = arsim_op_copy2d(d0 + (size_t)z * dstSlicePitch, dstPitch, s0 + (size_t)z * srcSlicePitch,
                                 srcPitch, dr->width, dr->height, dir);
        oom |= ops[z] == NULL;
    }
    if (oom) {
        for (uint32_t z = 0; z < depth; z++)
            if (ops[z]) arsim_op_free(ops[z]);
        if (ops != slices) free(ops);
        return append_fail(&a, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    }
    r = append_commit_ops(&a, ops, depth);
    if (ops != slices) free(ops);
    return r;
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void *ptr,
                                                       const void *pattern, size_t pattern_size, size_t size,
                                                       ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                       ze_event_handle_t *phWaitEvents) {
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    if (!ptr || !pattern) return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > 128)
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    if (size == 0) return append_commit(&a, NULL);
    arsim_alloc da;
    bool dk;
    is_device_side(ptr, &da, &dk);
    if (!range_ok(ptr, size, &da, dk)) return append_fail(&a, ZE_RESULT_ERROR_INVALID_SIZE);
    arsim_op *op = pattern_size == 1 ? arsim_op_memset8(ptr, *(const uint8_t *)pattern, size)
                                     : arsim_op_fill(ptr, pattern, pattern_size, size);
    return append_commit(&a, op);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList,
                                                    ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                    ze_event_handle_t *phWaitEvents) {
    /* Lists run in order, so a barrier is its waits and its signal. */
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    return append_commit(&a, NULL);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hCommandList,
                                                                uint32_t numRanges, const size_t *pRangeSizes,
                                                                const void **pRanges, ze_event_handle_t hSignalEvent,
                                                                uint32_t numWaitEvents, ze_event_handle_t *phWaitEvents) {
    return zeCommandListAppendBarrier(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
}

/* Prefetch and memory advice are hints about where memory should live.  Every
 * allocation of the sim is host memory that each device reaches in place, so
 * a hint has nothing to move or change: after its checks, nothing is queued. */
static ze_result_t check_hint(ze_command_list_handle_t hCommandList, const void *ptr) {
    if (arsim_forked()) return ZE_RESULT_ERROR_UNINITIALIZED;
    lz_list *list = (lz_list *)lz_lookup(hCommandList, LZ_T_LIST);
    if (!list) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    ze_result_t r = ptr ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    if (r == ZE_RESULT_SUCCESS && !list->immediate && list->closed) r = ZE_RESULT_ERROR_INVALID_ARGUMENT;
    lz_unref(&list->base);
    return r;
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemoryPrefetch(ze_command_list_handle_t hCommandList,
                                                           const void *ptr, size_t size) {
    return check_hint(hCommandList, ptr);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendMemAdvise(ze_command_list_handle_t hCommandList,
                                                      ze_device_handle_t hDevice, const void *ptr,
                                                      size_t size, ze_memory_advice_t advice) {
    LZ_CHECK(hDevice, LZ_T_DEVICE);
    if ((uint32_t)advice > ZE_MEMORY_ADVICE_BIAS_UNCACHED) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
    return check_hint(hCommandList, ptr);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList,
                                                        ze_event_handle_t hEvent) {
    if (!hEvent) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hEvent, 0, NULL);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    return append_commit(&a, NULL);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList,
                                                         uint32_t numEvents, ze_event_handle_t *phEvents) {
    if (!phEvents) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, NULL, numEvents, phEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    return append_commit(&a, NULL);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendEventReset(ze_command_list_handle_t hCommandList,
                                                       ze_event_handle_t hEvent) {
    if (!hEvent) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, NULL, 0, NULL);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    lz_event *e = (lz_event *)lz_lookup(hEvent, LZ_T_EVENT);
    if (!e) return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    arsim_op *op = arsim_op_event_reset(e->done);
    lz_unref(&e->base);
    return append_commit(&a, op);
}

ZE_APIEXPORT ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList,
                                                         ze_kernel_handle_t hKernel,
                                                         const ze_group_count_t *pLaunchFuncArgs,
                                                         ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                         ze_event_handle_t *phWaitEvents) {
    append_ctx a;
    ze_result_t r = append_begin(&a, hCommandList, hSignalEvent, numWaitEvents, phWaitEvents);
    if (r != ZE_RESULT_SUCCESS) return append_fail(&a, r);
    lz_kernel *k = (lz_kernel *)lz_lookup(hKernel, LZ_T_KERNEL);
    if (!k) return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    if (!pLaunchFuncArgs) {
        lz_unref(&k->base);
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_NULL_POINTER);
    }
    if (a.list->ordinal == LZ_GROUP_COPY) {
        lz_unref(&k->base);
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
    }
    ar_dim3 grid = {pLaunchFuncArgs->groupCountX, pLaunchFuncArgs->groupCountY, pLaunchFuncArgs->groupCountZ};
    void *params[AR_KERNEL_MAX_PARAMS];
    pthread_mutex_lock(&k->lock);
    /* A kernel whose arguments are not all set would run on garbage (as
     * OpenCL's CL_INVALID_KERNEL_ARGS refuses too). */
    uint32_t np = k->k->info->num_params;
    int unset = 0;
    for (uint32_t i = 0; i < np; i++)
        unset |= !(k->set_mask[i / 64] >> (i % 64) & 1u);
    if (unset) {
        pthread_mutex_unlock(&k->lock);
        lz_unref(&k->base);
        return append_fail(&a, ZE_RESULT_ERROR_INVALID_ARGUMENT);
    }
    ar_dim3 block = {k->group[0], k->group[1], k->group[2]};
    for (uint32_t i = 0; i < k->k->info->num_params; i++) params[i] = k->args + k->offsets[i];
    /* __local variables and arguments together must fit the device's
     * maxSharedLocalMemory. */
    if (k->k->run == spv_kernel_run && spv_kernel_local_bytes(k->k->ctx, params) > SPV_MAX_LOCAL_BYTES) {
        pthread_mutex_unlock(&k->lock);
        lz_unref(&k->base);
        return append_fail(&a, ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    }
    /* The engine copies the argument values now, as Level Zero captures
     * them at append time. */
    arsim_op *op = (grid.x && grid.y && grid.z) ? arsim_op_kernel(k->k, grid, block, 0, params) : NULL;
    bool empty = !(grid.x && grid.y && grid.z);
    pthread_mutex_unlock(&k->lock);
    lz_unref(&k->base);
    if (empty) return append_commit(&a, NULL); /* an empty grid runs nothing */
    if (!op) return append_fail(&a, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
    return append_commit(&a, op);
}
