/* Ops: what a queue runs.  Built by the front ends, owned by the queue (or
 * graph) they are submitted to, freed once run; each holds references to
 * the event, kernel's module or queue it names. */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

static arsim_op *op_new(enum op_kind kind)
{
    arsim_op *op = calloc(1, sizeof *op);
    if (op)
        op->kind = kind;
    return op;
}

_Static_assert((int)ARSIM_OPK_QUEUE_WAIT == (int)OP_QUEUE_WAIT, "arsim_op_kind follows op_kind");

arsim_op_kind arsim_op_kind_of(const arsim_op *op)
{
    return op ? (arsim_op_kind)op->kind : (arsim_op_kind)0;
}

int arsim_op_host_fn_of(const arsim_op *op, void (**fn)(void *), void **user)
{
    if (!op || op->kind != OP_HOST_FN)
        return 0;
    *fn = op->fn;
    *user = op->user;
    return 1;
}

void arsim_op_free(arsim_op *op)
{
    if (!op)
        return;
    free(op->owned);
    free(op->ro);
    if (op->event)
        arsim_event_release(op->event);
    if (op->kernel)
        eng_module_release(op->kernel->module);
    if (op->other)
        eng_queue_release(op->other);
    free(op);
}

arsim_op *arsim_op_copy(void *dst, const void *src, size_t n, arsim_copy_dir dir)
{
    arsim_op *op = op_new(OP_COPY);
    if (op) {
        op->dst = dst;
        op->src = src;
        op->n = n;
        op->dir = dir;
    }
    return op;
}

arsim_op *arsim_op_copy_peer(void *dst, int dst_dev, const void *src, int src_dev, size_t n)
{
    arsim_op *op = arsim_op_copy(dst, src, n, ARSIM_COPY_PEER);
    if (op) {
        op->dst_dev = dst_dev;
        op->src_dev = src_dev;
    }
    return op;
}

arsim_op *arsim_op_copy_owned_src(void *dst, void *src_malloced, size_t n, arsim_copy_dir dir)
{
    arsim_op *op = arsim_op_copy(dst, src_malloced, n, dir);
    if (op)
        op->owned = src_malloced;
    else
        free(src_malloced);
    return op;
}

arsim_op *arsim_op_copy2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                          size_t width, size_t height, arsim_copy_dir dir)
{
    arsim_op *op = op_new(OP_COPY2D);
    if (op) {
        op->dst = dst;
        op->src = src;
        op->dst_pitch = dst_pitch;
        op->src_pitch = src_pitch;
        op->width = width;
        op->height = height;
        op->n = width * height;
        op->dir = dir;
    }
    return op;
}

arsim_op *arsim_op_copy2d_owned_src(void *dst, size_t dst_pitch, void *src_malloced,
                                    size_t width, size_t height, arsim_copy_dir dir)
{
    arsim_op *op = arsim_op_copy2d(dst, dst_pitch, src_malloced, width, width, height, dir);
    if (op)
        op->owned = src_malloced;
    else
        free(src_malloced);
    return op;
}

arsim_op *arsim_op_memset8(void *dst, uint8_t value, size_t n)
{
    arsim_op *op = op_new(OP_MEMSET8);
    if (op) {
        op->dst = dst;
        op->value = value;
        op->n = n;
    }
    return op;
}

arsim_op *arsim_op_fill(void *dst, const void *pattern, size_t pattern_size, size_t n)
{
    if (!pattern || pattern_size == 0)
        return NULL;
    arsim_op *op = op_new(OP_FILL);
    if (!op)
        return NULL;
    op->owned = malloc(pattern_size);
    if (!op->owned) {
        free(op);
        return NULL;
    }
    memcpy(op->owned, pattern, pattern_size);
    op->dst = dst;
    op->width = pattern_size;
    op->n = n;
    return op;
}

/* Packs argument values after the pointer array, each 16-byte aligned. */
static void *pack_args(const ar_kernel_info *info, void *const *params)
{
    size_t np = info->num_params;
    size_t off = (np * sizeof(void *) + 15) & ~(size_t)15;
    size_t total = off;
    for (size_t i = 0; i < np; i++)
        total += (info->param_sizes[i] + 15) & ~(size_t)15;
    unsigned char *buf = malloc(total ? total : 1);
    if (!buf)
        return NULL;
    void **argv = (void **)buf;
    for (size_t i = 0; i < np; i++) {
        argv[i] = buf + off;
        if (params && params[i])
            memcpy(buf + off, params[i], info->param_sizes[i]);
        else
            memset(buf + off, 0, info->param_sizes[i]);
        off += (info->param_sizes[i] + 15) & ~(size_t)15;
    }
    return buf;
}

/* Re-points the argument array of a copied pack at the copy's own values. */
static void *clone_args(const ar_kernel_info *info, const void *src)
{
    void *const *argv = (void *const *)src;
    return pack_args(info, argv);
}

