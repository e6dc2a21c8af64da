/* The registry of live allocations (the engine's own, and registered host
 * memory), sorted by base, and the memory API on top of it.  Small
 * allocations live in slabs instead (engine_slabs.c): each call here asks
 * the registry, then the slabs. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static pthread_rwlock_t g_mem_lock = PTHREAD_RWLOCK_INITIALIZER;
_Atomic uint64_t eng_mem_epoch = 1;

static arsim_alloc *g_allocs; /* sorted by base */
static size_t g_nallocs, g_cap_allocs;

/* Index of the last allocation with base <= p, or -1.  Caller holds the lock. */
static ptrdiff_t alloc_floor(const void *p)
{
    size_t lo = 0, hi = g_nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)g_allocs[mid].base <= (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

static _Atomic uint64_t g_serial; /* the last allocation's serial */

uint64_t eng_next_serial(void) { return atomic_fetch_add(&g_serial, 1) + 1; }

static arsim_status registry_insert(const arsim_alloc *a)
{
    pthread_rwlock_wrlock(&g_mem_lock);
    if (g_nallocs == g_cap_allocs) {
        size_t cap = g_cap_allocs ? g_cap_allocs * 2 : 256;
        arsim_alloc *n = realloc(g_allocs, cap * sizeof *n);
        if (!n) {
            pthread_rwlock_unlock(&g_mem_lock);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
        g_allocs = n;
        g_cap_allocs = cap;
    }
    ptrdiff_t i = alloc_floor(a->base);
    /* Overlap with a live range: only possible for a bad registration. */
    if ((i >= 0 && (uintptr_t)g_allocs[i].base + g_allocs[i].size > (uintptr_t)a->base) ||
        ((size_t)(i + 1) < g_nallocs &&
         (uintptr_t)a->base + a->size > (uintptr_t)g_allocs[i + 1].base)) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    size_t at = (size_t)(i + 1);
    memmove(&g_allocs[at + 1], &g_allocs[at], (g_nallocs - at) * sizeof *g_allocs);
    g_allocs[at] = *a;
    /* A front end keying state by address tells a new allocation at a freed
     * one's address apart by this. */
    g_allocs[at].serial = eng_next_serial();
    g_nallocs++;
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

/* Removes the allocation based exactly at p whose kind is in mask. */
static arsim_status registry_remove(void *p, unsigned mask, arsim_alloc *out)
{
    pthread_rwlock_wrlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    if (i < 0 || g_allocs[i].base != p || !(g_allocs[i].kind & mask)) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    *out = g_allocs[i];
    memmove(&g_allocs[i], &g_allocs[i + 1], (g_nallocs - (size_t)i - 1) * sizeof *g_allocs);
    g_nallocs--;
    atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

/* An allocation of its own mapping, in the registry. */
static arsim_status map_and_insert(arsim_alloc *a)
{
    if (eng_map_alloc(a->size, a) != 0)
        return ARSIM_ERR_OUT_OF_MEMORY;
    arsim_status st = registry_insert(a);
    if (st != ARSIM_OK)
        munmap(a->map, a->map_len);
    return st;
}

arsim_status arsim_mem_alloc(int ordinal, size_t size, arsim_mem_kind kind, uint64_t owner,
                             unsigned flags, void **out)
{
    eng_ensure_init();
    if (!out || size == 0)
        return ARSIM_ERR_INVALID_VALUE;
    if (kind != ARSIM_MEM_DEVICE && kind != ARSIM_MEM_MANAGED && kind != ARSIM_MEM_HOST)
        return ARSIM_ERR_INVALID_VALUE;
    sim_device *d = eng_dev_get(ordinal);
    int counted = kind != ARSIM_MEM_HOST;
    if (counted && !d)
        return ARSIM_ERR_INVALID_DEVICE;
    if (d && eng_take_fault(&d->fault_oom))
        return ARSIM_ERR_OUT_OF_MEMORY;
    if (counted) {
        uint64_t prev = atomic_fetch_add(&d->used, size);
        if (prev + size > d->total || prev + size < prev) {
            atomic_fetch_sub(&d->used, size);
            return ARSIM_ERR_OUT_OF_MEMORY;
        }
    }
    arsim_alloc a = {NULL, size, kind, counted ? ordinal : -1, owner, flags, NULL, 0, size};
    arsim_status st = eng_slab_wants(size) ? eng_slab_alloc(&a) : map_and_insert(&a);
    if (st != ARSIM_OK) {
        if (counted)
            atomic_fetch_sub(&d->used, size);
        return st;
    }
    *out = a.base;
    return ARSIM_OK;
}

static void release_alloc(const arsim_alloc *a)
{
    if (a->kind == ARSIM_MEM_REGISTERED)
        return; /* the caller's memory */
    if (a->device >= 0)
        atomic_fetch_sub(&eng_dev[a->device].used, a->charged);
    eng_unmap_alloc(a);
}

int arsim_mem_sanitizing(void)
{
    eng_ensure_init();
    return eng_sanitize;
}

arsim_status arsim_mem_refit(void *p, size_t n, int protect, void **out)
{
    eng_ensure_init();
    if (!p || !out || n == 0)
        return ARSIM_ERR_INVALID_VALUE;
    pthread_rwlock_wrlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    if (i < 0 || g_allocs[i].base != p || !g_allocs[i].map || n > g_allocs[i].charged) {
        pthread_rwlock_unlock(&g_mem_lock);
        return eng_slab_refit(p, n, out);
    }
    arsim_alloc *a = &g_allocs[i];
    char *m = a->map;
    size_t data = a->data_len;
    size_t need = (n + eng_page - 1) & ~(eng_page - 1);
    /* The fit's pages: the first ones, or with the sanitizer the last ones
     * (the base stays inside the mapping, so the registry stays sorted). */
    char *lo = eng_sanitize ? m + data - need : m;
    int bad = mprotect(lo, need, PROT_READ | PROT_WRITE) != 0;
    if (!bad && protect && need < data)
        bad = mprotect(eng_sanitize ? m : m + need, data - need, PROT_NONE) != 0;
    if (bad) {
        pthread_rwlock_unlock(&g_mem_lock);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    a->base = eng_sanitize ? m + data - n : m;
    a->size = n;
    *out = a->base;
    atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    return ARSIM_OK;
}

arsim_status arsim_mem_free(void *p, unsigned kind_mask)
{
    eng_ensure_init();
    arsim_alloc a;
    unsigned mask = kind_mask & ~(unsigned)ARSIM_MEM_REGISTERED;
    if (!p)
        return ARSIM_ERR_INVALID_VALUE;
    if (registry_remove(p, mask, &a) == ARSIM_OK) {
        release_alloc(&a);
        return ARSIM_OK;
    }
    if (eng_slab_free(p, mask, &a) != ARSIM_OK)
        return ARSIM_ERR_INVALID_VALUE;
    if (a.device >= 0)
        atomic_fetch_sub(&eng_dev[a.device].used, a.charged);
    return ARSIM_OK;
}

arsim_status arsim_mem_lookup(const void *p, arsim_alloc *out)
{
    pthread_rwlock_rdlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor(p);
    arsim_status st = ARSIM_ERR_NOT_FOUND;
    if (i >= 0 && (uintptr_t)p < (uintptr_t)g_allocs[i].base + g_allocs[i].size) {
        if (out)
            *out = g_allocs[i];
        st = ARSIM_OK;
    }
    pthread_rwlock_unlock(&g_mem_lock);
    return st == ARSIM_OK ? st : eng_slab_lookup(p, out);
}

int arsim_mem_range_ok(const void *p, size_t n, unsigned kind_mask)
{
    arsim_alloc a;
    if (arsim_mem_lookup(p, &a) != ARSIM_OK || !(a.kind & kind_mask))
        return 0;
    uintptr_t end = (uintptr_t)a.base + a.size;
    return n <= end - (uintptr_t)p;
}

size_t arsim_mem_free_owner(uint64_t owner)
{
    /* One compacting pass under the lock; the memory is released outside it. */
    pthread_rwlock_wrlock(&g_mem_lock);
    size_t n = 0;
    for (size_t i = 0; i < g_nallocs; i++)
        n += g_allocs[i].owner == owner;
    arsim_alloc *gone = n ? malloc(n * sizeof *gone) : NULL;
    if (n && !gone) {
        pthread_rwlock_unlock(&g_mem_lock);
        return 0;
    }
    size_t kept = 0, k = 0;
    for (size_t i = 0; i < g_nallocs; i++) {
        if (g_allocs[i].owner == owner)
            gone[k++] = g_allocs[i];
        else
            g_allocs[kept++] = g_allocs[i];
    }
    g_nallocs = kept;
    atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_mem_lock);
    for (size_t i = 0; i < n; i++)
        release_alloc(&gone[i]);
    free(gone);
    return n + eng_slab_free_owner(owner);
}

arsim_status arsim_mem_register(void *p, size_t size, uint64_t owner, unsigned flags)
{
    if (!p || size == 0 || (uintptr_t)p + size < (uintptr_t)p)
        return ARSIM_ERR_INVALID_VALUE;
    if (eng_slab_overlaps((uintptr_t)p, (uintptr_t)p + size))
        return ARSIM_ERR_INVALID_VALUE; /* the engine's own memory */
    arsim_alloc a = {p, size, ARSIM_MEM_REGISTERED, -1, owner, flags, NULL, 0, 0};
    return registry_insert(&a);
}

arsim_status arsim_mem_unregister(void *p)
{
    arsim_alloc a;
    return registry_remove(p, ARSIM_MEM_REGISTERED, &a);
}

/* The nearest allocation of the registry (not the slabs). */
static int registry_nearest(uintptr_t addr, arsim_alloc *out, uintptr_t *dist)
{
    pthread_rwlock_rdlock(&g_mem_lock);
    ptrdiff_t i = alloc_floor((const void *)addr);
    const arsim_alloc *best = NULL;
    uintptr_t best_dist = UINTPTR_MAX;
    if (i >= 0) {
        uintptr_t end = (uintptr_t)g_allocs[i].base + g_allocs[i].size;
        best = &g_allocs[i];
        best_dist = addr < end ? 0 : addr - end;
    }
    if ((size_t)(i + 1) < g_nallocs) {
        uintptr_t d = (uintptr_t)g_allocs[i + 1].base - addr;
        if (d < best_dist) {
            best = &g_allocs[i + 1];
            best_dist = d;
        }
    }
    if (best)
        *out = *best;
    pthread_rwlock_unlock(&g_mem_lock);
    *dist = best_dist;
    return best != NULL;
}

int eng_mem_nearest(uintptr_t addr, arsim_alloc *out, uintptr_t *dist)
{
    arsim_alloc slot;
    uintptr_t slot_dist;
    int found = registry_nearest(addr, out, dist);
    if (eng_slab_nearest(addr, &slot, &slot_dist) && (!found || slot_dist < *dist)) {
        *out = slot;
        *dist = slot_dist;
        found = 1;
    }
    return found;
}
