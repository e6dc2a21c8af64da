/* Small allocations, carved out of slabs as a GPU driver's allocator does.
 *
 * An allocation of its own mapping costs two of the process's memory maps
 * (the data and the guard after it), and vm.max_map_count (65530 by
 * default) ran out after some 32,000 allocations with nearly all memory
 * free.  So a request of at most SLAB_MAX bytes takes a slot of a slab: one
 * mapping (with its guard after it, engine_mappings.c) cut into slots of
 * one size class, 256 bytes to SLAB_MAX in powers of two.
 *
 * - Red zones: each slot is followed by as many bytes that no allocation
 *   ever gets (a slot's stride is twice its class), so the interpreters'
 *   bounds checks (arsim_check_access: an access must lie inside one live
 *   allocation) catch an access past a small allocation's end, up to its
 *   class size past it, before it reaches the neighbouring slot, and the
 *   fault report names the allocation whose red zone it hit (the one the
 *   kernel ran past; eng_slab_nearest).  Host kernels
 *   touch memory directly: past a small allocation they run into the red
 *   zone and then the next slot, as on a GPU (page tables see no slots);
 *   the slab's last slot is followed by its guard region.
 * - Alignment: slabs are page aligned and strides are multiples of 512, so
 *   every slot starts 512-byte aligned (CUDA promises 256).
 * - Reuse: a freed slot is the next one its class hands out (the slab goes
 *   to the front of its class's list and its free slots are a stack).
 *   A slab with no live slot is unmapped, unless it is its class's only
 *   empty one (kept, so that allocating and freeing one buffer in a loop
 *   does not map and unmap each time).
 * - Not for the sanitizer (ARUNTIME_SIM_SANITIZE): there each allocation
 *   keeps its own mapping, ending exactly at its guard page, and freed
 *   memory is quarantined (engine_mappings.c); eng_slab_wants says no.
 *
 * The slabs are kept in an array sorted by address, beside the registry of
 * other allocations (engine_memory.c); their address ranges never overlap.
 * One rwlock guards every slab and slot.
 */
#define _GNU_SOURCE
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

#define SLAB_MIN_CLASS 256u
#define SLAB_CLASSES 9u /* 256 .. 64 KiB */
#define SLAB_MAX ((size_t)SLAB_MIN_CLASS << (SLAB_CLASSES - 1))
#define SLAB_BYTES ((size_t)1 << 20) /* a slab's slots, at least */
#define SLAB_MIN_SLOTS 16u
#define NO_SLOT UINT32_MAX
#define NEAR_SCAN 8u /* slots looked at each way for a fault's nearest allocation */

/* One slot's allocation.  serial 0: the slot is free, and next_free links it
 * into its slab's stack of free slots. */
typedef struct slot {
    uint64_t serial;
    uint64_t owner;
    uint32_t size;
    uint32_t charged;
    uint32_t flags;
    int16_t device;
    uint8_t kind;
    uint32_t next_free;
} slot;

typedef struct slab {
    char *lo;               /* the first slot */
    arsim_alloc map;        /* the mapping (map, map_len) */
    uint32_t cls;           /* class index */
    uint32_t stride;        /* slot plus red zone */
    uint32_t nslots, nlive;
    uint32_t bump;          /* slots below it have been handed out once */
    uint32_t free_head;     /* the last freed slot, or NO_SLOT */
    int listed;             /* on its class's list of slabs with a free slot */
    struct slab *prev, *next;
    slot *slots;
} slab;

typedef struct slab_class {
    slab *head; /* slabs with a free slot, the latest freed into first */
    int empty;  /* slabs with no live slot (at most one is kept) */
} slab_class;

static pthread_rwlock_t g_slab_lock = PTHREAD_RWLOCK_INITIALIZER;
static slab_class g_class[SLAB_CLASSES];
static slab **g_slabs; /* sorted by lo */
static size_t g_nslabs, g_cap_slabs;

int eng_slab_wants(size_t size) { return !eng_sanitize && size > 0 && size <= SLAB_MAX; }

static uint32_t class_of(size_t size)
{
    uint32_t c = 0;
    while (((size_t)SLAB_MIN_CLASS << c) < size)
        c++;
    return c;
}

