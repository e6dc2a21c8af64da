/* cuda-sim: cuInit, and the check every entry point makes that it ran.
 * A file of its own, below everything else in the driver: every other file
 * asks cusim_check_init. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>

#include "cusim.h"

static _Atomic int g_initialized;

CUresult cusim_check_init(void)
{
    /* As NVIDIA's driver answers a child forked after cuInit: every call
     * fails with "initialization error" (the engine threads stayed behind). */
    if (arsim_forked())
        return CUDA_ERROR_NOT_INITIALIZED;
    return atomic_load_explicit(&g_initialized, memory_order_acquire) ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_NOT_INITIALIZED;
}

/* ------------------------------------------------------------- init */

CUresult cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (arsim_forked())
        return CUDA_ERROR_NOT_INITIALIZED;
    /* Lets tests play a stub or broken driver. */
    const char *forced = getenv("ARUNTIME_SIM_CUINIT_RESULT");
    if (forced && *forced && atoi(forced) != 0)
        return (CUresult)atoi(forced);
    arsim_device_count(); /* reads the knobs */
    arsim_mark_in_use();
    /* cuda.h: after a sticky error "any further CUDA work will return the
     * same error" until the process is relaunched, on every device. */
    arsim_set_sticky_process_wide(1);
    cusim_printf_init();
    atomic_store_explicit(&g_initialized, 1, memory_order_release);
    return CUDA_SUCCESS;
}

/* A context handle's context, or NULL (every file checks handles with it). */
cu_ctx *cusim_ctx_from_handle(CUcontext h)
{
    return arsim_handle_get((uint64_t)(uintptr_t)h, HK_CTX);
}

/* Guards every capture and the structure of every graph (cusim.h). */
pthread_mutex_t g_capture_mu = PTHREAD_MUTEX_INITIALIZER;
