/* The mapping behind each allocation of more than 64 KiB (smaller ones are
 * slots of slabs, engine_slabs.c, each slab one such mapping; with the
 * sanitizer every allocation): its own, with a guard region after it,
 * so a kernel running past the allocation's last page faults.  The guard is
 * three times the data (at least a page, at most GUARD_MAX): a grid split
 * over threads has blocks far past the end of an overrun buffer write at
 * once, and one guard page would let them land in whatever is mapped next,
 * the interpreter's own heap included.  Reserved address space costs no
 * memory.  With the
 * sanitizer a freed mapping stays reserved and inaccessible for a while
 * (quarantine), so a use after free faults too. */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <stdlib.h>
#include <sys/mman.h>

/* Freed allocations kept PROT_NONE (sanitizer), oldest first. */
typedef struct quarantined {
    arsim_alloc a;
    struct quarantined *next;
} quarantined;
static pthread_mutex_t g_quar_mu = PTHREAD_MUTEX_INITIALIZER;
static quarantined *g_quar_head, *g_quar_tail;
static size_t g_quar_bytes, g_quar_count;
#define QUARANTINE_BYTES ((size_t)1 << 30)
#define QUARANTINE_COUNT 65536u
#define GUARD_MAX ((size_t)1 << 30)

static size_t guard_len(size_t data)
{
    size_t guard = data <= GUARD_MAX / 3 ? 3 * data : GUARD_MAX;
    return guard < eng_page ? eng_page : guard;
}

int eng_map_alloc(size_t size, arsim_alloc *a)
{
    if (size > SIZE_MAX - GUARD_MAX - eng_page)
        return -1;
    size_t data = (size + eng_page - 1) & ~(eng_page - 1);
    size_t len = data + guard_len(data);
    /* PROT_NONE first, then open the data pages: the guard is never accessible. */
    char *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m, data, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, len);
        return -1;
    }
    a->map = m;
    a->map_len = len;
    a->data_len = data;
    /* Sanitizer: the last byte sits right before the guard page.  The base
     * is then only as aligned as the size allows (a float array: 4 bytes). */
    a->base = eng_sanitize ? m + data - size : m;
    return 0;
}

void eng_unmap_alloc(const arsim_alloc *a)
{
    if (!eng_sanitize) {
        munmap(a->map, a->map_len);
        return;
    }
    /* Quarantine: the range stays reserved and inaccessible, so a kernel
     * that uses it after the free faults (and the address is not reused). */
    mprotect(a->map, a->map_len, PROT_NONE);
    quarantined *qn = malloc(sizeof *qn);
    if (!qn) {
        munmap(a->map, a->map_len);
        return;
    }
    qn->a = *a;
    qn->next = NULL;
    quarantined *evict = NULL;
    pthread_mutex_lock(&g_quar_mu);
    if (g_quar_tail)
        g_quar_tail->next = qn;
    else
        g_quar_head = qn;
    g_quar_tail = qn;
    g_quar_bytes += a->map_len;
    g_quar_count++;
    while (g_quar_head && (g_quar_bytes > QUARANTINE_BYTES || g_quar_count > QUARANTINE_COUNT)) {
        quarantined *old = g_quar_head;
        g_quar_head = old->next;
        if (!g_quar_head)
            g_quar_tail = NULL;
        g_quar_bytes -= old->a.map_len;
        g_quar_count--;
        old->next = evict;
        evict = old;
    }
    pthread_mutex_unlock(&g_quar_mu);
    while (evict) {
        quarantined *next = evict->next;
        munmap(evict->a.map, evict->a.map_len);
        free(evict);
        evict = next;
    }
}

int eng_quarantine_find(uintptr_t addr, arsim_alloc *out)
{
    int found = 0;
    pthread_mutex_lock(&g_quar_mu);
    for (quarantined *q = g_quar_head; q; q = q->next) {
        if (addr >= (uintptr_t)q->a.map && addr < (uintptr_t)q->a.map + q->a.map_len) {
            *out = q->a; /* the latest wins: keep scanning */
            found = 1;
        }
    }
    pthread_mutex_unlock(&g_quar_mu);
    return found;
}