static uint32_t class_bytes(uint32_t c) { return SLAB_MIN_CLASS << c; }

/* ---------------------------------------------------- the sorted slab array */

/* Index of the last slab with lo <= p, or -1.  Caller holds the lock. */
static ptrdiff_t slab_floor(uintptr_t p)
{
    size_t lo = 0, hi = g_nslabs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)g_slabs[mid]->lo <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

/* The slab whose slots hold p, or NULL.  Caller holds the lock. */
static slab *slab_at(uintptr_t p)
{
    ptrdiff_t i = slab_floor(p);
    if (i < 0)
        return NULL;
    slab *s = g_slabs[i];
    return p - (uintptr_t)s->lo < (uintptr_t)s->nslots * s->stride ? s : NULL;
}

static int index_add(slab *s)
{
    if (g_nslabs == g_cap_slabs) {
        size_t cap = g_cap_slabs ? g_cap_slabs * 2 : 64;
        slab **n = realloc(g_slabs, cap * sizeof *n);
        if (!n)
            return -1;
        g_slabs = n;
        g_cap_slabs = cap;
    }
    size_t at = (size_t)(slab_floor((uintptr_t)s->lo) + 1);
    memmove(&g_slabs[at + 1], &g_slabs[at], (g_nslabs - at) * sizeof *g_slabs);
    g_slabs[at] = s;
    g_nslabs++;
    return 0;
}

static void index_remove(slab *s)
{
    size_t at = (size_t)slab_floor((uintptr_t)s->lo);
    memmove(&g_slabs[at], &g_slabs[at + 1], (g_nslabs - at - 1) * sizeof *g_slabs);
    g_nslabs--;
}

/* ------------------------------------------------ a class's list of slabs */

static void list_remove(slab *s)
{
    if (!s->listed)
        return;
    if (s->prev)
        s->prev->next = s->next;
    else
        g_class[s->cls].head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->listed = 0;
}

static void list_push_front(slab *s)
{
    list_remove(s);
    slab_class *c = &g_class[s->cls];
    s->next = c->head;
    if (c->head)
        c->head->prev = s;
    c->head = s;
    s->listed = 1;
}

/* ------------------------------------------------------- making slabs */

static slab *slab_new(uint32_t cls)
{
    slab *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cls = cls;
    s->stride = 2 * class_bytes(cls);
    size_t bytes = SLAB_BYTES;
    if (bytes < (size_t)SLAB_MIN_SLOTS * s->stride)
        bytes = (size_t)SLAB_MIN_SLOTS * s->stride;
    s->nslots = (uint32_t)(bytes / s->stride);
    s->free_head = NO_SLOT;
    s->slots = calloc(s->nslots, sizeof *s->slots);
    if (!s->slots || eng_map_alloc(bytes, &s->map) != 0) {
        free(s->slots);
        free(s);
        return NULL;
    }
    s->lo = s->map.map;
    if (index_add(s) != 0) {
        eng_unmap_alloc(&s->map);
        free(s->slots);
        free(s);
        return NULL;
    }
    g_class[cls].empty++;
    list_push_front(s);
    return s;
}

/* Takes an empty slab out of everything; the caller unmaps it (slab_drop). */
static void slab_unlink(slab *s)
{
    list_remove(s);
    index_remove(s);
    g_class[s->cls].empty--;
}

static void slab_drop(slab *s)
{
    eng_unmap_alloc(&s->map);
    free(s->slots);
    free(s);
}

/* ---------------------------------------------------------------- slots */

static uint32_t slot_take(slab *s)
{
    uint32_t i = s->free_head;
    if (i != NO_SLOT)
        s->free_head = s->slots[i].next_free;
    else
        i = s->bump++;
    if (s->nlive++ == 0)
        g_class[s->cls].empty--;
    if (s->nlive == s->nslots)
        list_remove(s);
    return i;
}

/* Frees slot i; returns the slab if it is now empty and should go (the
 * caller unmaps it once the lock is let go), else NULL. */
static slab *slot_give_back(slab *s, uint32_t i)
{
    s->slots[i].serial = 0;
    s->slots[i].next_free = s->free_head;
    s->free_head = i;
    list_push_front(s);
    if (--s->nlive != 0)
        return NULL;
    if (g_class[s->cls].empty++ == 0)
        return NULL; /* kept: the class's one empty slab */
    slab_unlink(s);
    return s;
}

