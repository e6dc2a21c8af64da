/* RangeCheck: ``Ledger.check_range``'s common case, as one C call.
 *
 * Every copy, memset and launch checks each device operand: a DevicePtr of
 * this backend, still live in the ledger, whose view holds the bytes the
 * op touches.  In Python that is a frame of its own per operand, more than
 * the check.  A RangeCheck is one ledger's: called with a pointer and a
 * byte count, it returns the allocation's entry when all of that holds,
 * and None otherwise, so that ``check_range`` decides and words the error.
 * It reads the pointer's slots in place (their offsets found once) and the
 * ledger's own dict of entries, which the ledger never replaces.
 */
#include "ranges.h"
#include "slots.h"

#include <stddef.h>
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *owner;   /* the backend (compared by identity, never called) */
    PyObject *entries; /* alloc_id -> Entry: the ledger's own dict */
    PyTypeObject *pointer;
    Py_ssize_t backend_at, alloc_id_at, nbytes_at; /* the pointer's slots */
} RangeCheck;

static PyObject *slot_value(PyObject *obj, Py_ssize_t offset)
{
    return *(PyObject **)((char *)obj + offset);
}

/* ``a <= b`` for two exact ints, as PyObject_RichCompareBool; machine words where
 * both fit one (the rich comparison's dispatch costs more than the compare). */
static int at_most(PyObject *a, PyObject *b)
{
    Py_ssize_t x = PyLong_AsSsize_t(a);
    Py_ssize_t y = x == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(b);
    if (!PyErr_Occurred())
        return x <= y;
    PyErr_Clear();
    return PyObject_RichCompareBool(a, b, Py_LE);
}

/* check(ptr, nbytes): the entry, or None. */
static PyObject *range_check(PyObject *callable, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    RangeCheck *self = (RangeCheck *)callable;
    if (PyVectorcall_NARGS(nargsf) != 2 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "RangeCheck takes (ptr, nbytes)");
        return NULL;
    }
    PyObject *ptr = args[0], *nbytes = args[1];
    if (Py_TYPE(ptr) != self->pointer || slot_value(ptr, self->backend_at) != self->owner ||
        !PyLong_CheckExact(nbytes))
        Py_RETURN_NONE;
    PyObject *alloc_id = slot_value(ptr, self->alloc_id_at);
    PyObject *size = slot_value(ptr, self->nbytes_at);
    if (alloc_id == NULL || size == NULL || !PyLong_CheckExact(size))
        Py_RETURN_NONE;
    int fits = at_most(nbytes, size);
    if (fits <= 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *entry = PyDict_GetItemWithError(self->entries, alloc_id);
    if (entry == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return Py_NewRef(entry);
}

static PyObject *range_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"owner", "entries", "pointer", NULL};
    PyObject *owner, *entries, *pointer;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OO!O!:RangeCheck", keywords, &owner,
                                     &PyDict_Type, &entries, &PyType_Type, &pointer))
        return NULL;
    PyTypeObject *ptr_type = (PyTypeObject *)pointer;
    Py_ssize_t backend_at = slot_offset(ptr_type, "_backend", "RangeCheck");
    Py_ssize_t alloc_id_at = backend_at < 0 ? -1 : slot_offset(ptr_type, "_alloc_id", "RangeCheck");
    Py_ssize_t nbytes_at = alloc_id_at < 0 ? -1 : slot_offset(ptr_type, "_nbytes", "RangeCheck");
    if (nbytes_at < 0)
        return NULL;
    RangeCheck *self = (RangeCheck *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = range_check;
    self->owner = Py_NewRef(owner);
    self->entries = Py_NewRef(entries);
    self->pointer = (PyTypeObject *)Py_NewRef(pointer);
    self->backend_at = backend_at;
    self->alloc_id_at = alloc_id_at;
    self->nbytes_at = nbytes_at;
    return (PyObject *)self;
}

static int range_traverse(RangeCheck *self, visitproc visit, void *arg)
{
    Py_VISIT(self->owner);
    Py_VISIT(self->entries);
    Py_VISIT(self->pointer);
    return 0;
}

static int range_clear(RangeCheck *self)
{
    Py_CLEAR(self->owner);
    Py_CLEAR(self->entries);
    Py_CLEAR(self->pointer);
    return 0;
}

static void range_dealloc(RangeCheck *self)
{
    PyObject_GC_UnTrack(self);
    range_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject RangeCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "aruntime._enqueue_compiled.RangeCheck",
    .tp_doc = "A ledger's range check, its common case (see ffi/core/ranges.c).",
    .tp_basicsize = sizeof(RangeCheck),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(RangeCheck, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = range_new,
    .tp_traverse = (traverseproc)range_traverse,
    .tp_clear = (inquiry)range_clear,
    .tp_dealloc = (destructor)range_dealloc,
};