arsim_op *arsim_op_kernel(const arsim_kernel *k, ar_dim3 grid, ar_dim3 block,
                          uint32_t shared_bytes, void *const *params)
{
    if (!k)
        return NULL;
    arsim_op *op = op_new(OP_KERNEL);
    if (!op)
        return NULL;
    op->owned = pack_args(k->info, params);
    if (!op->owned) {
        free(op);
        return NULL;
    }
    eng_module_retain(k->module);
    op->kernel = k;
    op->site = eng_take_launch_site();
    op->ro = eng_take_launch_readonly();
    op->grid = grid;
    op->block = block;
    op->shared_bytes = shared_bytes;
    return op;
}

void arsim_op_set_tag(arsim_op *op, uint64_t tag)
{
    if (op)
        op->tag = tag;
}

arsim_op *arsim_op_host_fn(void (*fn)(void *), void *user)
{
    arsim_op *op = op_new(OP_HOST_FN);
    if (op) {
        op->fn = fn;
        op->user = user;
    }
    return op;
}

arsim_op *arsim_op_release_fn(void (*fn)(void *), void *user)
{
    arsim_op *op = arsim_op_host_fn(fn, user);
    if (op)
        op->kind = OP_RELEASE_FN;
    return op;
}

arsim_op *arsim_op_marker(void) { return op_new(OP_MARKER); }

static arsim_op *event_op(enum op_kind kind, arsim_event *e)
{
    if (!e)
        return NULL;
    arsim_op *op = op_new(kind);
    if (op) {
        arsim_event_retain(e);
        op->event = e;
    }
    return op;
}

arsim_op *arsim_op_event_record(arsim_event *e) { return event_op(OP_EVENT_RECORD, e); }
arsim_op *arsim_op_event_wait(arsim_event *e) { return event_op(OP_EVENT_WAIT, e); }
arsim_op *arsim_op_event_signal(arsim_event *e) { return event_op(OP_EVENT_SIGNAL, e); }
arsim_op *arsim_op_event_reset(arsim_event *e) { return event_op(OP_EVENT_RESET, e); }
arsim_op *arsim_op_event_wait_signaled(arsim_event *e)
{
    return event_op(OP_EVENT_WAIT_SIGNALED, e);
}

arsim_op *arsim_op_queue_wait(arsim_queue *other, uint64_t seq)
{
    if (!other)
        return NULL;
    arsim_op *op = op_new(OP_QUEUE_WAIT);
    if (op) {
        eng_queue_retain(other);
        op->other = other;
        op->target = seq;
    }
    return op;
}

arsim_op *eng_op_clone(const arsim_op *src)
{
    arsim_op *op = op_new(src->kind);
    if (!op)
        return NULL;
    *op = *src;
    op->next = NULL;
    op->owned = NULL;
    op->target = 0;
    int failed = 0;
    op->ro = eng_readonly_copy(src->ro, &failed);
    if (failed) {
        free(op);
        return NULL;
    }
    if (src->owned) {
        if (src->kind == OP_KERNEL) {
            op->owned = clone_args(src->kernel->info, src->owned);
        } else {
            size_t n = src->kind == OP_FILL ? src->width : src->n;
            op->owned = malloc(n ? n : 1);
            if (op->owned)
                memcpy(op->owned, src->owned, n);
            if (src->kind == OP_COPY || src->kind == OP_COPY2D)
                op->src = op->owned;
        }
        if (!op->owned) {
            free(op->ro);
            free(op);
            return NULL;
        }
    }
    if (op->event)
        arsim_event_retain(op->event);
    if (op->kernel)
        eng_module_retain(op->kernel->module);
    if (op->other)
        eng_queue_retain(op->other);
    return op;
}

/* ---- memory an op uses (arsim_mem_in_use) */

static int range_hits(uintptr_t p, size_t n, uintptr_t lo, uintptr_t hi)
{
    return n && p < hi && p + n > lo;
}

int eng_op_uses(const arsim_op *op, uintptr_t lo, uintptr_t hi)
{
    switch (op->kind) {
    case OP_COPY:
        return range_hits((uintptr_t)op->dst, op->n, lo, hi) ||
               range_hits((uintptr_t)op->src, op->n, lo, hi);
    case OP_COPY2D: {
        if (!op->height || !op->width)
            return 0;
        size_t dn = (op->height - 1) * op->dst_pitch + op->width;
        size_t sn = (op->height - 1) * op->src_pitch + op->width;
        return range_hits((uintptr_t)op->dst, dn, lo, hi) ||
               range_hits((uintptr_t)op->src, sn, lo, hi);
    }
    case OP_MEMSET8:
    case OP_FILL:
        return range_hits((uintptr_t)op->dst, op->n, lo, hi);
    case OP_KERNEL: {
        /* A pointer-sized argument pointing into the allocation. */
        const ar_kernel_info *info = op->kernel->info;
        void *const *argv = (void *const *)op->owned;
        for (uint32_t i = 0; i < info->num_params; i++) {
            if (info->param_sizes[i] != sizeof(uintptr_t))
                continue;
            uintptr_t v;
            memcpy(&v, argv[i], sizeof v);
            if (v >= lo && v < hi)
                return 1;
        }
        return 0;
    }
    default:
        return 0;
    }
}
