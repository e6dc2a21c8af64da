/* cuda-sim: each context's printf FIFO.
 *
 * A kernel's vprintf records (ffi/sim/ptx/ptx_exec_printf.c) go to the FIFO
 * of the context that launched it: cuLaunchKernel and graph kernel nodes tag
 * their op with the context's handle (arsim_op_set_tag).  As on a GPU the
 * FIFO has a fixed size, CU_LIMIT_PRINTF_FIFO_SIZE (1 MiB unless set, which
 * the context allows until it launches a kernel that calls printf); a record
 * that does not fit is dropped.  The records are written to stdout, in the
 * order the kernels made them, at the points the CUDA programming guide
 * lists (its "Formatted Output" section): a kernel launch, cuCtxSynchronize,
 * cuStreamSynchronize, cuEventSynchronize, a blocking copy, a module load or
 * unload, and the end of the context.  A flush with nothing held costs one
 * atomic load, so the event synchronize on aruntime's completion path stays
 * cheap. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cusim.h"

#define DEFAULT_FIFO_BYTES ((size_t)1 << 20) /* cuda.h's default: 1 MiB */

typedef struct fifo {
    uint64_t ctx;
    size_t limit;   /* CU_LIMIT_PRINTF_FIFO_SIZE */
    size_t used;    /* the bytes the held records take in the FIFO */
    int sealed;     /* a kernel that calls printf was launched: the limit is fixed */
    char *text;     /* the held records, formatted */
    size_t len, cap;
    struct fifo *next;
} fifo;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* guards g_fifos and each FIFO */
/* Held by a flush while it writes, so two flushes keep the records' order. */
static pthread_mutex_t g_out_mu = PTHREAD_MUTEX_INITIALIZER;
static fifo *g_fifos;
static _Atomic size_t g_pending; /* bytes of text held in every FIFO together */

/* The FIFO of context ctx, made on first use; NULL without memory.  g_mu held. */
static fifo *fifo_of(uint64_t ctx)
{
    for (fifo *f = g_fifos; f; f = f->next)
        if (f->ctx == ctx)
            return f;
    fifo *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->ctx = ctx;
    f->limit = DEFAULT_FIFO_BYTES;
    f->next = g_fifos;
    g_fifos = f;
    return f;
}

/* ptx_printf_sink: runs on a thread running the kernel's blocks. */
static void sink(const char *text, size_t len, size_t record_bytes)
{
    pthread_mutex_lock(&g_mu);
    fifo *f = fifo_of(arsim_kernel_tag());
    if (f) {
        f->sealed = 1;
        if (f->used + record_bytes <= f->limit) {
            if (f->len + len + 1 > f->cap) {
                size_t cap = f->cap ? f->cap : 4096;
                while (cap < f->len + len + 1)
                    cap *= 2;
                char *grown = realloc(f->text, cap);
                if (grown) {
                    f->text = grown;
                    f->cap = cap;
                }
            }
            if (f->len + len + 1 <= f->cap) { /* else dropped, as a full FIFO drops it */
                memcpy(f->text + f->len, text, len);
                f->len += len;
                f->used += record_bytes;
                atomic_fetch_add(&g_pending, len);
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
}

void cusim_printf_init(void) { ptx_set_printf_sink(sink); }

/* Writes the held records of context ctx (0: of every context) to stdout
 * and empties the FIFO; forget also drops the FIFO itself, as the end of a
 * context does (a primary context retained again starts from the defaults). */
static void flush(uint64_t ctx, int forget)
{
    if (atomic_load(&g_pending) == 0 && !forget)
        return;
    pthread_mutex_lock(&g_out_mu);
    for (;;) {
        pthread_mutex_lock(&g_mu);
        fifo **at = &g_fifos;
        while (*at && ctx && (*at)->ctx != ctx)
            at = &(*at)->next;
        while (*at && !ctx && !(*at)->len)
            at = &(*at)->next;
        fifo *f = *at;
        char *text = NULL;
        size_t len = 0;
        if (f && (f->len || forget)) {
            text = f->text;
            len = f->len;
            atomic_fetch_sub(&g_pending, f->len);
            f->text = NULL;
            f->len = f->cap = f->used = 0;
            if (forget) {
                *at = f->next;
                free(f);
            }
        }
        pthread_mutex_unlock(&g_mu);
        if (len) {
            fwrite(text, 1, len, stdout);
            fflush(stdout);
        }
        free(text);
        if (ctx || !len)
            break;
    }
    pthread_mutex_unlock(&g_out_mu);
}

void cusim_printf_flush(uint64_t ctx) { flush(ctx, 0); }
void cusim_printf_forget(uint64_t ctx) { flush(ctx, 1); }

/* A launch of a kernel that calls printf fixes its context's FIFO size. */
void cusim_printf_seal(uint64_t ctx)
{
    pthread_mutex_lock(&g_mu);
    fifo *f = fifo_of(ctx);
    if (f)
        f->sealed = 1;
    pthread_mutex_unlock(&g_mu);
}

/* CU_LIMIT_PRINTF_FIFO_SIZE of context ctx: reads it into *get, or sets it
 * to *set, which a context refuses once it has launched a kernel that calls
 * printf (cuda.h: CUDA_ERROR_INVALID_VALUE). */
CUresult cusim_printf_limit(uint64_t ctx, size_t *get, const size_t *set)
{
    pthread_mutex_lock(&g_mu);
    fifo *f = fifo_of(ctx);
    CUresult r = !f ? CUDA_ERROR_OUT_OF_MEMORY
                 : set && f->sealed ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && set)
        f->limit = *set;
    if (r == CUDA_SUCCESS && get)
        *get = f->limit;
    pthread_mutex_unlock(&g_mu);
    return r;
}
