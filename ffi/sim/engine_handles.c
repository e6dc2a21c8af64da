/* The handle registry: 64-bit handles (generation, slot, kind) that front
 * ends hand out for their objects, so a destroyed handle is refused, never
 * dereferenced.  Lookups take no lock. */
#include "engine_internal.h"

#include <stdlib.h>

#define H_CHUNK_BITS 12
#define H_CHUNK (1u << H_CHUNK_BITS)
#define H_MAX_CHUNKS 4096u /* 16M slots: the 24-bit index in a handle */

typedef struct hslot {
    _Atomic uint64_t tag; /* (generation << 8) | kind; kind 0 = free */
    _Atomic(void *) obj;
    uint32_t next_free;
} hslot;

static _Atomic(hslot *) g_hchunks[H_MAX_CHUNKS];
static pthread_mutex_t g_hmu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_hfree = UINT32_MAX; /* free list head */
static uint32_t g_hused;              /* slots ever handed out */

static hslot *hslot_at(uint32_t idx)
{
    hslot *c = atomic_load_explicit(&g_hchunks[idx >> H_CHUNK_BITS], memory_order_acquire);
    return c ? &c[idx & (H_CHUNK - 1)] : NULL;
}

uint64_t arsim_handle_new(unsigned kind, void *obj)
{
    if (kind == 0 || kind > 255)
        return 0;
    pthread_mutex_lock(&g_hmu);
    uint32_t idx;
    hslot *s;
    if (g_hfree != UINT32_MAX) {
        idx = g_hfree;
        s = hslot_at(idx);
        g_hfree = s->next_free;
    } else {
        if (g_hused >= H_CHUNK * H_MAX_CHUNKS) {
            pthread_mutex_unlock(&g_hmu);
            return 0;
        }
        idx = g_hused;
        if (!atomic_load(&g_hchunks[idx >> H_CHUNK_BITS])) {
            hslot *c = calloc(H_CHUNK, sizeof(hslot)); /* chunks are never freed */
            if (!c) {
                pthread_mutex_unlock(&g_hmu);
                return 0;
            }
            atomic_store_explicit(&g_hchunks[idx >> H_CHUNK_BITS], c, memory_order_release);
        }
        g_hused++;
        s = hslot_at(idx);
    }
    uint64_t gen = (atomic_load(&s->tag) >> 8) + 1;
    if ((gen & 0xffffffu) == 0)
        gen = 1;
    gen &= 0xffffffu;
    atomic_store(&s->obj, obj);
    atomic_store_explicit(&s->tag, (gen << 8) | kind, memory_order_release);
    pthread_mutex_unlock(&g_hmu);
    return (gen << 32) | ((uint64_t)(idx + 1) << 8) | kind;
}

static hslot *handle_slot(uint64_t h, unsigned kind, uint64_t *tag_out)
{
    if ((h & 0xff) != kind || kind == 0)
        return NULL;
    uint64_t idx1 = (h >> 8) & 0xffffffu;
    uint64_t gen = h >> 32;
    if (idx1 == 0 || gen == 0 || gen > 0xffffffu)
        return NULL;
    hslot *s = hslot_at((uint32_t)(idx1 - 1));
    if (!s)
        return NULL;
    *tag_out = (gen << 8) | kind;
    return s;
}

void *arsim_handle_get(uint64_t h, unsigned kind)
{
    uint64_t tag;
    hslot *s = handle_slot(h, kind, &tag);
    if (!s || atomic_load_explicit(&s->tag, memory_order_acquire) != tag)
        return NULL;
    return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void *arsim_handle_remove(uint64_t h, unsigned kind)
{
    uint64_t tag;
    hslot *s = handle_slot(h, kind, &tag);
    if (!s)
        return NULL;
    pthread_mutex_lock(&g_hmu);
    void *obj = NULL;
    if (atomic_load(&s->tag) == tag) {
        obj = atomic_load(&s->obj);
        atomic_store(&s->tag, tag & ~(uint64_t)0xff); /* keep the generation */
        atomic_store(&s->obj, NULL);
        s->next_free = g_hfree;
        g_hfree = (uint32_t)(((h >> 8) & 0xffffffu) - 1);
    }
    pthread_mutex_unlock(&g_hmu);
    return obj;
}