static char *slot_base(const slab *s, uint32_t i) { return s->lo + (size_t)i * s->stride; }

static void describe(const slab *s, uint32_t i, arsim_alloc *out)
{
    const slot *t = &s->slots[i];
    memset(out, 0, sizeof *out);
    out->base = slot_base(s, i);
    out->size = t->size;
    out->kind = (arsim_mem_kind)t->kind;
    out->device = t->device;
    out->owner = t->owner;
    out->flags = t->flags;
    out->map = out->base;
    out->map_len = s->stride;
    out->data_len = s->stride;
    out->charged = t->charged;
    out->serial = t->serial;
}

/* The slot whose base is p, live, or NO_SLOT.  Caller holds the lock. */
static uint32_t live_slot_based_at(const slab *s, uintptr_t p)
{
    uintptr_t off = p - (uintptr_t)s->lo;
    if (off % s->stride)
        return NO_SLOT;
    uint32_t i = (uint32_t)(off / s->stride);
    return s->slots[i].serial ? i : NO_SLOT;
}

/* ------------------------------------------------------------- the API */

arsim_status eng_slab_alloc(arsim_alloc *a)
{
    uint32_t cls = class_of(a->size);
    pthread_rwlock_wrlock(&g_slab_lock);
    slab *s = g_class[cls].head;
    if (!s && !(s = slab_new(cls))) {
        pthread_rwlock_unlock(&g_slab_lock);
        return ARSIM_ERR_OUT_OF_MEMORY;
    }
    uint32_t i = slot_take(s);
    slot *t = &s->slots[i];
    t->serial = eng_next_serial();
    t->owner = a->owner;
    t->size = t->charged = (uint32_t)a->size;
    t->flags = a->flags;
    t->device = (int16_t)a->device;
    t->kind = (uint8_t)a->kind;
    describe(s, i, a);
    pthread_rwlock_unlock(&g_slab_lock);
    return ARSIM_OK;
}

arsim_status eng_slab_free(void *p, unsigned kind_mask, arsim_alloc *out)
{
    pthread_rwlock_wrlock(&g_slab_lock);
    slab *s = slab_at((uintptr_t)p);
    uint32_t i = s ? live_slot_based_at(s, (uintptr_t)p) : NO_SLOT;
    if (i == NO_SLOT || !(s->slots[i].kind & kind_mask)) {
        pthread_rwlock_unlock(&g_slab_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    describe(s, i, out);
    slab *gone = slot_give_back(s, i);
    atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_slab_lock);
    if (gone)
        slab_drop(gone);
    return ARSIM_OK;
}

arsim_status eng_slab_lookup(const void *p, arsim_alloc *out)
{
    pthread_rwlock_rdlock(&g_slab_lock);
    slab *s = slab_at((uintptr_t)p);
    arsim_status st = ARSIM_ERR_NOT_FOUND;
    if (s) {
        uintptr_t off = (uintptr_t)p - (uintptr_t)s->lo;
        uint32_t i = (uint32_t)(off / s->stride);
        if (s->slots[i].serial && off % s->stride < s->slots[i].size) {
            if (out)
                describe(s, i, out);
            st = ARSIM_OK;
        }
    }
    pthread_rwlock_unlock(&g_slab_lock);
    return st;
}

arsim_status eng_slab_refit(void *p, size_t n, void **out)
{
    pthread_rwlock_wrlock(&g_slab_lock);
    slab *s = slab_at((uintptr_t)p);
    uint32_t i = s ? live_slot_based_at(s, (uintptr_t)p) : NO_SLOT;
    if (i == NO_SLOT || n > s->slots[i].charged) {
        pthread_rwlock_unlock(&g_slab_lock);
        return ARSIM_ERR_INVALID_VALUE;
    }
    /* The slot's pages are shared with its neighbours: none to open or close. */
    s->slots[i].size = (uint32_t)n;
    *out = p;
    atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_slab_lock);
    return ARSIM_OK;
}

