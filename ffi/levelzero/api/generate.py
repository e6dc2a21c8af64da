"""Generate the C source of ``_aruntime_ze_api``: compiled calls for levelzero's per-op path.

The Level Zero backend binds its library in cffi's ABI mode (see
``aruntime/backends/levelzero/_ffi.py``): every call goes through libffi
and converts each handle argument from a cffi object, about 0.2 us before
the driver runs at all.  Every awaited op makes four such calls (the
append, the marker's host reset and signalling barrier, the query), which
cost more than the simulated device's work for a small op.  An op's append
also makes the barrier that orders it after the list's previous op, in the
same call, and says which of the two failed.

This extension, made with cffi's API mode, has one plain C wrapper per
call on that path, taking integers: the handles' addresses, and last a
table of the library's function pointers (taken from the ABI binding with
``ffi.addressof``, so the calls reach exactly the functions, loader and
validation layer included, that the ABI binding would).  It links against
nothing, and holds no state: a table belongs to one opened library.
Everything else stays in ABI mode; with the extension missing (no compiler
or Python headers when installed), the backend runs wholly in ABI mode.

    python -m ffi.levelzero.api.generate OUT.c     (from the checkout's root)
"""

from __future__ import annotations

import sys
from pathlib import Path

from ffi.build import emit_api_source

MODULE = "_aruntime_ze_api"

# The table's fields are named after the functions they point to, so that
# the backend fills it by reading the field names.  The table comes last in
# each wrapper: the backend's append helper passes the list first.
TABLE = """
typedef struct {
    void *zeCommandListAppendMemoryFill;
    void *zeCommandListAppendMemoryCopy;
    void *zeCommandListAppendBarrier;
    void *zeEventHostReset;
    void *zeEventQueryStatus;
    void *zeCommandListAppendLaunchKernel;
    void *zeKernelSetArgumentValue; /* read by the core's compiled launch (ffi/core/zeappend.c) */
} ar_ze_table;
"""

CDEF = (
    TABLE
    + """
uint64_t ar_ze_fill(uintptr_t list, int barrier_first, uintptr_t dst, uintptr_t pattern,
                    size_t pattern_size, size_t nbytes, const ar_ze_table *t);
uint64_t ar_ze_copy(uintptr_t list, int barrier_first, uintptr_t dst, uintptr_t src,
                    size_t nbytes, const ar_ze_table *t);
uint64_t ar_ze_launch(uintptr_t list, int barrier_first, uintptr_t kernel, uintptr_t groups,
                      const ar_ze_table *t);
uint32_t ar_ze_barrier(uintptr_t list, uintptr_t signal, const ar_ze_table *t);
uint32_t ar_ze_host_reset(uintptr_t event, const ar_ze_table *t);
uint32_t ar_ze_query(uintptr_t event, const ar_ze_table *t);
"""
)

# Handles are opaque pointers and ze_result_t an enum of 32-bit codes; the
# signatures below are the API's (ffi/levelzero/decl/command.h, sync.h).
SOURCE = (
    """
#include <stddef.h>
#include <stdint.h>
"""
    + TABLE
    + """
typedef uint32_t (*ar_fill_fn)(void *list, void *ptr, const void *pattern, size_t pattern_size,
                               size_t size, void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*ar_copy_fn)(void *list, void *dst, const void *src, size_t size,
                               void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*ar_barrier_fn)(void *list, void *signal, uint32_t nwait, void **waits);
typedef uint32_t (*ar_launch_fn)(void *list, void *kernel, const void *groups, void *signal,
                                 uint32_t nwait, void **waits);
typedef uint32_t (*ar_event_fn)(void *event);

/* An op's append, after a barrier when the list holds an op since its last
 * one (``barrier_first``): 0, or the failed call's code, with bit 32 set when
 * the failed call was the barrier. */
#define AR_BARRIER_FAILED ((uint64_t)1 << 32)

static uint64_t ar_ze_order(uintptr_t list, int barrier_first, const ar_ze_table *t)
{
    if (!barrier_first)
        return 0;
    uint32_t rc = ((ar_barrier_fn)t->zeCommandListAppendBarrier)((void *)list, NULL, 0, NULL);
    return rc ? AR_BARRIER_FAILED | rc : 0;
}

static uint64_t ar_ze_fill(uintptr_t list, int barrier_first, uintptr_t dst, uintptr_t pattern,
                           size_t pattern_size, size_t nbytes, const ar_ze_table *t)
{
    uint64_t rc = ar_ze_order(list, barrier_first, t);
    return rc ? rc
              : ((ar_fill_fn)t->zeCommandListAppendMemoryFill)((void *)list, (void *)dst,
                                                              (const void *)pattern, pattern_size,
                                                              nbytes, NULL, 0, NULL);
}

static uint64_t ar_ze_copy(uintptr_t list, int barrier_first, uintptr_t dst, uintptr_t src,
                           size_t nbytes, const ar_ze_table *t)
{
    uint64_t rc = ar_ze_order(list, barrier_first, t);
    return rc ? rc
              : ((ar_copy_fn)t->zeCommandListAppendMemoryCopy)(
                    (void *)list, (void *)dst, (const void *)src, nbytes, NULL, 0, NULL);
}

static uint64_t ar_ze_launch(uintptr_t list, int barrier_first, uintptr_t kernel,
                             uintptr_t groups, const ar_ze_table *t)
{
    uint64_t rc = ar_ze_order(list, barrier_first, t);
    return rc ? rc
              : ((ar_launch_fn)t->zeCommandListAppendLaunchKernel)(
                    (void *)list, (void *)kernel, (const void *)groups, NULL, 0, NULL);
}

static uint32_t ar_ze_barrier(uintptr_t list, uintptr_t signal, const ar_ze_table *t)
{
    return ((ar_barrier_fn)t->zeCommandListAppendBarrier)((void *)list, (void *)signal, 0, NULL);
}

static uint32_t ar_ze_host_reset(uintptr_t event, const ar_ze_table *t)
{
    return ((ar_event_fn)t->zeEventHostReset)((void *)event);
}

static uint32_t ar_ze_query(uintptr_t event, const ar_ze_table *t)
{
    return ((ar_event_fn)t->zeEventQueryStatus)((void *)event);
}
"""
)


def generate(out_c: Path) -> bool:
    """Write the C source to ``out_c`` (only when it changed); False without cffi."""
    return emit_api_source(MODULE, CDEF, SOURCE, out_c)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
