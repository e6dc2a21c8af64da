/* The destructor of the "dltensor" capsules that aruntime exports (DLPack).
 *
 * Python calls a capsule's destructor whenever the capsule is collected, and
 * a consumer that refuses a tensor (numpy, for device memory) drops it while
 * its own exception is set.  Python code must not run then, so the
 * destructor is native: it sets the pending exception aside, calls the
 * tensor's deleter (which releases what aruntime keeps alive for it), and
 * puts the exception back, as the DLPack documentation's producer does.
 *
 * The few CPython functions it needs are in the stable ABI; they are declared
 * here so that building needs no Python headers, and they resolve against the
 * running interpreter when the library is loaded into it.
 */
#include <stddef.h>
#include <stdint.h>

typedef struct _object PyObject;

extern int PyCapsule_IsValid(PyObject *capsule, const char *name);
extern void *PyCapsule_GetPointer(PyObject *capsule, const char *name);
extern void PyErr_Fetch(PyObject **type, PyObject **value, PyObject **traceback);
extern void PyErr_Restore(PyObject *type, PyObject *value, PyObject *traceback);

/* dlpack.h's unversioned DLManagedTensor, as far as the deleter. */
typedef struct {
    void *data;
    int32_t device_type;
    int32_t device_id;
    int32_t ndim;
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} ar_dl_tensor;

typedef struct ar_dl_managed_tensor {
    ar_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct ar_dl_managed_tensor *self);
} ar_dl_managed_tensor;

/* ctypes builds the same structure in aruntime/_dlpack.py. */
_Static_assert(offsetof(ar_dl_managed_tensor, deleter) == 56, "DLManagedTensor layout");

__attribute__((visibility("default"))) void ar_dlpack_capsule_destructor(PyObject *capsule) {
    /* A consumer that took the tensor renamed the capsule "used_dltensor" and
     * calls the deleter itself when it is done. */
    if (!PyCapsule_IsValid(capsule, "dltensor"))
        return;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    ar_dl_managed_tensor *managed = PyCapsule_GetPointer(capsule, "dltensor");
    if (managed != NULL && managed->deleter != NULL)
        managed->deleter(managed);
    PyErr_Restore(type, value, traceback);
}