/* The distance from addr to slot i's bytes, as eng_mem_nearest measures it. */
static uintptr_t slot_dist(const slab *s, uint32_t i, uintptr_t addr)
{
    uintptr_t lo = (uintptr_t)slot_base(s, i), hi = lo + s->slots[i].size;
    return addr < lo ? lo - addr : addr < hi ? 0 : addr - hi;
}

/* The slab whose guard region (after its slots) holds addr, or NULL. */
static slab *in_guard(uintptr_t addr)
{
    ptrdiff_t i = slab_floor(addr);
    if (i < 0)
        return NULL;
    slab *s = g_slabs[i];
    return addr - (uintptr_t)s->map.map < s->map.map_len ? s : NULL;
}

/* The nearest live slot to addr of the NEAR_SCAN slots each side of slot
 * `at`, or NO_SLOT. */
static uint32_t scan_near(const slab *s, uint32_t at, uintptr_t addr, uintptr_t *dist)
{
    uint32_t best = NO_SLOT;
    uint32_t first = at > NEAR_SCAN ? at - NEAR_SCAN : 0;
    uint32_t last = at + NEAR_SCAN < s->nslots ? at + NEAR_SCAN : s->nslots - 1;
    for (uint32_t i = first; i <= last; i++) {
        uintptr_t d = s->slots[i].serial ? slot_dist(s, i, addr) : UINTPTR_MAX;
        if (d < *dist) {
            best = i;
            *dist = d;
        }
    }
    return best;
}

/* The slot addr falls in (its bytes or its red zone) if it is live: an
 * overrun of that slot is likelier than an underrun of the next one.  Else
 * the nearest live slot near it. */
int eng_slab_nearest(uintptr_t addr, arsim_alloc *out, uintptr_t *dist)
{
    pthread_rwlock_rdlock(&g_slab_lock);
    slab *s = slab_at(addr);
    uint32_t best = NO_SLOT;
    *dist = UINTPTR_MAX;
    if (s) {
        uint32_t at = (uint32_t)((addr - (uintptr_t)s->lo) / s->stride);
        if (s->slots[at].serial) {
            best = at;
            *dist = slot_dist(s, at, addr);
        } else {
            best = scan_near(s, at, addr, dist);
        }
    } else if ((s = in_guard(addr))) {
        best = scan_near(s, s->nslots - 1, addr, dist); /* ran past the last slots */
    }
    if (best != NO_SLOT)
        describe(s, best, out);
    pthread_rwlock_unlock(&g_slab_lock);
    return best != NO_SLOT;
}

int eng_slab_overlaps(uintptr_t lo, uintptr_t hi)
{
    pthread_rwlock_rdlock(&g_slab_lock);
    ptrdiff_t i = slab_floor(hi - 1);
    int hit = i >= 0 &&
              (uintptr_t)g_slabs[i]->lo + (uintptr_t)g_slabs[i]->nslots * g_slabs[i]->stride > lo;
    pthread_rwlock_unlock(&g_slab_lock);
    return hit;
}

/* Frees slab s's live slots with this owner, charging their devices back;
 * returns how many. */
static size_t free_owned(slab *s, uint64_t owner, slab **gone)
{
    size_t n = 0;
    for (uint32_t i = 0; i < s->bump && !*gone; i++) {
        slot *t = &s->slots[i];
        if (!t->serial || t->owner != owner)
            continue;
        if (t->device >= 0) /* counted against a device */
            atomic_fetch_sub(&eng_dev[t->device].used, t->charged);
        *gone = slot_give_back(s, i);
        n++;
    }
    return n;
}

size_t eng_slab_free_owner(uint64_t owner)
{
    pthread_rwlock_wrlock(&g_slab_lock);
    size_t n = 0;
    slab *gone_list = NULL;
    for (size_t k = 0; k < g_nslabs;) {
        slab *gone = NULL;
        n += free_owned(g_slabs[k], owner, &gone);
        if (gone) { /* unlinked from g_slabs: the next one moved into place k */
            gone->next = gone_list;
            gone_list = gone;
        } else {
            k++;
        }
    }
    if (n)
        atomic_fetch_add_explicit(&eng_mem_epoch, 1, memory_order_release);
    pthread_rwlock_unlock(&g_slab_lock);
    while (gone_list) {
        slab *next = gone_list->next;
        slab_drop(gone_list);
        gone_list = next;
    }
    return n;
}
