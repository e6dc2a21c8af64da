#include "lz_registry.h"

#include "../../sim/engine.h"

#include <pthread.h>
#include <stdlib.h>

/* Open-addressing hash table of id -> object under one mutex.  Handle traffic
 * is low compared with the work the handles describe, so one lock is enough. */
typedef struct {
    uint64_t id; /* 0 = empty, 1 = tombstone */
    lz_obj *obj;
} slot_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *g_slots;
static size_t g_cap;  /* power of two */
static size_t g_used; /* live + tombstones */
static uint64_t g_next_serial = 1;
static uint64_t g_live[LZ_T_COUNT];

#define TOMBSTONE 1u

static size_t hash_id(uint64_t id) {
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;
    return (size_t)id;
}

/* Rehashes into a table sized for the live entries (load <= 1/4), dropping
 * tombstones: with create/destroy churn the table stays as small as the live
 * set instead of growing with every handle ever made. */
static int grow(void) {
    size_t live = 0;
    for (int t = 0; t < LZ_T_COUNT; t++) live += g_live[t];
    size_t ncap = 256;
    while (ncap < (live + 1) * 4) ncap *= 2;
    slot_t *ns = calloc(ncap, sizeof(slot_t));
    if (!ns) return -1;
    size_t nused = 0;
    for (size_t i = 0; i < g_cap; i++) {
        if (g_slots[i].id > TOMBSTONE) {
            size_t j = hash_id(g_slots[i].id) & (ncap - 1);
            while (ns[j].id) j = (j + 1) & (ncap - 1);
            ns[j] = g_slots[i];
            nused++;
        }
    }
    free(g_slots);
    g_slots = ns;
    g_cap = ncap;
    g_used = nused;
    return 0;
}

static slot_t *find(uint64_t id) {
    if (!g_cap || id <= TOMBSTONE) return NULL;
    size_t j = hash_id(id) & (g_cap - 1);
    while (g_slots[j].id) {
        if (g_slots[j].id == id) return &g_slots[j];
        j = (j + 1) & (g_cap - 1);
    }
    return NULL;
}

uint64_t lz_register(lz_obj *obj) {
    pthread_mutex_lock(&g_lock);
    if ((g_used + 1) * 2 > g_cap && grow() != 0) {
        pthread_mutex_unlock(&g_lock);
        return 0;
    }
    /* The low 4 bits carry the type and the serial never repeats, so ids are
     * distinct from each other, from NULL, and from small integers. */
    uint64_t id = (g_next_serial++ << 8) | ((uint64_t)obj->type << 4) | 0x8;
    size_t j = hash_id(id) & (g_cap - 1);
    while (g_slots[j].id > TOMBSTONE) j = (j + 1) & (g_cap - 1);
    if (g_slots[j].id == 0) g_used++;
    g_slots[j].id = id;
    g_slots[j].obj = obj;
    obj->id = id;
    g_live[obj->type]++;
    pthread_mutex_unlock(&g_lock);
    return id;
}

lz_obj *lz_lookup(const void *handle, lz_type type) {
    uint64_t id = (uint64_t)(uintptr_t)handle;
    lz_obj *obj = NULL;
    if (arsim_forked()) return NULL; /* g_lock may be held by a thread fork() left behind */
    pthread_mutex_lock(&g_lock);
    slot_t *s = find(id);
    if (s && s->obj->type == type) {
        obj = s->obj;
        atomic_fetch_add(&obj->refs, 1);
    }
    pthread_mutex_unlock(&g_lock);
    return obj;
}

int lz_unregister(lz_obj *obj) {
    pthread_mutex_lock(&g_lock);
    slot_t *s = find(obj->id);
    int found = s && s->obj == obj;
    if (found) {
        s->id = TOMBSTONE;
        s->obj = NULL;
        g_live[obj->type]--;
    }
    pthread_mutex_unlock(&g_lock);
    if (found) lz_unref(obj);
    return found;
}

void lz_ref(lz_obj *obj) { atomic_fetch_add(&obj->refs, 1); }

void lz_unref(lz_obj *obj) {
    if (obj && atomic_fetch_sub(&obj->refs, 1) == 1) obj->finalize(obj);
}

uint64_t lz_live_count(lz_type type) {
    pthread_mutex_lock(&g_lock);
    uint64_t n = type < LZ_T_COUNT ? g_live[type] : 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void lz_foreach(lz_type type, void (*fn)(lz_obj *obj, void *user), void *user) {
    pthread_mutex_lock(&g_lock);
    size_t n = 0;
    lz_obj **objs = g_live[type] ? malloc(g_live[type] * sizeof *objs) : NULL;
    for (size_t i = 0; objs && i < g_cap; i++) {
        if (g_slots[i].id > TOMBSTONE && g_slots[i].obj->type == type) {
            objs[n++] = g_slots[i].obj;
            atomic_fetch_add(&g_slots[i].obj->refs, 1);
        }
    }
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; i < n; i++) {
        fn(objs[i], user);
        lz_unref(objs[i]);
    }
    free(objs);
}
