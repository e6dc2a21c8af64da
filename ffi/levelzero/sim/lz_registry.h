/* Handle registry of the software Level Zero driver.
 *
 * Every handle the driver returns is an id from this registry, never a
 * pointer: ids are never reused, so a destroyed or foreign handle is always
 * recognised and rejected instead of being dereferenced.  Objects are
 * reference counted: a lookup takes a reference, so an object stays alive
 * while an engine thread or another API call still uses it, even if the
 * application destroys its handle meanwhile. */
#ifndef ARZE_LZ_REGISTRY_H
#define ARZE_LZ_REGISTRY_H

#include <stdatomic.h>
#include <stdint.h>

typedef enum {
    LZ_T_DRIVER = 1,
    LZ_T_DEVICE,
    LZ_T_CONTEXT,
    LZ_T_QUEUE,
    LZ_T_LIST,
    LZ_T_FENCE,
    LZ_T_POOL,
    LZ_T_EVENT,
    LZ_T_MODULE,
    LZ_T_LOG,
    LZ_T_KERNEL,
    LZ_T_COUNT
} lz_type;

typedef struct lz_obj lz_obj;
struct lz_obj {
    lz_type type;
    atomic_int refs;
    uint64_t id; /* the handle value; 0 once unregistered */
    void (*finalize)(lz_obj *self); /* frees the object's own resources, then the object */
};

/* Registers obj (refs must be 1: the registry's reference) and returns its id. */
uint64_t lz_register(lz_obj *obj);
/* Looks an id up; returns it with a new reference, or NULL if unknown/wrong type. */
lz_obj *lz_lookup(const void *handle, lz_type type);
/* Removes obj's id so that it can no longer be looked up, and drops the
 * registry's reference.  Returns 0 if it was already gone. */
int lz_unregister(lz_obj *obj);
void lz_ref(lz_obj *obj);
void lz_unref(lz_obj *obj);
/* Calls fn on every live object of one type (outside the registry lock,
 * each with a reference held for the call). */
void lz_foreach(lz_type type, void (*fn)(lz_obj *obj, void *user), void *user);
/* Number of live handles of one type (for leak checks in tests). */
uint64_t lz_live_count(lz_type type);

#define LZ_HANDLE(obj) ((void *)(uintptr_t)(obj)->base.id)

#endif
